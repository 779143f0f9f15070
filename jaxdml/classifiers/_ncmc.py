"""Nearest class with multiple centroids (NCMC) classifier; one centroid is nearest class mean."""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state

from .._validation import Interval
from ..linalg import pairwise_sq_dists
from ._knn import _LEARNER_CONSTRAINTS, _MetricMixin

__all__ = ["NCMCClassifier"]


class NCMCClassifier(_MetricMixin, ClassifierMixin, BaseEstimator):
    """Nearest class with multiple centroids.

    ``fit`` runs k-means (``centroids_num`` clusters) inside every class and keeps the cluster
    centres, each labelled with its class; ``predict`` returns the class of the nearest centroid.
    With ``centroids_num=1`` the centroids are the class means: the nearest class mean (NCM)
    classifier, identical to ``sklearn.neighbors.NearestCentroid``. Distances are Euclidean in
    the embedding of an optional learned metric (``metric_learner``, as in :class:`jaxdml.KNN`);
    k-means runs in that embedding too.

    When ``metric_learner`` is NCMC learning (:class:`jaxdml.NCMC` or ``"ncmc"``) with the same
    ``centroids_num``, the centroids it was trained with (embedded by the learned map) are used
    instead of a new k-means run: they are the ones the metric was optimised for.

    ``predict_proba`` is the model NCMC learning maximises:
    :math:`p(c|x) = \\sum_j \\mathrm{softmax}_{m}(-\\tfrac12 \\|x - m\\|^2)_{m_{c_j}}`.

    Parameters
    ----------
    centroids_num : int or list of int, default=2
        Centroids per class; a list gives each class its own count (in the order of the sorted
        labels, ``classes_``). A count larger than its class raises a ValueError.
    metric_learner : None, str or estimator, default=None
        See :class:`jaxdml.KNN`.
    learner_params : dict, default=None
    n_init : int, default=3
        k-means restarts.
    random_state : int, RandomState or None
        Seeds k-means.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    centroids_ : ndarray of shape (n_centroids_total, n_embedded_features)
    centroid_labels_ : ndarray of shape (n_centroids_total,)
        Index into ``classes_`` of each centroid.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.NCMCClassifier(centroids_num=2, random_state=0).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    T. Mensink, J. Verbeek, F. Perronnin, G. Csurka. Metric Learning for Large Scale Image
    Classification: Generalizing to New Classes at Near-Zero Cost. ECCV 2012.
    """

    _parameter_constraints = {
        "centroids_num": [Interval(numbers.Integral, 1, None), list, tuple],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
        **_LEARNER_CONSTRAINTS,
    }

    def __init__(self, centroids_num=2, *, metric_learner=None, learner_params=None, n_init=3,
                 random_state=None):
        self.centroids_num = centroids_num
        self.metric_learner = metric_learner
        self.learner_params = learner_params
        self.n_init = n_init
        self.random_state = random_state

    def _learner_defaults(self, name):
        if name == "ncmc" and isinstance(self.centroids_num, numbers.Integral):
            # train with the classifier's centroids, so that they can be reused
            return dict(centroids_num=self.centroids_num, random_state=self.random_state)
        return {}

    def _counts(self, y) -> list:
        """Centroids per class, in the order of the sorted labels (checked against the class sizes)."""
        from .._validation import check_centroids_num

        owner = type(self).__name__
        classes, sizes = np.unique(y, return_counts=True)
        if isinstance(self.centroids_num, numbers.Integral):
            return [check_centroids_num(y, self.centroids_num, owner=owner)] * len(classes)
        counts = list(self.centroids_num)
        if len(counts) != len(classes):
            raise ValueError(f"{owner}: centroids_num has {len(counts)} entries for {len(classes)} classes "
                             f"{classes.tolist()[:10]}; give one count per class (or an int).")
        for c, k, size in zip(classes.tolist(), counts, sizes):
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= size:
                raise ValueError(f"{owner}: centroids_num for class {c!r} must be an int between 1 and its "
                                 f"{size} samples; got {k!r}.")
        return [int(k) for k in counts]

    def fit(self, X, y):
        """Learn the metric (if any), then k-means centroids per class in its embedding."""
        from sklearn.cluster import KMeans

        X, y = self._validate_fit(X, y)
        counts = self._counts(y)
        self._fit_metric(X, y)
        Z = self._embed(X)
        self.classes_, codes = np.unique(y, return_inverse=True)
        learned = self._learned_centroids(counts[0]) if len(set(counts)) == 1 else None
        if learned is not None:  # the centroids the metric was trained with, embedded
            C, lab = learned
            self.centroids_ = self._embed(C)
            self.centroid_labels_ = np.searchsorted(self.classes_, lab)
            return self
        rng = check_random_state(self.random_state)
        cents, labels = [], []
        for c, k in enumerate(counts):
            Zc = Z[codes == c]
            if k == 1:
                centres = Zc.mean(axis=0, keepdims=True)  # as NearestCentroid computes the means
            else:
                km = KMeans(n_clusters=k, n_init=self.n_init, random_state=rng.randint(np.iinfo(np.int32).max))
                centres = km.fit(Zc).cluster_centers_
            cents.append(centres)
            labels.append(np.full(len(centres), c))
        self.centroids_ = np.concatenate(cents)
        self.centroid_labels_ = np.concatenate(labels)
        return self

    def _learned_centroids(self, k):
        """``(centroids, labels)`` of an NCMC metric learner trained with ``k`` centroids, else None."""
        ml = self.metric_learner_
        if ml is None:
            return None
        result = getattr(ml, "result_", ml)
        info = getattr(result, "info", None) or {}
        classes = getattr(result, "classes", None)
        if info.get("centroids_num") != k or "centroids" not in info or classes is None:
            return None
        lab = np.asarray(classes)[np.asarray(info["centroid_labels"])]
        if not np.all(np.isin(lab, self.classes_)):
            return None
        return np.asarray(info["centroids"], dtype=np.float64), lab

    def embed(self, X):
        """Embed ``X`` with the learned metric (identity without one)."""
        return self._embed(self._validate_predict(X))

    def predict(self, X):
        """Class of the nearest centroid."""
        Z = self.embed(X)
        # the nearest centroid from translated rows (far from the origin the expansion of scikit-learn's
        # euclidean_distances cancels)
        step = max(1, (1 << 24) // max(1, len(self.centroids_)))  # rows per block: ~16M distances
        nearest = np.concatenate([np.argmin(pairwise_sq_dists(Z[s:s + step], self.centroids_, xp=np), axis=1)
                                  for s in range(0, len(Z), step)])
        return self.classes_[self.centroid_labels_[nearest]]

    def predict_log_proba(self, X):
        """``log p(c|x)``: softmax over classes of ``-min_m |x - m|^2 / 2`` (nearest centroid of each class).

        Each class is scored by its nearest centroid, so ``argmax`` of the probabilities is the
        nearest-centroid rule of :meth:`predict` (with one centroid per class this is the usual
        nearest-class-mean softmax).
        """
        Z = self.embed(X)
        logits = -0.5 * pairwise_sq_dists(Z, self.centroids_, xp=np)
        per_class = np.stack(
            [logits[:, self.centroid_labels_ == c].max(axis=1) for c in range(len(self.classes_))], axis=1
        )
        return per_class - logsumexp(per_class, axis=1, keepdims=True)

    def predict_proba(self, X):
        """``p(c|x)`` of the multiple-centroid softmax model."""
        return np.exp(self.predict_log_proba(X))
