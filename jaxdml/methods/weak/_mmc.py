"""MMC: Xing et al.'s Mahalanobis Metric for Clustering under metric-learn's name - the LSI method
(one implementation, two names; LSI's solve step with metric-learn's parameter names)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._device import x64_call
from ..._validation import Interval, Options
from ...solvers._mmc_diagonal import mmc_diagonal_solve
from ._itml import _itml_prior
from ._lsi import LSI_METHOD
from ._pairs import (
    ESTIMATOR_CONSTRAINTS,
    SAMPLED_PAIRS,
    PairsMetricLearner,
    check_both_kinds,
    factor_result,
    sample_pairs,
    supervision,
    warn_not_converged,
)

__all__ = ["MMC", "MMC_METHOD", "MMC_DIAGONAL_MAX_ITER"]

_MAX_PROJ = {"max_proj": LSI_METHOD.constraints["proj_iter"]}
#: metric-learn's options: the starting metric, and the diagonal form with its weight
_MMC_OPTIONS = {
    "init": [Options({"identity", "covariance", "random"}), "array-like"],
    "diagonal": ["boolean"],
    "diagonal_c": [Interval(numbers.Real, 0, None, closed="neither")],
}
#: LSI's defaults (MMC follows them, whatever LSI chooses)
_LSI = LSI_METHOD.defaults
#: ascent steps of the diagonal form when ``max_iter`` is None
MMC_DIAGONAL_MAX_ITER = 1000


def _mmc(X, codes, n_classes, *, max_proj, init, diagonal, diagonal_c, **kw):
    """LSI's solve step from ``init`` (metric-learn's ``max_proj`` is LSI's ``proj_iter``), or the
    diagonal form (:func:`_mmc_diagonal`)."""
    M0 = _itml_prior(init, X, "MMC init", kw["random_state"])
    if diagonal:
        return _mmc_diagonal(X, codes, n_classes, np.diag(M0).copy(), float(diagonal_c), **kw)
    start = None if isinstance(init, str) and init == "identity" else M0  # "identity": LSI's own start
    return LSI_METHOD.solve(X, codes, n_classes, proj_iter=max_proj, name="mmc", init=start, **kw)


def _mmc_diagonal(X, codes, n_classes, w0, c, *, n_components, random_state, max_iter, tol, verbose, n_constraints,
                  pairs, similar, **_):
    """Xing et al.'s diagonal MMC, ``min_w>=0 sum_S d_w^2 - c log sum_D d_w`` (its own solver,
    :func:`jaxdml.solvers._mmc_diagonal.mmc_diagonal_solve`), on the given pairs or on pairs
    drawn from labels (every pair below ``SAMPLED_PAIRS`` of a kind, else that many of each)."""
    rng = check_random_state(random_state)
    sup = supervision("mmc", X, codes, n_classes, pairs, similar)
    if sup is None:
        k = SAMPLED_PAIRS if n_constraints is None else int(n_constraints)
        sup = sample_pairs(codes, k, k, rng)
    a, b, s = sup
    check_both_kinds("mmc", s)
    X = np.asarray(X, np.float64)
    diff2 = (X[a] - X[b]) ** 2
    s_sum, D2 = diff2[s > 0].sum(axis=0), diff2[s < 0]
    if not np.any(D2.sum(axis=0) > 0):
        raise ValueError("MMC: the dissimilar pairs all join identical rows; there is no distance to enlarge.")
    keep = s_sum > 0
    if np.any(~keep & (D2.sum(axis=0) > 0)):
        raise ValueError("MMC (diagonal) is unbounded on these pairs: along feature(s) "
                         f"{np.flatnonzero(~keep & (D2.sum(axis=0) > 0))[:5].tolist()} no similar pair differs while a "
                         "dissimilar one does, so their weight grows without bound.")
    if not np.any(w0[keep] > 0):
        raise ValueError("MMC (diagonal): the starting metric gives every similar pair distance 0; use init with a "
                         "positive diagonal.")
    max_iter = MMC_DIAGONAL_MAX_ITER if max_iter is None else int(max_iter)
    tol = 1e-6 if tol is None else float(tol)
    st = x64_call(mmc_diagonal_solve, w0[keep], s_sum[keep], D2[:, keep], np.ones(D2.shape[0]), c,
                  max_iter=max_iter, tol=tol)
    n_iter, converged = int(st.n_iter), bool(st.converged)
    if not converged:
        warn_not_converged("mmc", max_iter, tol)
    w = np.zeros(X.shape[1])
    w[keep] = np.maximum(np.asarray(st.w, np.float64), 0.0)
    return factor_result(np.diag(w), n_components, n_iter=n_iter, converged=converged, loss=float(st.objective),
                         loss_history=np.asarray(st.history, np.float64)[: n_iter + 1],
                         info=dict(diagonal=w, duality_gap=float(st.gap), n_pairs=int(a.size)))


_DEFAULTS = {k: v for k, v in LSI_METHOD.defaults.items() if k != "proj_iter"}
MMC_METHOD = LSI_METHOD._replace(
    name="mmc", solve=_mmc, estimator="MMC", settings=LSI_METHOD.settings | {"init"},
    defaults={**_DEFAULTS, "max_proj": LSI_METHOD.defaults["proj_iter"], "init": "identity", "diagonal": False,
              "diagonal_c": 1.0},
    constraints={**{k: v for k, v in LSI_METHOD.constraints.items() if k != "proj_iter"}, **_MAX_PROJ,
                 **_MMC_OPTIONS},
)


class MMC(PairsMetricLearner):
    r"""Mahalanobis Metric for Clustering (Xing, Ng, Jordan and Russell, 2002): metric-learn's name for LSI.

    .. math::

        \max_{M \succeq 0} \sum_{(i,j)\in D} \|x_i - x_j\|_M \quad\text{s.t.}\quad
        \sum_{(i,j)\in S}\|x_i - x_j\|_M^2 \le 1

    The same implementation as :class:`jaxdml.LSI` (see there for the solver, the defaults and
    ``reg``), with metric-learn's parameter names: ``max_proj`` is LSI's ``proj_iter`` (Dykstra
    projection rounds per step). ``fit(X, y)`` builds the pairs from labels
    (metric-learn's ``MMC_Supervised``); ``fit(pairs, y)`` takes formed pairs (n_pairs, 2, n_features)
    with ``y`` in {-1, +1} (or 1/0, or booleans; or index pairs with ``preprocessor``), metric-learn's ``MMC``; and
    ``fit(X, pairs=..., similar=...)`` index pairs into ``X``.

    Parameters
    ----------
    max_iter : int, default=None
        Gradient steps (None: LSI's early-stopping budget of 50).
    max_proj : int
        Projection rounds per step (default: LSI's ``proj_iter``).
    tol : float, default=1e-5
    learning_rate : float, default: LSI's
    reg : float, default: LSI's
    ridge : {"isotropic", "diagonal"}, default: LSI's
    n_constraints : int, default=None
    n_components : int, default=None
        Rank-``n_components`` eigen-truncation of the learned metric (as :class:`jaxdml.LSI`).
    preprocessor : array-like or callable, default=None
        Rows for integer index pairs (``fit(idx_pairs, y)``), as in metric-learn.
    init : {"identity", "covariance", "random"} or ndarray of shape (n_features, n_features), default="identity"
        metric-learn's starting metric: the identity, the inverse covariance of the training rows,
        a random symmetric positive definite matrix drawn from ``random_state``, or a positive
        definite matrix. The full form solves a concave problem to a certified optimum, so
        ``init`` changes where the solver starts, not the metric it finds (up to ``tol``);
        "identity" there is LSI's own start, the identity in the units in which every feature's
        similar-pair scatter is the same (so that the start, too, does not depend on the features'
        units). The diagonal form starts from ``init``'s diagonal.
    diagonal : bool, default=False
        Learn a diagonal metric ``diag(w)`` (a weight per feature) by Xing et al.'s diagonal
        problem, ``min_{w >= 0} sum_S d_w^2 - diagonal_c * log sum_D d_w``, with its own solver
        (:mod:`jaxdml.solvers._mmc_diagonal`: projected gradient on the equivalent concave problem
        over a simplex, stopped by a certified duality gap; ``max_iter``: its steps, default 1000;
        ``tol``: the gap relative to the objective).
        From labels it uses every pair up to 50 000 of each kind (``n_constraints`` of each kind
        when given), sampled above. ``reg`` does not apply to it.
    diagonal_c : float, default=1.0
        The weight of the dissimilarity term of the diagonal form; it only scales the learned
        weights (``w(c) = c w(1)``).
    random_state : int, RandomState or None
        Seeds the pairs drawn from labels and ``init="random"``.
    verbose : int, default=0

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.MMC().fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning with application to
    clustering with side-information. NIPS 2002.
    """

    _record = MMC_METHOD
    _parameter_constraints = {**ESTIMATOR_CONSTRAINTS, **_MAX_PROJ, **_MMC_OPTIONS,
                              **{k: LSI_METHOD.constraints[k] for k in ("learning_rate", "reg", "ridge")}}

    def __init__(self, max_iter=None, max_proj=_LSI["proj_iter"], tol=1e-5, *, learning_rate=_LSI["learning_rate"],
                 reg=_LSI["reg"], ridge=_LSI["ridge"], n_constraints=None, init="identity", diagonal=False,
                 diagonal_c=1.0, random_state=None, verbose=0, n_components=None, preprocessor=None):
        self.ridge = ridge
        self.init = init
        self.diagonal = diagonal
        self.diagonal_c = diagonal_c
        self.max_iter = max_iter
        self.n_components = n_components
        self.preprocessor = preprocessor
        self.max_proj = max_proj
        self.tol = tol
        self.learning_rate = learning_rate
        self.reg = reg
        self.n_constraints = n_constraints
        self.random_state = random_state
        self.verbose = verbose
