"""CMOML and KCMOML: chain maximising ordinal metric learning, linear and kernel (records, estimators)."""

from __future__ import annotations

import functools
import numbers

from ..._validation import Interval, Options
from ...losses._ordinal import cmoml
from ..core._base import KernelMetricLearner
from ..core._landmarks import N_LANDMARKS_DOC
from ..core._record import KERNEL_CONSTRAINTS, MAX_ROWS, Method
from ._odml import _COMMON, _OrdinalLearner
from ._ordinal import (
    KERNEL_INIT,
    KERNEL_SETTINGS,
    LINEAR_SETTINGS,
    MAX_ROWS_DOC,
    UNBOUNDED,
    nearest_neighbourhoods,
    nearest_search,
    solve_kernel,
    solve_linear,
)

__all__ = ["CMOML", "KCMOML", "CMOML_METHOD", "KCMOML_METHOD"]

#: chains of 3 in neighbourhoods of 50 (pyDML's CMOML defaults); comparisons softened at 0.1 of the
#: neighbourhood's mean squared distance; L-BFGS, at most 200 iterations
CMOML_DEFAULTS = dict(chain_size=3, neighborhood_size=50, temperature=0.1, max_rows="auto")
CMOML_CONSTRAINTS = {
    "chain_size": [Interval(numbers.Integral, 2, None)],
    "neighborhood_size": [Interval(numbers.Integral, 2, None)],
    "temperature": [Interval(numbers.Real, 0, None, closed="neither")],
    "max_rows": MAX_ROWS,
}


def _hood(neighborhood_size, chain_size):
    return functools.partial(nearest_neighbourhoods, size=int(neighborhood_size))


def _cmoml(X, y, n_classes, *, chain_size, neighborhood_size, temperature, max_rows="auto", **kw):
    _check_size(X, neighborhood_size, chain_size, "cmoml")
    return solve_linear(cmoml, "cmoml", functools.partial(nearest_search, size=int(neighborhood_size)), X, y,
                        max_rows=max_rows, hyper=dict(chain_size=int(chain_size), temperature=float(temperature)),
                        **kw)


def _kcmoml(X, y, n_classes, *, chain_size, neighborhood_size, temperature, max_rows="auto", **kw):
    _check_size(X, neighborhood_size, chain_size, "kcmoml")
    return solve_kernel(cmoml, "kcmoml", _hood(neighborhood_size, chain_size), X, y,
                        search=functools.partial(nearest_search, size=int(neighborhood_size)), max_rows=max_rows,
                        hyper=dict(chain_size=int(chain_size), temperature=float(temperature)), **kw)


def _check_size(X, size, chain_size, name):
    """A neighbourhood (at most ``n - 1`` samples) must hold a chain."""
    if min(size, X.shape[0] - 1) < chain_size:
        raise ValueError(f"{name}: chain_size={chain_size} exceeds the neighbourhood size "
                         f"min(neighborhood_size={size}, n_samples - 1={X.shape[0] - 1}).")


CMOML_METHOD = Method("cmoml", "L", _cmoml, defaults=dict(CMOML_DEFAULTS), constraints=dict(CMOML_CONSTRAINTS),
                      settings=LINEAR_SETTINGS, estimator="CMOML", labels=False)
KCMOML_METHOD = Method(
    "kcmoml", "A", _kcmoml, defaults=dict(kernel="linear", gamma=None, degree=3, coef0=1.0, n_landmarks="auto",
                                          **CMOML_DEFAULTS),
    constraints={**KERNEL_CONSTRAINTS, **CMOML_CONSTRAINTS}, settings=KERNEL_SETTINGS,
    max_components=lambda d, c: UNBOUNDED, estimator="KCMOML", labels=False)


class CMOML(_OrdinalLearner):
    __doc__ = r"""Chain Maximising Ordinal Metric Learning, for targets that are ordered integer grades.

    In each sample's neighbourhood (its ``neighborhood_size`` nearest samples) sorted by
    distance, a chain is a run of ``chain_size`` neighbours on one side of the sample's grade whose
    grade gaps do not decrease with distance; CMOML learns ``L`` that maximises the number of
    chains. :func:`jaxdml.losses.cmoml` is a smooth version of that count (sigmoid comparisons of
    squared distances relative to the neighbourhood's mean, ``temperature`` wide), minimised by
    L-BFGS; the exact count of the learned and the Euclidean metric is
    :func:`jaxdml.losses.ordered_chains`.

    Parameters
    ----------
    n_components : int, default=None
    chain_size : int, default=3
    neighborhood_size : int, default=50
        Capped at ``n_samples - 1``.
    temperature : float, default=0.1
        Width of the soft comparisons, relative to the mean squared distance in a neighbourhood.
    init : {"auto", "identity", "pca", "random"} or ndarray, default="auto"
    max_iter : int, default=None (200)
    tol : float, default=1e-5
    """ + MAX_ROWS_DOC + r"""
    random_state : int, RandomState or None
        Seeds the subsample and ``init="random"``.
    verbose : int, default=0

    Notes
    -----
    Formulation followed: the chain count of Suárez, García and Herrera (2021), pyDML's defaults
    (chains of 3, neighbourhoods of 50). Two differences, both so that the count can be
    differentiated: the paper (and pyDML) re-selects each neighbourhood under every candidate
    ``L`` and optimises the piecewise-constant count by differential evolution; here each
    neighbourhood is chosen once, by the Euclidean (or feature-space) distance, and the count is
    smoothed, so the driver's L-BFGS (with autodiff gradients) optimises the order of the
    neighbours inside it. The loss is invariant to the scale of ``L``.

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(60, 3)); y = np.clip(np.round(X[:, 0]), -1, 1)
    >>> jaxdml.CMOML(neighborhood_size=10, max_iter=20).fit(X, y).transform(X).shape
    (60, 3)

    References
    ----------
    J. L. Suárez, S. García, F. Herrera. Ordinal regression with explainable distance metric
    learning based on ordered sequences. Machine Learning 110, 2021.
    """

    _record = CMOML_METHOD
    _parameter_constraints = {**_COMMON, **CMOML_CONSTRAINTS,
                              "init": [Options({"auto", "identity", "pca", "random"}), "array-like"]}

    def __init__(self, n_components=None, *, chain_size=3, neighborhood_size=50, temperature=0.1, init="auto",
                 max_iter=None, tol=1e-5, max_rows="auto", random_state=None, verbose=0):
        self.max_rows = max_rows
        self.n_components = n_components
        self.chain_size = chain_size
        self.neighborhood_size = neighborhood_size
        self.temperature = temperature
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose


class KCMOML(KernelMetricLearner, _OrdinalLearner):
    __doc__ = """Kernel Chain Maximising Ordinal Metric Learning: CMOML in the feature space of a kernel.

    ``transform(X) = K(X, X_fit_) @ components_.T``; neighbourhoods by feature-space distance.
    With ``kernel="linear"`` it reproduces :class:`CMOML` (see :mod:`jaxdml.methods.ordinal._ordinal`).

    Parameters
    ----------
    n_components : int, default=None (the numerical rank of the kernel matrix)
    kernel : {"linear", "poly", "rbf", "laplacian"} or callable, default="linear"
    gamma : float, default=None (1 / n_features)
    degree : int, default=3
    coef0 : float, default=1.0
    chain_size, neighborhood_size, temperature : as :class:`CMOML`
    init : {"auto", "identity"}, default="auto"
    max_iter : int, default=None (200)
    tol : float, default=1e-5""" + N_LANDMARKS_DOC + """
        On landmarks the loss runs on the Nystrom features (neighbourhoods as :class:`KODML`'s).
    """ + MAX_ROWS_DOC + """
    random_state : int, RandomState or None
        Seeds the subsample and the choice of landmarks.
    verbose : int, default=0

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(60, 3)); y = np.clip(np.round(X[:, 0]), -1, 1)
    >>> jaxdml.KCMOML(kernel="rbf", neighborhood_size=10, max_iter=20).fit(X, y).transform(X[:2]).shape[0]
    2

    References
    ----------
    J. L. Suárez, S. García, F. Herrera. Ordinal regression with explainable distance metric
    learning based on ordered sequences. Machine Learning 110, 2021.
    """

    _record = KCMOML_METHOD
    _parameter_constraints = {**_COMMON, **KERNEL_CONSTRAINTS, **CMOML_CONSTRAINTS, "init": KERNEL_INIT}

    def __init__(self, n_components=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0, chain_size=3,
                 neighborhood_size=50, temperature=0.1, init="auto", max_iter=None, tol=1e-5, n_landmarks="auto",
                 max_rows="auto", random_state=None, verbose=0):
        self.max_rows = max_rows
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.chain_size = chain_size
        self.neighborhood_size = neighborhood_size
        self.temperature = temperature
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose
