"""SDML: record, host-side preparation (pairs, prior, the graphical lasso's matrix), solve step (ADMM,
:func:`jaxdml.solvers.sdml_admm`) and estimator."""

from __future__ import annotations

import numbers

import jax
import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._device import x64_call
from ..._runtime._executable_cache import cached_jit
from ..._validation import Interval, Options
from ...losses._sdml import sdml_objective
from ...solvers._sdml import sdml_admm
from ..core._record import Method
from ._itml import _itml_prior
from ._pairs import (
    ESTIMATOR_CONSTRAINTS,
    PAIRS_CONSTRAINTS,
    PairsMetricLearner,
    sample_pairs,
    supervision,
    warn_not_converged,
)

__all__ = ["SDML", "SDML_METHOD", "sdml_matrix"]

_PRIOR = [Options({"identity", "covariance", "random"}), "array-like"]
_CONSTRAINTS = {
    "balance_param": [Interval(numbers.Real, 0, None, closed="left")],
    "sparsity_param": [Interval(numbers.Real, 0, None, closed="left")],
    "prior": _PRIOR,
    "pd_margin": [Interval(numbers.Real, 0, 1, closed="neither")],
}


def sdml_matrix(X, a, b, s, M0, balance, pd_margin):
    """The graphical lasso's matrix ``S = M0^{-1} + eta * sum y (x_a - x_b)(x_a - x_b)^T``, with ``y = s``
    the pairs' labels (+1 similar, -1 dissimilar).

    The problem is bounded below only when ``S`` is (nearly) positive definite. Where the pair
    term would push an eigenvalue of ``M0^{-1/2} S M0^{-1/2}`` below ``pd_margin``, ``eta`` is
    reduced to the largest value that keeps them all ``>= pd_margin``: the pairs may shrink the
    prior's precision along any direction by at most that factor. Returns ``(S, eta_used)``.
    """
    P = np.linalg.inv(M0)
    P = 0.5 * (P + P.T)
    D = X[a] - X[b]
    K = (D.T * s) @ D
    w, U = np.linalg.eigh(M0)
    R = (U * np.sqrt(w)) @ U.T  # M0^{1/2} = P^{-1/2}
    kmin = float(np.linalg.eigvalsh(R @ K @ R)[0])
    eta = float(balance)
    if kmin < 0 and 1.0 + eta * kmin < pd_margin:
        eta = (1.0 - pd_margin) / (-kmin)
    S = P + eta * K
    return 0.5 * (S + S.T), eta


def _sdml(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, balance_param,
          sparsity_param, prior, pd_margin, n_constraints, pairs, similar):
    """Pairs (from labels: ``n_constraints`` of each kind, default ``20 * n_classes**2`` as
    metric-learn), ``S``, then the graphical lasso by ADMM in float64. ``info``: ``pairs``, their +1/-1
    ``labels`` and ``similar``, the same as 0/1 flags."""
    rng = check_random_state(random_state)
    sup = supervision("sdml", X, codes, n_classes, pairs, similar)
    if sup is None:
        k = 20 * n_classes**2 if n_constraints is None else int(n_constraints)
        a, b, s = sample_pairs(codes, k, k, rng)
    else:
        a, b, s = sup
    if a.size == 0:
        raise ValueError("SDML: no usable pair (every pair joins a row with itself).")
    M0 = _itml_prior(prior, X, "SDML", random_state)
    S, eta = sdml_matrix(X, a, b, s, M0, balance_param, pd_margin)
    max_iter = 1000 if max_iter is None else int(max_iter)
    tol = 1e-6 if tol is None else float(tol)
    X0 = np.linalg.inv(S)  # the minimiser without the L1 term
    st = x64_call(sdml_admm, S, 0.5 * (X0 + X0.T), float(sparsity_param), tol, max_iter)
    n_iter, converged = int(st.n_iter), bool(st.converged)
    if not converged:
        warn_not_converged("sdml", max_iter, tol)
    M = 0.5 * (st.X + st.X.T)
    loss = float(x64_call(_sdml_objective, M, S, float(sparsity_param)))
    return dict(metric=M, n_iter=n_iter, converged=converged, loss=loss, loss_history=np.array([loss]),
                info=dict(balance=eta, S=S, prior=M0, sparse_metric=st.Z, pairs=np.stack([a, b], axis=1),
                          labels=s, similar=(s > 0).astype(np.float64),  # 0/1 flags, as this key has always held
                          residuals=(float(st.primal), float(st.dual))))


SDML_METHOD = Method(
    "sdml", "M", _sdml,
    defaults=dict(balance_param=0.5, sparsity_param=0.01, prior="identity", pd_margin=0.1, n_constraints=None,
                  pairs=None, similar=None),
    constraints={**PAIRS_CONSTRAINTS, **_CONSTRAINTS},
    supervised=False, full_rank_only=True, estimator="SDML",
)


class SDML(PairsMetricLearner):
    r"""Sparse Determinant Metric Learning (Qi et al., 2009).

    The metric closest to a prior ``M0`` in LogDet divergence, with small distances on similar
    pairs, large ones on dissimilar pairs and a sparse off-diagonal:

    .. math::

        \min_{M \succ 0} \operatorname{tr}(M S) - \log\det M + \lambda \sum_{k \ne l} |M_{kl}|,
        \qquad S = M_0^{-1} + \eta \sum_{(i,j)} y_{ij} (x_i - x_j)(x_i - x_j)^\top

    (``y = +1`` similar, ``-1`` dissimilar): a graphical lasso, solved by ADMM in float64
    (:func:`jaxdml.solvers.sdml_admm`; every iterate ``M`` is positive definite).

    The objective is unbounded below when ``S`` is indefinite, which the dissimilar pairs
    easily cause (metric-learn's graphical lasso then fails, e.g. on wine and digits). Here
    ``eta`` is reduced, when needed, to the largest value for which
    ``S >= pd_margin * M0^{-1}``: the pairs can shrink the prior precision along any direction by
    at most the factor ``pd_margin``. The value used is ``balance_param_``.

    Parameters
    ----------
    balance_param : float, default=0.5
        ``eta``, the weight of the pair term (an upper bound; see above).
    sparsity_param : float, default=0.01
        ``lambda``, the off-diagonal L1 weight.
    prior : {"identity", "covariance", "random"} or ndarray, default="identity"
        ``M0``: identity, the inverse sample covariance, or a positive definite matrix; "random" draws a random
        symmetric positive definite matrix from ``random_state`` (metric-learn's option: a random
        rotation with eigenvalues uniform in [1, 2]).
    pd_margin : float in (0, 1), default=0.1
        Smallest eigenvalue of ``M0^{1/2} S M0^{1/2}`` allowed.
    n_constraints : int, default=None
        Pairs of each kind sampled from labels (default ``20 * n_classes**2``, as metric-learn).
    max_iter : int, default=None
        ADMM iterations (default 1000).
    tol : float, default=1e-6
        Relative primal and dual residuals at which ADMM stops.
    random_state : int, RandomState or None
        Seeds the pair sampling.
    verbose : int, default=0

    Attributes
    ----------
    components_, metric_ : ndarray of shape (n_features, n_features)
    balance_param_ : float, the ``eta`` used.
    n_iter_, converged_

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.SDML(random_state=0).fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    G.-J. Qi, J. Tang, Z.-J. Zha, T.-S. Chua, H.-J. Zhang. An efficient sparse metric learning in
    high-dimensional space via l1-penalized log-determinant regularization. ICML 2009.
    """

    _record = SDML_METHOD
    _parameter_constraints = {**ESTIMATOR_CONSTRAINTS, **_CONSTRAINTS}

    def __init__(self, balance_param=0.5, sparsity_param=0.01, *, prior="identity", pd_margin=0.1,
                 n_constraints=None, max_iter=None, tol=1e-6, random_state=None, verbose=0, preprocessor=None):
        self.preprocessor = preprocessor
        self.balance_param = balance_param
        self.sparsity_param = sparsity_param
        self.prior = prior
        self.pd_margin = pd_margin
        self.n_constraints = n_constraints
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def _store(self, result):
        super()._store(result)
        self.balance_param_ = float(result.info["balance"])


_sdml_objective = cached_jit(sdml_objective)  # one compiled program, not one per operation
