"""LMNN's energy-based classification rule (Weinberger & Saul, 2009)."""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin

from .._validation import Interval
from ..linalg import pairwise_sq_dists
from ..problems import target_neighbors
from ._knn import _LEARNER_CONSTRAINTS, _MetricMixin

__all__ = ["LMNNEnergyClassifier"]

#: largest number of (query, training sample, neighbour) triples evaluated at once
_CHUNK_ELEMENTS = 1 << 22


class LMNNEnergyClassifier(_MetricMixin, ClassifierMixin, BaseEstimator):
    """Energy-based classification with a learned LMNN metric.

    A query :math:`x_t` gets the label :math:`y_t` of lowest *energy*, the LMNN objective it
    would add to the training set if it had that label (seed, LMNN section):

    .. math::

        E(y_t) = (1-\\mu) \\sum_{j \\rightsquigarrow t} \\|x_t - x_j\\|_M^2
        + \\mu \\sum_{j \\rightsquigarrow t,\\, l} (1 - y_{tl}) [m + \\|x_t - x_j\\|_M^2 - \\|x_t - x_l\\|_M^2]_+
        + \\mu \\sum_{i,\\, j \\rightsquigarrow i} (1 - y_{it}) [m + \\|x_i - x_j\\|_M^2 - \\|x_i - x_t\\|_M^2]_+

    where :math:`j \\rightsquigarrow t` are the ``n_neighbors`` nearest training samples of class
    :math:`y_t` (under the learned metric), :math:`j \\rightsquigarrow i` the training target
    neighbours (nearest same-class samples under the Euclidean distance, as in LMNN's training),
    ``mu`` the push weight and ``m`` the ``margin``: pull to the candidate class, impostors
    inside the query's margin, and margins of other classes the query would invade.

    Parameters
    ----------
    n_neighbors : int, default=3
    mu : float, default=0.5
    margin : float, default=1.0
    metric_learner : None, str or estimator, default="lmnn"
        The metric: ``"lmnn"`` is ``jaxdml.fit(X, y, loss="lmnn", n_neighbors=n_neighbors,
        mu=mu, margin=margin, **learner_params)``; any other value as in :class:`jaxdml.KNN`.
    learner_params : dict, default=None
        E.g. ``{"max_iter": 50}``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    metric_learner_ : the fitted metric

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = jaxdml.LMNNEnergyClassifier(learner_params={"max_iter": 30}).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True

    References
    ----------
    K. Q. Weinberger, L. K. Saul. Distance Metric Learning for Large Margin Nearest Neighbor
    Classification. JMLR 10, 2009 (section 3.3, energy-based classification).
    """

    _parameter_constraints = {
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "mu": [Interval(numbers.Real, 0, 1, closed="both")],
        "margin": [Interval(numbers.Real, 0, None, closed="neither")],
        **_LEARNER_CONSTRAINTS,
    }

    def __init__(self, n_neighbors=3, *, mu=0.5, margin=1.0, metric_learner="lmnn", learner_params=None):
        self.n_neighbors = n_neighbors
        self.mu = mu
        self.margin = margin
        self.metric_learner = metric_learner
        self.learner_params = learner_params

    def _learner_defaults(self, name):
        if name in ("lmnn", "lmnn_metric"):
            return dict(n_neighbors=self.n_neighbors, mu=float(self.mu), margin=float(self.margin))
        return {}

    def fit(self, X, y):
        """Learn the metric and precompute the training samples' target-neighbour distances."""
        X, y = self._validate_fit(X, y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        self._fit_metric(X, y)
        Z = self._embed(X)
        k = self.n_neighbors
        targets, tmask = target_neighbors(X, codes, k, warn=False)
        self.train_embedding_ = Z
        self.train_codes_ = codes
        self.train_target_sq_dists_ = np.sum((Z[:, None, :] - Z[targets]) ** 2, axis=2)
        self.train_target_mask_ = tmask.astype(np.float64)
        return self

    def embed(self, X):
        """Embed ``X`` with the learned metric."""
        return self._embed(self._validate_predict(X))

    def energy(self, X):
        """Energies ``E(c)`` of every query for every class, shape (n_queries, n_classes)."""
        Zq = self.embed(X)
        Z, codes = self.train_embedding_, self.train_codes_
        n, k = Z.shape[0], self.n_neighbors
        mu, m = float(self.mu), float(self.margin)
        n_classes = len(self.classes_)
        members = [np.flatnonzero(codes == c) for c in range(n_classes)]
        chunk = max(1, _CHUNK_ELEMENTS // max(1, n * k))
        out = np.empty((Zq.shape[0], n_classes))
        for s in range(0, Zq.shape[0], chunk):
            Q = Zq[s : s + chunk]
            D = pairwise_sq_dists(Q, Z, xp=np)  # (q, n)
            # third term, per training sample i: sum_j [m + d_ij - d_it]_+ over i's targets
            H = np.sum(
                self.train_target_mask_[None] * np.maximum(m + self.train_target_sq_dists_[None] - D[:, :, None], 0.0),
                axis=2,
            )
            per_class = np.stack([H[:, idx].sum(1) for idx in members], axis=1)
            invaded = per_class.sum(1, keepdims=True) - per_class
            for c, idx in enumerate(members):
                kc = min(k, idx.size)
                dtj = np.sort(np.partition(D[:, idx], kc - 1, axis=1)[:, :kc], axis=1)
                other = D[:, codes != c]
                pull = dtj.sum(1)
                push = np.maximum(m + dtj[:, :, None] - other[:, None, :], 0.0).sum((1, 2))
                out[s : s + chunk, c] = (1 - mu) * pull + mu * (push + invaded[:, c])
        return out

    def decision_function(self, X):
        """Negative energies (higher is more likely); for two classes ``E(c_0) - E(c_1)``."""
        E = self.energy(X)
        return E[:, 0] - E[:, 1] if E.shape[1] == 2 else -E

    def predict(self, X):
        """The label of lowest energy."""
        E = self.energy(X)
        return self.classes_[np.argmin(E, axis=1)]

    def predict_proba(self, X):
        """``softmax(-energy)``: a monotone score consistent with ``predict`` (not calibrated)."""
        return softmax(-self.energy(X), axis=1)
