"""LSI (MMC): record, host-side preparation (pairs, the similarity scatter and its ridge), solve
step (projected gradient ascent, :func:`jaxdml.losses.lsi_solve`) and estimator."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from .._validation import Interval
from ..losses._lsi import lsi_solve
from ._pairs import (ESTIMATOR_CONSTRAINTS, PAIRS_CONSTRAINTS, PairsMetricLearner, pair_problem, similar_scatter64,
                     supervision, warn_not_converged)
from ._record import POSITIVE_REAL, Method

__all__ = ["LSI", "LSI_METHOD", "LSI_DEFAULT_STEPS", "LSI_DEFAULT_REG"]

#: LSI's default budget of gradient steps from the (scaled) identity. LSI's optimum is typically
#: of low rank (the sum of distances over all dissimilar pairs is maximised along a few
#: discriminative directions), which hurts k-NN on many-class, high-dimensional data
#: (movement_libras: 0.68 3-NN accuracy against 0.81 Euclidean). The default budget (with the
#: initial relative step 0.02, growing by 1.2 per accepted step) gets close to the optimum on
#: most data sets; mean 3-NN accuracy on the paper's 12 KEEL data sets: 0.846-0.848 for 40-60
#: steps, 0.840 for 25 steps, 0.846 when run to convergence. Pass max_iter to change it.
LSI_DEFAULT_STEPS = 50
#: Default ridge on LSI's similarity scatter (relative to its mean eigenvalue).
LSI_DEFAULT_REG = 0.01
def _lsi(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, learning_rate, n_constraints,
         pairs, similar, proj_iter, reg):
    """LSI / MMC: max sum_D d_M s.t. sum_S d_M^2 <= 1, M PSD (projected gradient ascent).

    Labels: every pair of the training set when ``n_samples <= 3000`` (sums from GEMMs and
    class scatters), else ``n_constraints`` (default 50 000) sampled pairs of each kind.
    Starts from the identity scaled onto the constraint; ``max_iter`` default
    ``LSI_DEFAULT_STEPS`` (50, early stopping, see there; no ConvergenceWarning then). ``reg``
    (default 0.01) adds a ridge ``reg * tr(X_S) / d * I`` to the similarity scatter ``X_S`` in the
    constraint (as DML-eig's floor on ``X_S``), so that directions of vanishing within-class
    spread cannot take the whole metric; ``reg=0`` is the unregularised problem.
    """
    tol = 1e-5 if tol is None else float(tol)
    rng = check_random_state(random_state)
    sup = supervision("lsi", X, codes, n_classes, pairs, similar)
    problem = pair_problem("lsi", X, codes, n_classes, sup, n_constraints, rng)
    if sup is None and not hasattr(problem, "a"):
        A, _ = similar_scatter64(X, codes, None)
    else:
        n_real = int(np.sum(np.asarray(problem.pair_mask)))
        A, _ = similar_scatter64(
            X, None, (np.asarray(problem.a)[:n_real], np.asarray(problem.b)[:n_real],
                      np.asarray(problem.similar)[:n_real]))
    trace = float(np.trace(A))
    if not trace > 0:
        raise ValueError("LSI: the similar pairs all join identical rows (their scatter X_S is 0).")
    d = X.shape[1]
    # ridge on the similarity scatter: the constraint becomes <X_S, M> + reg tr(X_S)/d tr(M) <= 1
    A_reg = A + float(reg) * (trace / d) * np.eye(d)
    explicit = max_iter is not None
    max_iter = LSI_DEFAULT_STEPS if max_iter is None else int(max_iter)
    st = lsi_solve(np.eye(d) / float(np.trace(A_reg)), problem, A_reg, max_iter=max_iter, tol=float(tol),
                   learning_rate=float(learning_rate), proj_iter=int(proj_iter))
    n_iter, converged = int(st.n_iter), bool(st.converged)
    if not converged and explicit:  # the default budget is a deliberate early stop
        warn_not_converged("lsi", max_iter, tol)
    # Exact feasibility in float64: PSD cone, then scale into the (regularised) half-space; then
    # <X_S, M> <= <X_S + ridge, M> <= 1 as well.
    M = np.asarray(st.M, np.float64)
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    M = (U * np.maximum(w, 0.0)) @ U.T
    g = float(np.sum(A_reg * M))
    if g > 1.0:
        M = M / g
    hist = np.asarray(st.history, np.float64)[: n_iter + 1]
    return dict(metric=M, n_iter=n_iter, converged=converged, loss_history=hist,
                loss=float(st.objective), info=dict(constraint=min(g, 1.0), similar_scatter=A))

LSI_METHOD = Method(
    "lsi", "M", _lsi,
    defaults=dict(learning_rate=0.02, n_constraints=None, pairs=None, similar=None, proj_iter=10, reg=LSI_DEFAULT_REG),
    constraints={**PAIRS_CONSTRAINTS, "learning_rate": POSITIVE_REAL, "proj_iter": [Interval(numbers.Integral, 1, None)],
                 "reg": [Interval(numbers.Real, 0, None, closed="left")]},
    settings=frozenset({"learning_rate"}), supervised=False, full_rank_only=True, estimator="LSI",
)


class LSI(PairsMetricLearner):
    r"""Learning with Side Information (Xing et al.), also known as MMC.

    .. math::

        \max_{M \succeq 0} \sum_{(i,j)\in D} \|x_i - x_j\|_M \quad\text{s.t.}\quad
        \sum_{(i,j)\in S}\|x_i - x_j\|_M^2 \le 1

    by projected gradient ascent with Dykstra's iterated projections onto the half-space and the
    PSD cone (:func:`jaxdml.losses.lsi_solve`). From labels, ``S``/``D`` are all same-/different-
    label pairs of the training set (up to 3000 samples; sampled pairs above).

    Parameters
    ----------
    learning_rate : float, default=0.02
        Initial relative step (grown by 1.2 after a successful step, halved otherwise).
    n_constraints : int, default=None
        Sample this many pairs of each kind instead of using all pairs.
    reg : float, default=0.01
        Ridge ``reg * tr(X_S) / d * I`` added to the similarity scatter in the constraint, so that
        directions of vanishing within-class spread cannot take the whole metric (0: none).
    max_iter : int, default=None
        Gradient steps. The default (None) takes at most 50 steps from the identity (no
        ConvergenceWarning then): LSI's optimum is usually of low rank, which hurts k-NN on
        many-class data, and the bounded path doubles as an early-stopping regulariser. Set it
        (e.g. 200) to solve the problem to ``tol``.
    tol : float, default=1e-5
        Relative objective improvement (or relative step) below which it stops.
    random_state : int, RandomState or None
    verbose : int, default=0

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LSI().fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning with application to
    clustering with side-information. NIPS 2002.
    """

    _record = LSI_METHOD
    _parameter_constraints = {**ESTIMATOR_CONSTRAINTS, "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
                              "reg": [Interval(numbers.Real, 0, None, closed="left")]}

    def __init__(self, learning_rate=0.02, *, reg=0.01, n_constraints=None, max_iter=None, tol=1e-5,
                 random_state=None, verbose=0):
        self.learning_rate = learning_rate
        self.reg = reg
        self.n_constraints = n_constraints
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
