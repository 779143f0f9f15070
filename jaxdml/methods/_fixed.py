"""A fixed distance as a metric learner: :class:`Metric` (a PSD matrix ``M``) and :class:`Transformer`
(a linear map ``L``). Nothing is learned; ``fit`` only checks the data against the matrix, so a
known distance drops in wherever a learner is expected (k-NN, plots, pipelines, comparisons)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data

from ..linalg import components_from_metric
from .core._base import BaseMetricLearner

__all__ = ["Metric", "Transformer"]


def _matrix(value, name: str, owner: str) -> np.ndarray:
    if value is None:
        raise ValueError(f"{owner}: give the matrix {name} (it is what {owner} represents); got None.")
    A = np.asarray(value, dtype=np.float64)
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"{owner}: {name} must be a non-empty 2-D matrix; got shape {A.shape}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{owner}: {name} contains NaN or infinite values.")
    return A


class _Fixed(BaseMetricLearner):
    """Shared ``fit`` of the fixed distances: validate ``X`` (``y`` is ignored) and store the maps."""

    _supervised = False

    def _maps(self) -> tuple[np.ndarray, np.ndarray]:
        """``(components_, metric_)`` of the fixed distance: each subclass defines it (abstract hook)."""
        raise NotImplementedError(f"{type(self).__name__} must define _maps()")

    def fit(self, X, y=None):
        """Check that ``X`` has as many features as the matrix has columns and store ``components_``
        and ``metric_`` (``y`` is accepted and ignored).

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        L, M = self._maps()
        X = validate_data(self, X, dtype=np.float64)
        if X.shape[1] != L.shape[1]:
            raise ValueError(f"{type(self).__name__}: X has {X.shape[1]} features but the matrix is for "
                             f"{L.shape[1]}.")
        self.components_, self.metric_ = L, M
        self.n_iter_, self.converged_, self.loss_curve_ = 0, True, np.zeros(0)
        self._n_features_out = L.shape[0]
        return self


class Metric(_Fixed):
    """A given Mahalanobis metric ``M`` as a metric learner (pyDML's ``Metric``).

    ``components_`` is a square root ``L`` of ``M`` (``L^T L = M``, rows by decreasing eigenvalue,
    :func:`jaxdml.linalg.components_from_metric`); ``transform(X) = X L^T``, so Euclidean distances
    after ``transform`` are the Mahalanobis distances of ``M``.

    Parameters
    ----------
    M : array of shape (n_features, n_features)
        A symmetric positive semidefinite matrix (a clearly indefinite one raises ``NonPSDError``,
        a ``ValueError``; the symmetric part of a slightly asymmetric one is used).

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
    metric_ : ndarray of shape (n_features, n_features)
        ``M`` (symmetrised).

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> m = jaxdml.Metric(np.diag([4.0, 1.0])).fit(X)
    >>> np.allclose(m.transform(X) ** 2, X ** 2 * [4.0, 1.0])
    True
    """

    def __init__(self, M=None):
        self.M = M

    def _maps(self):
        M = _matrix(self.M, "M", "Metric")
        if M.shape[0] != M.shape[1]:
            raise ValueError(f"Metric: M must be square; got shape {M.shape}.")
        M = 0.5 * (M + M.T)
        return components_from_metric(M), M


class Transformer(_Fixed):
    """A given linear map ``L`` as a metric learner (pyDML's ``Transformer``): ``transform(X) = X L^T``
    and ``metric_ = L^T L``.

    Parameters
    ----------
    L : array of shape (n_components, n_features)

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.arange(6.0).reshape(3, 2)
    >>> jaxdml.Transformer([[1.0, 1.0]]).fit(X).transform(X).ravel().tolist()
    [1.0, 5.0, 9.0]
    """

    def __init__(self, L=None):
        self.L = L

    def _maps(self):
        L = _matrix(self.L, "L", "Transformer")
        return L, L.T @ L
