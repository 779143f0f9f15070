"""DML-eig: record, host-side preparation (pairs, whitening), solve step (Frank-Wolfe on the
smoothed max-min problem, :func:`jaxdml.losses.dml_eig_solve`) and estimator."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from .._runtime import to_device
from .._validation import Interval
from ..losses._dml_eig import dml_eig_solve
from ._pairs import (ESTIMATOR_CONSTRAINTS, PAIRS_CONSTRAINTS, PairsMetricLearner, factor_result, pair_problem,
                     similar_scatter64, supervision, warn_not_converged)
from ._record import POSITIVE_REAL, Method

__all__ = ["DMLEig", "DML_EIG_METHOD"]

def _dml_eig(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, mu, reg, n_constraints,
             pairs, similar):
    """DML-eig: max min_D d_M^2 s.t. sum_S d_M^2 <= 1, M PSD (smoothed, Frank-Wolfe).

    Whitening ``W = (X_S/|S| + floor)^{-1/2}`` with the eigenvalues of ``X_S/|S|`` floored at
    ``reg`` times the largest one (default 1e-2: a ridge on the similarity scatter; without it
    the max-min solution concentrates on directions of tiny within-class variance, which on
    high-dimensional data such as movement_libras costs ~20 points of 3-NN accuracy). The solver
    maximises the entropy-smoothed objective (``mu``, on the scale where the mean squared distance
    of the similar pairs is 1) over the spectrahedron by Frank-Wolfe
    (:func:`jaxdml.losses.dml_eig_solve`), maps back ``M = W S W`` and scales it so that
    ``sum_S d_M^2 = 1`` exactly (with the unregularised ``X_S``).
    """
    tol = 1e-5 if tol is None else float(tol)
    rng = check_random_state(random_state)
    sup = supervision("dml_eig", X, codes, n_classes, pairs, similar)
    problem = pair_problem("dml_eig", X, codes, n_classes, sup, n_constraints, rng)
    if not hasattr(problem, "a"):
        A, n_sim = similar_scatter64(X, codes, None)
    else:
        n_real = int(np.sum(np.asarray(problem.pair_mask)))
        A, n_sim = similar_scatter64(
            X, None, (np.asarray(problem.a)[:n_real], np.asarray(problem.b)[:n_real],
                      np.asarray(problem.similar)[:n_real]))
    if not np.trace(A) > 0:
        raise ValueError("DML-eig: the similar pairs all join identical rows (their scatter X_S is 0).")
    # Whitening W = (X_S / |S| + floor)^{-1/2}: the constraint becomes tr(S) <= 1 and mu is on
    # the scale of the mean squared distance of the similar pairs.
    w, U = np.linalg.eigh(A / max(n_sim, 1.0))
    w = np.maximum(w, reg * float(w.max()))
    W = (U / np.sqrt(w)) @ U.T
    zproblem = problem._replace(X=to_device(np.asarray(problem.X, np.float64) @ W, problem.X.dtype))
    max_iter = 100 if max_iter is None else int(max_iter)
    st = dml_eig_solve(zproblem, mu=float(mu), max_iter=max_iter, tol=float(tol))
    n_iter, converged = int(st.n_iter), bool(st.converged)
    if not converged:
        warn_not_converged("dml_eig", max_iter, tol)
    S = np.asarray(st.S, np.float64)
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    S = (V * np.maximum(w, 0.0)) @ V.T
    M = W @ S @ W
    g = float(np.sum(A * M))
    M = M / g  # on the constraint's boundary: sum_S d_M^2 = 1
    hist = np.asarray(st.history, np.float64)[: n_iter + 1]
    return factor_result(0.5 * (M + M.T), n_components, n_iter=n_iter, converged=converged, loss_history=hist,
                         loss=float(st.objective), info=dict(gap=float(st.gap), whitening=W, spectrahedron=S))

DML_EIG_METHOD = Method(
    "dml_eig", "M", _dml_eig, defaults=dict(mu=0.1, reg=1e-2, n_constraints=None, pairs=None, similar=None),
    constraints={**PAIRS_CONSTRAINTS, "mu": POSITIVE_REAL, "reg": [Interval(numbers.Real, 0, 1, closed="neither")]},
    supervised=False, estimator="DMLEig",
)


class DMLEig(PairsMetricLearner):
    r"""Distance Metric Learning with Eigenvalue Optimization (Ying & Li).

    .. math::

        \max_{M \succeq 0} \min_{(i,j)\in D} \|x_i - x_j\|_M^2 \quad\text{s.t.}\quad
        \sum_{(i,j)\in S}\|x_i - x_j\|_M^2 \le 1

    After whitening by :math:`X_S^{-1/2}` this is a max over the spectrahedron; the min is
    smoothed with entropy (``mu``) and maximised by Frank-Wolfe with rank-one (top eigenvector)
    steps (:func:`jaxdml.losses.dml_eig_solve`).

    Parameters
    ----------
    mu : float, default=0.1
        Smoothing, relative to the mean squared distance of the similar pairs.
    reg : float in (0, 1), default=1e-2
        Eigenvalue floor (relative to the largest) of the similarity scatter used for the
        whitening: a ridge that keeps the max-min solution off directions of tiny within-class
        variance.
    n_constraints : int, default=None
        Sample this many pairs of each kind instead of using all pairs.
    n_components : int, default=None
        DML-eig learns a full metric ``M``; a smaller ``n_components`` keeps its
        rank-``n_components`` eigen-truncation (the leading eigenvectors of ``M`` scaled by the
        square roots of their eigenvalues; ``metric_ = L^T L``, the full ``M`` in
        ``result_.info["full_metric"]``). None or ``n_features``: the full metric, unchanged.
    preprocessor : array-like or callable, default=None
        Rows for integer index pairs (``fit(idx_pairs, y)``), as in :class:`ITML`.
    max_iter : int, default=None
        Frank-Wolfe steps (default 100).
    tol : float, default=1e-5
        Stop when the Frank-Wolfe gap is below ``tol`` times the objective.
    random_state : int, RandomState or None
    verbose : int, default=0

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.DMLEig(max_iter=20).fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    Y. Ying, P. Li. Distance metric learning with eigenvalue optimization. JMLR 13, 2012.
    """

    _record = DML_EIG_METHOD
    _parameter_constraints = {
        **ESTIMATOR_CONSTRAINTS,
        "mu": [Interval(numbers.Real, 0, None, closed="neither")],
        "reg": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

    def __init__(self, mu=0.1, *, reg=1e-2, n_constraints=None, max_iter=None, tol=1e-5,
                 random_state=None, verbose=0, n_components=None, preprocessor=None):
        self.mu = mu
        self.n_components = n_components
        self.preprocessor = preprocessor
        self.reg = reg
        self.n_constraints = n_constraints
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
