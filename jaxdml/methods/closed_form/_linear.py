"""The linear baselines: the Euclidean distance, PCA and LDA (records, solve steps, estimators)."""

from __future__ import annotations

import numbers

import numpy as np

from ..._runtime._device import x64_call
from ..._validation import Interval
from ...eigen import lda_components, pca_components
from ..core._base import BaseMetricLearner
from ..core._record import Method

__all__ = ["Euclidean", "PCA", "LDA", "EUCLIDEAN", "PCA_METHOD", "LDA_METHOD"]


def _euclidean(X, codes, n_classes, *, n_components, **_):
    return dict(L=np.eye(X.shape[1]))


def _pca(X, codes, n_classes, *, n_components, **_):
    L, w = x64_call(pca_components, X, n_components)
    return dict(L=L, info=dict(explained_variance=w[:n_components],
                               explained_variance_ratio=w[:n_components] / max(w.sum(), 1e-300)))


def _lda(X, codes, n_classes, *, n_components, reg, **_):
    L, w = x64_call(lda_components, X, codes, n_components, n_classes, reg)
    return dict(L=L * np.sqrt(X.shape[0]), info=dict(eigenvalues=w[:n_components]))


EUCLIDEAN = Method("euclidean", "L", _euclidean, supervised=False, full_rank_only=True, estimator="Euclidean",
                   labels=False)
PCA_METHOD = Method("pca", "L", _pca, supervised=False, estimator="PCA", labels=False)
LDA_METHOD = Method(
    "lda", "L", _lda, defaults=dict(reg=1e-6), constraints={"reg": [Interval(numbers.Real, 0, 1, closed="left")]},
    max_components=lambda d, c: min(d, c - 1), estimator="LDA",
)


class Euclidean(BaseMetricLearner):
    """The identity map: the Euclidean distance, as a baseline with the estimator API."""

    _record = EUCLIDEAN
    _supervised = False

    def __init__(self):
        pass


class PCA(BaseMetricLearner):
    """Principal Component Analysis as a metric learner (unsupervised).

    The rows of ``components_`` are the eigenvectors of the covariance matrix with the largest
    eigenvalues, so ``L L^T = I``: at full dimension the learned distance is still Euclidean
    (a rotation); with ``n_components < n_features`` it is the distance after projection onto the
    principal subspace. ``transform`` does not centre (distances are translation invariant).

    Parameters
    ----------
    n_components : int, default=None
        Number of principal directions (default: all).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)
    explained_variance_ratio_ : ndarray of shape (n_components,)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.PCA(n_components=2).fit(X).transform(X).shape
    (150, 2)
    """

    _record = PCA_METHOD
    _supervised = False
    _parameter_constraints = {"n_components": [Interval(numbers.Integral, 1, None), None]}

    def __init__(self, n_components=None):
        self.n_components = n_components

    def _store(self, result):
        super()._store(result)
        self.explained_variance_ = result.info["explained_variance"]
        self.explained_variance_ratio_ = result.info["explained_variance_ratio"]


class LDA(BaseMetricLearner):
    """Linear Discriminant Analysis as a metric learner.

    Rows of ``components_`` are the generalised eigenvectors of ``S_b v = lambda S_w v`` with the
    largest eigenvalues (at most ``n_classes - 1``), scaled to unit within-class variance. A
    singular ``S_w`` is regularised (eigenvalues floored at ``reg`` times the largest).

    Parameters
    ----------
    n_components : int, default=None
        Default and maximum: ``min(n_features, n_classes - 1)``.
    reg : float, default=1e-6
        Relative eigenvalue floor for ``S_w``.

    Notes
    -----
    A closed form without tuning knobs: on the small data sets of the defaults protocol
    (``benchmarks/PROTOCOL.md``) it reproduces the published LDA column exactly at k = 3, 5, 7.
    Its confirmation-half mean is below the published one only through the large data sets, whose
    training folds the protocol caps at 1000 rows (the paper used a subset of unstated size): with
    at most ``n_classes - 1`` directions, LDA's k-NN accuracy on those sets depends on the
    training sample, not on a default.

    More rows do not add directions: with two classes LDA keeps one, whatever N, while Euclidean
    k-NN keeps improving with N in all of them. On ring (two classes, 20 features, whole training
    folds 1-3 of the protocol's full-size tier, 3-NN) LDA is 5.7 points above Euclidean on 2 000-row
    subsets (0.7310 vs 0.6739) and 1.5 below on the whole folds (0.7193 vs 0.7341): the
    one-dimensional projection is the population optimum of its objective, and what it discards
    is what a denser k-NN uses. Where k-NN on many rows is the goal, a full-rank learner (NCA,
    DMLMJ: +15.0 and +2.3 points there) keeps every direction.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LDA().fit(X, y).transform(X).shape
    (150, 2)
    """

    _record = LDA_METHOD
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None), None],
        "reg": [Interval(numbers.Real, 0, 1, closed="left")],
    }

    def __init__(self, n_components=None, *, reg=1e-6):
        self.n_components = n_components
        self.reg = reg


