"""Prototype selection for the 1-NN rule under a learned distance: Hart's condensed nearest neighbours
(CNN) and Gates' reduced nearest neighbours (RNN).

Both keep a subset of the training set (the *prototypes*) that the 1-NN rule can use instead of all of
it; distances are Euclidean in the embedding of an optional metric learner (as in :class:`jaxdml.KNN`),
so a learned metric changes which samples are kept. The selection follows pyDML's order (samples in
the order given, the first one kept to start), so it is deterministic.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.validation import check_is_fitted

from ..linalg import pairwise_sq_dists
from ._knn import _LEARNER_CONSTRAINTS, _MetricMixin

__all__ = ["CondensedNearestNeighbors", "ReducedNearestNeighbors", "condense", "reduce_prototypes"]


def _sq_to(Z, z):
    diff = Z - z
    return np.einsum("ij,ij->i", diff, diff)


def condense(Z, codes) -> np.ndarray:
    """Hart's condensed nearest neighbours: the indices (ascending) of a subset ``S`` of the rows of
    ``Z`` that classifies every row correctly by 1-NN.

    ``S`` starts as ``{0}``; passes over rows ``1 .. n-1`` add each row the 1-NN rule on the current
    ``S`` misclassifies, until a pass adds none. The nearest member of ``S`` of every row is kept up to
    date as rows are added (one O(n d) update per addition), so a pass costs O(n) plus its additions.

    Parameters
    ----------
    Z : array of shape (n_samples, n_features)
        The (embedded) samples.
    codes : int array of shape (n_samples,)
        Their labels.

    Returns
    -------
    int ndarray
    """
    Z = np.asarray(Z, dtype=np.float64)
    codes = np.asarray(codes)
    n = len(Z)
    kept = np.zeros(n, dtype=bool)
    kept[0] = True
    near_d, near_c = _sq_to(Z, Z[0]), np.full(n, codes[0])
    added = True
    while added:
        added = False
        for i in range(1, n):
            if kept[i] or near_c[i] == codes[i]:
                continue
            kept[i] = added = True
            d = _sq_to(Z, Z[i])
            closer = d < near_d  # ties keep the member added first
            near_d[closer], near_c[closer] = d[closer], codes[i]
    return np.flatnonzero(kept)


def reduce_prototypes(Z, codes, store) -> np.ndarray:
    """Gates' reduced nearest neighbours: drop members of a consistent ``store`` (ascending indices)
    one at a time, in order, whenever the 1-NN rule on the remaining ones still classifies every row
    of ``Z`` correctly. A store that is not consistent is returned unchanged (no removal can keep
    every row correct).

    Only the rows whose nearest member is the candidate change their prediction; they are re-searched
    among the remaining members, so memory is O(n + affected x |store|).

    Returns
    -------
    int ndarray
        The kept indices (ascending).
    """
    Z = np.asarray(Z, dtype=np.float64)
    codes = np.asarray(codes)
    S = np.asarray(store, dtype=np.int64)
    nearest = np.empty(len(Z), dtype=np.int64)  # position in S of each row's nearest member
    for start in range(0, len(Z), 1024):
        block = Z[start:start + 1024]
        D = pairwise_sq_dists(block, Z[S], xp=np)
        nearest[start:start + 1024] = np.argmin(D, axis=1)
    if not np.all(codes[S[nearest]] == codes):
        return S
    active = np.ones(len(S), dtype=bool)
    for pos in range(len(S)):
        active[pos] = False
        rows = np.flatnonzero(nearest == pos)
        if len(rows) == 0:
            continue
        cand = np.flatnonzero(active)
        if len(cand) == 0:
            active[pos] = True
            continue
        A, B = Z[rows], Z[S[cand]]
        D = pairwise_sq_dists(A, B, xp=np)
        new = cand[np.argmin(D, axis=1)]
        if np.all(codes[S[new]] == codes[rows]):
            nearest[rows] = new
        else:
            active[pos] = True
    return S[active]


class CondensedNearestNeighbors(_MetricMixin, ClassifierMixin, BaseEstimator):
    """Condensed nearest neighbours (Hart, 1968) under a learned distance: a 1-NN classifier on a
    consistent subset of the training set.

    ``fit`` learns the metric (``metric_learner``, as in :class:`jaxdml.KNN`) on all the training
    data, embeds it and selects the prototypes with :func:`condense` in the embedding;
    ``predict`` is the 1-NN rule on the prototypes. ``fit_resample`` returns the selected samples
    (imbalanced-learn's undersampling API).

    Parameters
    ----------
    metric_learner : None, str or estimator, default=None
        See :class:`jaxdml.KNN` (None: the Euclidean distance).
    learner_params : dict, default=None

    Attributes
    ----------
    sample_indices_ : ndarray
        Indices of the prototypes in the training set (ascending).
    prototypes_ : ndarray of shape (n_prototypes, n_features)
        The prototypes, in the original space.
    prototype_labels_ : ndarray of shape (n_prototypes,)
    classes_ : ndarray
    metric_learner_ : fitted learner or None
    knn_ : the 1-NN classifier on the embedded prototypes

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> cnn = jaxdml.CondensedNearestNeighbors().fit(X, y)
    >>> len(cnn.sample_indices_) < len(X), cnn.score(X, y)
    (True, 1.0)

    References
    ----------
    P. Hart. The condensed nearest neighbor rule. IEEE Transactions on Information Theory 14(3), 1968.
    """

    _parameter_constraints = dict(_LEARNER_CONSTRAINTS)

    def __init__(self, metric_learner=None, *, learner_params=None):
        self.metric_learner = metric_learner
        self.learner_params = learner_params

    def _select(self, Z, codes):
        return condense(Z, codes)

    def fit(self, X, y):
        """Learn the metric, then select the prototypes in its embedding."""
        X, y = self._validate_fit(X, y)
        self._fit_metric(X, y)
        Z = self._embed(X)
        self.classes_, codes = np.unique(y, return_inverse=True)
        idx = self._select(Z, codes)
        self.sample_indices_ = idx
        self.prototypes_, self.prototype_labels_ = X[idx], y[idx]
        self.knn_ = KNeighborsClassifier(1).fit(Z[idx], y[idx])
        return self

    def fit_resample(self, X, y):
        """Fit, and return the prototypes and their labels ``(X[sample_indices_], y[sample_indices_])``."""
        self.fit(X, y)
        return self.prototypes_, self.prototype_labels_

    def embed(self, X):
        """Embed ``X`` with the learned metric (identity without one)."""
        return self._embed(self._validate_predict(X))

    def predict(self, X):
        """The label of the nearest prototype under the learned metric."""
        check_is_fitted(self, "knn_")
        return self.knn_.predict(self.embed(X))


class ReducedNearestNeighbors(CondensedNearestNeighbors):
    """Reduced nearest neighbours (Gates, 1972) under a learned distance: the condensed set of
    :class:`CondensedNearestNeighbors`, then every prototype whose removal keeps the whole training
    set correctly classified by 1-NN removed (:func:`reduce_prototypes`). Same parameters,
    attributes and methods as :class:`CondensedNearestNeighbors`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> rnn = jaxdml.ReducedNearestNeighbors().fit(X, y)
    >>> cnn = jaxdml.CondensedNearestNeighbors().fit(X, y)
    >>> set(rnn.sample_indices_) <= set(cnn.sample_indices_), rnn.score(X, y)
    (True, 1.0)

    References
    ----------
    G. Gates. The reduced nearest neighbor rule. IEEE Transactions on Information Theory 18(3), 1972.
    """

    def _select(self, Z, codes):
        return reduce_prototypes(Z, codes, condense(Z, codes))
