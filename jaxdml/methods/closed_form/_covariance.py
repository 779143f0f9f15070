"""Covariance: the inverse-covariance Mahalanobis baseline (record, solve step, estimator)."""

from __future__ import annotations

import functools
import numbers

import jax
import numpy as np

from ..._runtime._device import x64_call
from ..._runtime._executable_cache import cached_jit
from ..._validation import Interval
from ...eigen._covariance import inverse_sqrt_psd
from ..core._base import BaseMetricLearner
from ..core._record import Method

__all__ = ["Covariance", "COVARIANCE_METHOD"]

_REG = {"reg": [Interval(numbers.Real, 0, 1, closed="left")]}


def _covariance(X, codes, n_classes, *, n_components, reg, **_):
    """``M = Cov(X)^{-1}`` in float64 (the pseudo-inverse of a singular covariance).

    The covariance is formed on the host (as :func:`jaxdml.eigen.covariance_components` does), so the
    one compiled program, the inverse square root, depends on the number of features only.
    """
    Xc = np.asarray(X, np.float64) - np.mean(X, axis=0)
    C = Xc.T @ Xc / max(X.shape[0] - 1, 1)
    C = 0.5 * (C + C.T)
    L, M = x64_call(_inverse_sqrt_psd, C, reg)
    return dict(L=L, metric=M, info=dict(covariance=C))


_inverse_sqrt_psd = cached_jit(functools.partial(inverse_sqrt_psd, drop=True))


COVARIANCE_METHOD = Method("covariance", "M", _covariance, defaults=dict(reg=1e-10), constraints=_REG,
                           supervised=False, full_rank_only=True, estimator="Covariance", labels=False)


class Covariance(BaseMetricLearner):
    r"""The Mahalanobis distance of the data's covariance: ``M = \Sigma^{-1}`` (unsupervised).

    :math:`\Sigma` is the sample covariance of ``X`` (as ``np.cov(X.T)``), computed and inverted in
    float64; for a singular covariance (a feature that is a linear combination of others) the
    pseudo-inverse, as metric-learn's: the directions in which the data does not vary (eigenvalues at
    most ``reg`` times the largest) get no weight (a floored inverse would amplify their round-off,
    e.g. to chance-level 3-NN accuracy on 20 000 rows with 4 redundant features of 32).
    ``components_`` is the symmetric :math:`\Sigma^{-1/2}` there, which whitens the data. Labels,
    if given, are ignored.

    Parameters
    ----------
    reg : float, default=1e-10
        Relative eigenvalue below which a direction of the covariance counts as without variance.
    preprocessor : array-like or callable, default=None
        metric-learn's preprocessor: with it, a 1-D ``X`` in ``fit`` and ``transform`` holds sample
        identifiers, read as ``preprocessor[X]`` (an array: integer indices) or ``preprocessor(X)`` (a
        callable: any identifiers it maps to rows, e.g. file names).

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
    metric_ : ndarray of shape (n_features, n_features)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, _ = load_iris(return_X_y=True)
    >>> jaxdml.Covariance().fit(X).metric_.shape
    (4, 4)

    References
    ----------
    P. C. Mahalanobis. On the generalised distance in statistics. 1936.
    """

    _record = COVARIANCE_METHOD
    _supervised = False
    _parameter_constraints = {**_REG, "preprocessor": ["array-like", "callable", None]}

    def __init__(self, reg=1e-10, *, preprocessor=None):
        self.preprocessor = preprocessor
        self.reg = reg
