"""IMLS: iterative metric learning with sample selection, for imbalanced data (Wang et al., IJCAI 2018)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import Interval, check_params
from ..neighbors import knn_search
from ._multidml import knn_batched

__all__ = ["IMLS"]


def _jaccard(a, b) -> float:
    union = np.union1d(a, b).size
    return np.intersect1d(a, b, assume_unique=True).size / union if union else 1.0


class IMLS(ClassifierMixin, BaseEstimator):
    r"""Iterative Metric Learning with sample Selection (IML, Wang et al. 2018), a k-NN classifier.

    On imbalanced data a metric learned on the whole training set is dominated by the majority classes.
    IMLS learns a metric, and then, for the data to classify, *selects* the training samples that matter
    - the ``n_selected`` nearest samples of **each** class to every test point, under the current metric
    (a neighbourhood balanced across classes) - and learns the metric again on that selection. It iterates
    until the selection is stable (Jaccard similarity of two successive selections at least
    ``stability``) or ``max_iter`` metrics were learned, and classifies by ``n_neighbors``-NN under the
    last metric.

    What this implementation follows, stated: the first metric is learned on the whole training set in
    ``fit``; each later metric is learned from scratch on the original features of the selected samples
    (not composed with the previous one); ``predict(X)`` pools the selections of all rows of ``X`` into
    one training subset (one metric per iteration for the batch; ``per_sample=True`` runs the iterations
    for every row separately, as the paper describes it for one testing sample - one metric fit per row and
    iteration, far slower). The selection trains the metric; the ``n_neighbors``-NN vote is over all training
    samples under the final metric. Without distance ties that is the vote on the selection (which holds
    each test row's ``n_selected >= n_neighbors`` nearest samples of every class); with ties (repeated
    feature vectors) a vote on a class-balanced selection would discard the class frequencies of the tied
    group: on KEEL's titanic it cost 13 points of balanced accuracy (``benchmarks/bench_pydml.py``).

    Parameters
    ----------
    metric_learner : str, estimator or None, default=None
        A :func:`jaxdml.fit` method name or an estimator with ``fit``/``transform`` (cloned per fit);
        None is :class:`jaxdml.LMNN` with its defaults (the paper's choice).
    learner_params : dict, default=None
        Keyword arguments of :func:`jaxdml.fit` (name) or ``set_params`` (estimator).
    n_neighbors : int, default=3
    n_selected : int, default=10
        Training samples of each class selected around every test row (all of a smaller class).
    max_iter : int, default=10
        Metrics learned at most (the one of ``fit`` included).
    stability : float in (0, 1], default=0.8
        Stop when two successive selections have at least this Jaccard similarity.
    per_sample : bool, default=False
        Iterate for every test row on its own selection (the paper's per-sample procedure).

    Attributes
    ----------
    classes_ : ndarray
    metric_learner_ : the metric learned on the whole training set.
    n_iter_ : int
        Metrics learned by ``fit`` (1). ``predict`` does not change the estimator; the iterations it runs
        are reported by :meth:`neighbourhoods`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.IMLS(learner_params=dict(max_iter=20)).fit(X, y).predict(X[:3]).shape
    (3,)

    References
    ----------
    N. Wang, X. Zhao, Y. Jiang, Y. Gao. Iterative metric learning for imbalance data classification.
    IJCAI 2018, 2805-2811.
    """

    _parameter_constraints = {
        # metric_learner: a name or an estimator, checked when it is used
        "learner_params": [dict, None],
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "n_selected": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "stability": [Interval(numbers.Real, 0, 1, closed="right")],
        "per_sample": ["boolean"],
    }

    def __init__(self, metric_learner=None, *, learner_params=None, n_neighbors=3, n_selected=10, max_iter=10,
                 stability=0.8, per_sample=False):
        self.metric_learner = metric_learner
        self.learner_params = learner_params
        self.n_neighbors = n_neighbors
        self.n_selected = n_selected
        self.max_iter = max_iter
        self.stability = stability
        self.per_sample = per_sample

    def _learn(self, X, codes):
        """A fitted metric learner (anything with ``transform``) on ``(X, codes)``."""
        learner, params = self.metric_learner, dict(self.learner_params or {})
        if learner is None:
            from ..methods.gradient._lmnn import LMNN

            learner = LMNN()
        if isinstance(learner, str):
            from .._fit import fit

            return fit(X, codes, loss=learner, **params)
        if not (hasattr(learner, "fit") and hasattr(learner, "transform")):
            raise ValueError(f"IMLS: metric_learner must be a jaxdml method name or an estimator with "
                             f"fit/transform; got {learner!r}.")
        est = clone(learner)
        if params:
            est.set_params(**params)
        return est.fit(X, codes)

    def fit(self, X, y):
        """Store the training data and learn the first metric on all of it."""
        check_params(self.get_params(deep=False), self._parameter_constraints, owner="IMLS")
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, self._codes = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(f"IMLS: y has {self.classes_.size} class; classification needs at least 2.")
        self._X = X
        self.metric_learner_ = self._learn(X, self._codes)
        self.n_iter_ = 1
        return self

    def _select(self, learner, rows):
        """Indices of the ``n_selected`` nearest training samples of each class to every row of ``rows``."""
        Z = np.asarray(learner.transform(self._X), dtype=np.float64)
        Q = np.asarray(learner.transform(rows), dtype=np.float64)
        chosen = []
        for c in range(self.classes_.size):
            idx = np.flatnonzero(self._codes == c)
            near, _ = knn_search(Q, min(self.n_selected, idx.size), Y=Z[idx])
            chosen.append(idx[near].ravel())
        return np.unique(np.concatenate(chosen))

    def _iterate(self, rows):
        """``(learner, selection, metrics learned)`` for the test rows ``rows``."""
        learner = self.metric_learner_
        sel = self._select(learner, rows)
        n_iter = 1
        while n_iter < self.max_iter:
            codes = self._codes[sel]
            if np.unique(codes).size < 2:
                break
            learner = self._learn(self._X[sel], codes)
            n_iter += 1
            new = self._select(learner, rows)
            stable = _jaccard(new, sel) >= self.stability
            sel = new
            if stable:
                break
        return learner, sel, n_iter

    def _vote(self, learner, rows):
        Z = np.asarray(learner.transform(self._X), dtype=np.float64)
        Q = np.asarray(learner.transform(rows), dtype=np.float64)
        # exact ties (repeated feature vectors tie exactly), equal distances in training order
        return knn_batched(Q[None], Z[None], self._codes, self.classes_.size, min(self.n_neighbors, len(self._X)),
                           exact_ties=True)[0]

    def _groups(self, X):
        check_is_fitted(self, "metric_learner_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return [X[i:i + 1] for i in range(len(X))] if self.per_sample else [X]

    def neighbourhoods(self, X):
        """The iterations for ``X``: one dict per group of rows (all rows, or each row with ``per_sample``)
        with the final ``metric_learner``, the ``selected`` training indices and ``n_iter`` (metrics
        learned, the one of ``fit`` included)."""
        out = []
        for rows in self._groups(X):
            learner, sel, n_iter = self._iterate(rows)
            out.append(dict(metric_learner=learner, selected=sel, n_iter=n_iter))
        return out

    def predict_proba(self, X):
        """Class probabilities: the k-NN vote of all training samples under the final metric."""
        out = []
        for rows in self._groups(X):
            learner, _, _ = self._iterate(rows)
            out.append(self._vote(learner, rows))
        return np.concatenate(out) if out else np.zeros((0, self.classes_.size))

    def predict(self, X):
        """Class labels (see :meth:`predict_proba`)."""
        check_is_fitted(self, "metric_learner_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
