"""LODML and KODML: linear and kernel ordinal distance metric learning (records and estimators)."""

from __future__ import annotations

import functools
import numbers

from ..._validation import Interval, Options
from ...losses._ordinal import odml
from ..core._base import BaseMetricLearner, KernelMetricLearner
from ..core._landmarks import N_LANDMARKS_DOC
from ..core._record import KERNEL_CONSTRAINTS, MAX_ROWS, Method
from ._ordinal import (
    KERNEL_INIT,
    KERNEL_SETTINGS,
    LINEAR_SETTINGS,
    MAX_ROWS_DOC,
    POSITIVE_INT,
    UNBOUNDED,
    odml_neighbourhoods,
    odml_search,
    solve_kernel,
    solve_linear,
)

__all__ = ["LODML", "KODML", "LODML_METHOD", "KODML_METHOD"]

#: alpha = 0.01 and the unit margin of pyDML's LODML/KODML; neighbourhoods of 10 same-grade and 40
#: other-grade samples and triplets weighted by their grade-gap difference, chosen on the diabetes data
#: with 5 grades (benchmarks/bench_ordinal.py --dataset diabetes-5; this loss with pyDML's k = 5,
#: v = 15, unweighted, was worse than Euclidean there); L-BFGS, at most 200 iterations
ODML_DEFAULTS = dict(n_targets=10, n_impostors=40, alpha=0.01, margin=1.0, weighted=True, max_rows="auto")
ODML_CONSTRAINTS = {
    "n_targets": POSITIVE_INT, "n_impostors": POSITIVE_INT,
    "alpha": [Interval(numbers.Real, 0, None)], "margin": [Interval(numbers.Real, 0, None, closed="neither")],
    "weighted": ["boolean"], "max_rows": MAX_ROWS,
}


def _hood(n_targets, n_impostors):
    return functools.partial(odml_neighbourhoods, n_targets=int(n_targets), n_impostors=int(n_impostors))


def _lodml(X, y, n_classes, *, n_targets, n_impostors, alpha, margin, weighted, max_rows="auto", **kw):
    search = functools.partial(odml_search, n_targets=int(n_targets), n_impostors=int(n_impostors))
    return solve_linear(odml, "lodml", search, X, y, max_rows=max_rows, min_per_grade=int(n_targets) + 1,
                        hyper=dict(alpha=float(alpha), margin=float(margin), weighted=bool(weighted)), **kw)


def _kodml(X, y, n_classes, *, n_targets, n_impostors, alpha, margin, weighted, max_rows="auto", **kw):
    search = functools.partial(odml_search, n_targets=int(n_targets), n_impostors=int(n_impostors))
    return solve_kernel(odml, "kodml", _hood(n_targets, n_impostors), X, y, search=search, max_rows=max_rows,
                        min_per_grade=int(n_targets) + 1,
                        hyper=dict(alpha=float(alpha), margin=float(margin), weighted=bool(weighted)), **kw)


LODML_METHOD = Method("lodml", "L", _lodml, defaults=dict(ODML_DEFAULTS), constraints=dict(ODML_CONSTRAINTS),
                      settings=LINEAR_SETTINGS, estimator="LODML", labels=False)
KODML_METHOD = Method(
    "kodml", "A", _kodml, defaults=dict(kernel="linear", gamma=None, degree=3, coef0=1.0, n_landmarks="auto",
                                        **ODML_DEFAULTS),
    constraints={**KERNEL_CONSTRAINTS, **ODML_CONSTRAINTS}, settings=KERNEL_SETTINGS,
    max_components=lambda d, c: UNBOUNDED, estimator="KODML", labels=False)

_COMMON = {
    "n_components": [Interval(numbers.Integral, 1, None), None],
    "max_iter": [Interval(numbers.Integral, 1, None), None],
    "tol": [Interval(numbers.Real, 0, None)],
    "random_state": ["random_state"],
    "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
}


class _OrdinalLearner(BaseMetricLearner):
    """Shared scikit-learn plumbing: ``y`` holds integer grades (checked in the solve step)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        return tags


class LODML(_OrdinalLearner):
    __doc__ = r"""Linear Ordinal Distance Metric Learning, for targets that are ordered integer grades.

    Minimises :func:`jaxdml.losses.odml` over ``L`` by L-BFGS:
    :math:`\alpha\,\mathrm{tr}(L^T L)` plus the (grade-gap weighted) mean hinge
    :math:`[\text{margin} + \|L(x_i - x_j)\|^2 - \|L(x_i - x_l)\|^2]_+` over the triplets of each
    sample ``i``'s fixed neighbourhood (its ``n_targets`` nearest same-grade and ``n_impostors``
    nearest other-grade samples, Euclidean) in which ``j`` is of closer grade than ``l``,
    :math:`|y_j - y_i| < |y_l - y_i|`.

    Parameters
    ----------
    n_components : int, default=None
    n_targets : int, default=10
        Same-grade neighbours per sample.
    n_impostors : int, default=40
        Other-grade neighbours per sample.
    alpha : float, default=0.01
        Weight of the trace regulariser ``tr(M)``.
    margin : float, default=1.0
        In units of the mean squared Euclidean distance from a sample to its neighbourhood (the
        data are divided by its square root before fitting, so the fit does not depend on the
        data's scale).
    weighted : bool, default=True
        Weight each triplet by ``|y_l - y_i| - |y_j - y_i|`` (False: equally, as the paper).
    init : {"auto", "identity", "pca", "random"} or ndarray, default="auto"
    max_iter : int, default=None (200)
    tol : float, default=1e-5
    """ + MAX_ROWS_DOC + r"""
    random_state : int, RandomState or None
        Seeds the subsample and ``init="random"``.
    verbose : int, default=0

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    converged_ : bool

    Notes
    -----
    Formulation followed: Li et al.'s ordinal constraints as a trace-regularised large-margin
    problem over a fixed neighbourhood of each sample (same-grade "targets" and other-grade
    neighbours), the triplet rule "a neighbour of closer grade is closer by the margin", the
    ``alpha = 0.01`` and unit margin of pyDML's LODML. Where pyDML only orders other-grade
    neighbours on the same side of ``y_i`` (``y_i < y_j < y_l``), this loss orders every pair by
    the absolute grade gap, the quantity the k-NN mean absolute error measures, and by default
    weights a triplet by the error a swap would cost. The neighbourhood sizes (10 and 40, pyDML:
    5 and 15) and the weighting were chosen on scikit-learn's diabetes data cut into 5 grades
    (``benchmarks/bench_ordinal.py --dataset diabetes-5``), never on the evaluation data.
    It is solved in ``L`` (``M = L^T L``, PSD by construction) by L-BFGS instead of projected
    gradient descent on ``M``.

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(60, 3)); y = np.clip(np.round(X[:, 0]), -1, 1)
    >>> jaxdml.LODML(max_iter=20).fit(X, y).transform(X).shape
    (60, 3)

    References
    ----------
    C. Li, Q. Liu, J. Liu, H. Lu. Ordinal distance metric learning for image ranking. IEEE
    Transactions on Neural Networks and Learning Systems, 2015.
    """

    _record = LODML_METHOD
    _parameter_constraints = {**_COMMON, **ODML_CONSTRAINTS,
                              "init": [Options({"auto", "identity", "pca", "random"}), "array-like"]}

    def __init__(self, n_components=None, *, n_targets=10, n_impostors=40, alpha=0.01, margin=1.0, weighted=True,
                 init="auto", max_iter=None, tol=1e-5, max_rows="auto", random_state=None, verbose=0):
        self.max_rows = max_rows
        self.n_components = n_components
        self.n_targets = n_targets
        self.n_impostors = n_impostors
        self.alpha = alpha
        self.margin = margin
        self.weighted = weighted
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose


class KODML(KernelMetricLearner, _OrdinalLearner):
    __doc__ = """Kernel Ordinal Distance Metric Learning: LODML in the feature space of a kernel.

    ``transform(X) = K(X, X_fit_) @ components_.T`` with ``A = components_`` (n_components, n_train).
    Neighbourhoods are chosen by feature-space distance; the regulariser is the trace of the
    feature-space metric, ``tr(A K A^T)``. With ``kernel="linear"`` it reproduces :class:`LODML`
    (see :mod:`jaxdml.methods.ordinal._ordinal`).

    Parameters
    ----------
    n_components : int, default=None (the numerical rank of the kernel matrix)
    kernel : {"linear", "poly", "rbf", "laplacian"} or callable, default="linear"
    gamma : float, default=None (1 / n_features)
    degree : int, default=3
    coef0 : float, default=1.0
    n_targets, n_impostors, alpha, margin, weighted : as :class:`LODML`
    init : {"auto", "identity"}, default="auto"
        The feature-space distance itself.
    max_iter : int, default=None (200)
    tol : float, default=1e-5""" + N_LANDMARKS_DOC + """
        On landmarks the loss runs on the Nystrom features (neighbourhoods by a blockwise search: the
        exact feature-space ones for the rbf and linear kernels, the features' for the others).
    """ + MAX_ROWS_DOC + """
    random_state : int, RandomState or None
        Seeds the subsample and the choice of landmarks.
    verbose : int, default=0

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(60, 3)); y = np.clip(np.round(X[:, 0]), -1, 1)
    >>> jaxdml.KODML(kernel="rbf", max_iter=20).fit(X, y).transform(X[:2]).shape[0]
    2

    References
    ----------
    C. Li, Q. Liu, J. Liu, H. Lu. Ordinal distance metric learning for image ranking. IEEE
    Transactions on Neural Networks and Learning Systems, 2015.
    """

    _record = KODML_METHOD
    _parameter_constraints = {**_COMMON, **KERNEL_CONSTRAINTS, **ODML_CONSTRAINTS, "init": KERNEL_INIT}

    def __init__(self, n_components=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0, n_targets=10,
                 n_impostors=40, alpha=0.01, margin=1.0, weighted=True, init="auto", max_iter=None, tol=1e-5,
                 n_landmarks="auto", max_rows="auto", random_state=None, verbose=0):
        self.max_rows = max_rows
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_targets = n_targets
        self.n_impostors = n_impostors
        self.alpha = alpha
        self.margin = margin
        self.weighted = weighted
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose
