"""LSI's solver (Xing, Ng, Jordan & Russell, 2003): spectral projected gradient on the whitened set.

:func:`lsi_solve` maximises the LSI objective (:func:`jaxdml.losses.lsi_objective`, optionally with a
log-det term) over ``{M PSD, <A, M> <= 1}``, whitened by :func:`lsi_whitening` onto the spectraplex, and
stops on a certified duality gap. The pair quantities it reads (:func:`jaxdml.losses.pair_sq_dists`,
:func:`jaxdml.losses.similar_scatter`, ...) are pure functions in :mod:`jaxdml.losses`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._runtime._executable_cache import cached_jit
from ..linalg import symmetrize
from ..losses._lsi import lsi_objective

__all__ = ["lsi_solve", "lsi_whitening", "LSIState", "LSIWhitening"]


class LSIWhitening(NamedTuple):
    """Whitening of the constraint of :func:`lsi_solve` (see :func:`lsi_whitening`).

    Attributes
    ----------
    W : (d, d) map ``M = W N W^T``; its columns are the eigenvectors of ``A`` divided by the
        square roots of their eigenvalues, zero for the dropped (null) directions.
    W_pinv : (d, d) its pseudo-inverse, ``N = W_pinv M W_pinv^T`` on the kept directions.
    keep : (d,) 1.0 for the kept directions (eigenvalue above ``rtol`` times the largest), else 0.
    """

    W: jax.Array
    W_pinv: jax.Array
    keep: jax.Array


def lsi_whitening(A, rtol=1e-10):
    r"""Whiten the constraint :math:`\langle A, M\rangle \le 1` onto the spectraplex.

    With :math:`A = U \operatorname{diag}(a) U^T` and :math:`M = W N W^T`,
    :math:`W = U \operatorname{diag}(a)^{-1/2}` (on the eigenvalues ``a > rtol * max(a)``),
    :math:`\langle A, M\rangle = \operatorname{tr} N`, so the LSI feasible set
    :math:`\{M \succeq 0, \langle A, M\rangle \le 1\}` becomes
    :math:`\{N \succeq 0, \operatorname{tr} N \le 1\}`, whose Euclidean projection is exact (an
    eigendecomposition and a projection of the eigenvalues onto the capped simplex). Directions
    where ``A`` vanishes are dropped (``M`` is 0 on them); the caller must check that the
    dissimilar pairs do not spread there, or the problem is unbounded.
    """
    A = symmetrize(A)
    a, U = jnp.linalg.eigh(A)
    keep = a > rtol * jnp.maximum(a[-1], jnp.finfo(A.dtype).tiny)
    root = jnp.sqrt(jnp.where(keep, a, 1.0))
    W = U * jnp.where(keep, 1.0 / root, 0.0)
    W_pinv = (U * jnp.where(keep, root, 0.0)).T
    return LSIWhitening(W, W_pinv, keep.astype(A.dtype))


def _project_spectraplex(N):
    r"""Euclidean projection onto :math:`\{N \succeq 0, \operatorname{tr} N \le 1\}`."""
    w, U = jnp.linalg.eigh(symmetrize(N))
    wp = jnp.maximum(w, 0.0)
    u = jnp.sort(w)[::-1]
    css = jnp.cumsum(u)
    k = jnp.arange(1, w.shape[0] + 1, dtype=w.dtype)
    rho = jnp.max(jnp.where(u - (css - 1.0) / k > 0, k, 1.0))
    tau = (jnp.take(css, rho.astype(jnp.int32) - 1) - 1.0) / rho
    w_new = jnp.where(jnp.sum(wp) > 1.0, jnp.maximum(w - tau, 0.0), wp)
    return symmetrize((U * w_new) @ U.T)


def _logdet_and_grad(N, null, mu):
    """``mu log det`` on the kept directions and its gradient ``mu N^+`` (explicit: autodiff
    through a Cholesky factor is slow on CPU); ``-inf`` outside the PD cone."""
    tiny = jnp.finfo(N.dtype).tiny
    w, U = jnp.linalg.eigh(symmetrize(N) + null)
    value = jnp.where(w[0] > 0, jnp.sum(jnp.log(jnp.maximum(w, tiny))), -jnp.inf)
    return mu * value, mu * ((U / jnp.maximum(w, tiny)) @ U.T - null)


def _max_pd_step(N, D, null):
    """Largest step in ``(0, 1]`` (95 % of the boundary) keeping ``N + lam D`` positive definite."""
    tiny = jnp.finfo(N.dtype).tiny
    w, U = jnp.linalg.eigh(symmetrize(N) + null)
    R = U / jnp.sqrt(jnp.maximum(w, tiny))
    neg = -jnp.linalg.eigvalsh(symmetrize(R.T @ D @ R))[0]
    return jnp.where(neg > 0, jnp.minimum(1.0, 0.95 / jnp.maximum(neg, tiny)), 1.0)


class LSIState(NamedTuple):
    """Result of :func:`lsi_solve`.

    Attributes
    ----------
    M : (d, d) final metric (feasible: PSD with ``<A, M> <= 1`` up to round-off).
    objective : the maximised objective :math:`F` at ``M`` (the LSI objective plus the log-det
        term when ``logdet > 0``).
    n_iter : iterations (projected-gradient steps) taken.
    converged : True when the duality gap certified ``F* - F(M) <= tol * f(M)`` (``f``: the
        LSI objective, positive).
    history : (max_iter + 1,) :math:`F` of the iterate after each step (NaN after the last).
    gap : the Frank-Wolfe duality gap at ``M``, an upper bound on ``F* - F(M)``.
    n_evals : objective evaluations (line-search trials included).
    """

    M: jax.Array
    objective: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    history: jax.Array
    gap: jax.Array
    n_evals: jax.Array


_MEMORY = 10  # non-monotone line search: compare with the best of the last 10 values


def _whitened_on_constraint(M, W_pinv, dtype):
    """A metric whitened (``N = W^+ M W^{+T}``) and scaled onto the constraint ``tr N = 1``."""
    N = symmetrize(W_pinv @ jnp.asarray(M, dtype) @ W_pinv.T)
    return N / jnp.maximum(jnp.trace(N), jnp.finfo(dtype).tiny)


@functools.partial(cached_jit, static_argnames=("max_iter",))
def lsi_solve(M0, problem, A, *, max_iter: int = 1000, tol=1e-6, logdet=0.0, learning_rate=1.0, rtol=1e-10,
              proj_iter=None, proj_tol=None, start=None):
    r"""LSI to a certified optimum: spectral projected gradient on the whitened feasible set.

    Solves (seed, Eq. lsi:equiv; ``A`` = :math:`X_S` from :func:`jaxdml.losses.similar_scatter`, or that plus a
    ridge)

    .. math::

        \max_{M} F(M) = \sum_{(i,j)\in D} \|x_i - x_j\|_M
        + \mu f(M_0) \log\det{}_+ (W^{+} M W^{+T})
        \quad \text{s.t.}\quad \langle A, M\rangle \le 1,\quad M \succeq 0,

    where :math:`\mu` = ``logdet`` (0: Xing et al.'s problem; > 0: a log-det barrier that keeps
    the metric full rank, see ``jaxdml.fit(loss="lsi")``; the weight is per direction, so the
    term's pull grows with the rank ``r`` of ``A``), :math:`\log\det_+` the log-determinant on the
    range of ``A`` and :math:`f(M_0)` the LSI objective at the start, which makes :math:`\mu`
    scale free. ``F`` is
    concave. Whitening by ``A`` (:func:`lsi_whitening`, ``M = W N W^T``) maps the feasible set
    onto the spectraplex :math:`\{N \succeq 0, \operatorname{tr} N \le 1\}`, whose projection is
    exact, so every iterate is feasible. Steps: spectral projected gradient (Barzilai-Borwein
    step lengths, a non-monotone Armijo line search over the last 10 values; Birgin, Martinez &
    Raydan 2000), in the dtype of ``problem.X`` (float64 recommended).

    Stopping test: the Frank-Wolfe duality gap
    :math:`g(N) = \max(\lambda_{\max}(\nabla F), 0) - \langle \nabla F, N\rangle`, which bounds
    :math:`F^\star - F(N)` from above because ``F`` is concave. ``converged`` is True only when
    :math:`g \le` ``tol`` :math:`f(N)`, i.e. the objective is certified within ``tol`` (relative)
    of the optimum (relative to the LSI objective :math:`f` at ``N``, which is positive; ``F`` itself
    can be of either sign when ``logdet > 0``); a run stopped by ``max_iter`` (or by a failed line
    search) reports False. With ``logdet > 0`` the first trial step of each line search stops
    short of the PSD boundary (95 % of the largest step that keeps ``N`` positive definite).

    Parameters
    ----------
    M0 : (d, d) PSD starting metric (e.g. the identity); it is whitened and scaled onto the
        constraint.
    problem : LabeledProblem or PairsProblem.
    A : (d, d) PSD constraint matrix (the similarity scatter, possibly ridged).
    max_iter : static budget of projected-gradient steps.
    tol : relative duality-gap tolerance.
    logdet : weight :math:`\mu \ge 0` of the log-det term.
    learning_rate : first trial step, relative to ``|N0| / |grad F(N0)|`` (later steps are
        Barzilai-Borwein).
    rtol : eigenvalues of ``A`` below ``rtol`` times the largest are treated as zero.
    proj_iter, proj_tol : ignored; kept so that calls written for the former Dykstra solver work.
    start : (d, d) PSD metric to start from instead of ``M0`` (whitened and scaled onto the
        constraint likewise); ``M0`` still sets the log-det weight's scale :math:`f(M_0)`, so the
        problem, and its optimum, do not depend on where the solver starts.

    Returns
    -------
    LSIState

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning with application to
    clustering with side-information. NIPS 2002.
    E. G. Birgin, J. M. Martinez, M. Raydan. Nonmonotone spectral projected gradient methods on
    convex sets. SIAM J. Optim. 10 (2000).
    """
    del proj_iter, proj_tol
    dtype = problem.X.dtype
    A = jnp.asarray(A, dtype)
    wh = lsi_whitening(A, rtol)
    pw = problem._replace(X=problem.X @ wh.W)
    null = jnp.diag(1.0 - wh.keep)
    tiny = jnp.finfo(dtype).tiny
    N0 = _whitened_on_constraint(M0, wh.W_pinv, dtype)
    f0 = lsi_objective(N0, pw)
    if start is not None:
        N0 = _whitened_on_constraint(start, wh.W_pinv, dtype)
    mu = jnp.asarray(logdet, dtype) * f0
    tol = jnp.asarray(tol, dtype)

    vg_lsi = jax.value_and_grad(lsi_objective)

    def vg(N):
        f, gf = vg_lsi(N, pw)
        b, gb = jax.lax.cond(mu > 0, lambda M: _logdet_and_grad(M, null, mu),
                             lambda M: (jnp.zeros((), dtype), jnp.zeros_like(M)), N)
        return (f + b, f), gf + gb

    def max_step(N, D):
        return jax.lax.cond(mu > 0, lambda: _max_pd_step(N, D, null), lambda: jnp.ones((), dtype))

    def gap_of(N, G):
        G = symmetrize(G)
        return jnp.maximum(jnp.linalg.eigvalsh(G)[-1], 0.0) - jnp.vdot(G, N)

    def line_search(N, D, gd, fmax):
        def cond(c):
            lam, F, _, _, k = c
            return ~(F >= fmax + 1e-4 * lam * gd) & (k < 50)

        def body(c):
            lam, _, _, _, k = c
            lam = 0.5 * lam
            (F, f), G = vg(N + lam * D)
            return lam, F, f, G, k + 1

        lam = max_step(N, D)
        (F, f), G = vg(N + lam * D)
        return jax.lax.while_loop(cond, body, (lam, F, f, G, 0))

    def body(st):
        N, F, f, G, alpha, it, fbuf, hist, _, _, _, evals = st
        D = _project_spectraplex(N + alpha * G) - N
        gd = jnp.vdot(G, D)
        lam, F1, f1, G1, k = line_search(N, D, gd, jnp.max(fbuf))
        ok = F1 >= jnp.max(fbuf) + 1e-4 * lam * gd
        N1 = jnp.where(ok, symmetrize(N + lam * D), N)
        F1, f1, G1 = jnp.where(ok, F1, F), jnp.where(ok, f1, f), jnp.where(ok, symmetrize(G1), G)
        s, y = N1 - N, G1 - G
        sy, ss = -jnp.vdot(s, y), jnp.vdot(s, s)
        alpha1 = jnp.where(sy > 0, ss / jnp.maximum(sy, tiny), alpha * 10.0)
        alpha1 = jnp.clip(alpha1, 1e-10 * alpha0, 1e10 * alpha0)
        gap = gap_of(N1, G1)
        conv = gap <= tol * f1
        hist = hist.at[it + 1].set(F1)
        fbuf = fbuf.at[(it + 1) % _MEMORY].set(F1)
        return N1, F1, f1, G1, alpha1, it + 1, fbuf, hist, gap, conv, ~ok, evals + k + 1

    def cond(st):
        it, conv, stalled = st[5], st[9], st[10]
        return (it < max_iter) & ~conv & ~stalled

    (F0, f0_), G0 = vg(N0)
    G0 = symmetrize(G0)
    alpha0 = jnp.asarray(learning_rate, dtype) * jnp.linalg.norm(N0) / jnp.maximum(jnp.linalg.norm(G0), tiny)
    gap0 = gap_of(N0, G0)
    hist = jnp.full((max_iter + 1,), jnp.nan, dtype).at[0].set(F0)
    fbuf = jnp.full((_MEMORY,), -jnp.inf, dtype).at[0].set(F0)
    init = (N0, F0, f0_, G0, alpha0, jnp.asarray(0), fbuf, hist, gap0, gap0 <= tol * f0_, jnp.asarray(False),
            jnp.asarray(1))
    N, F, _, _, _, it, _, hist, gap, conv, _, evals = jax.lax.while_loop(cond, body, init)
    M = symmetrize(wh.W @ N @ wh.W.T)
    return LSIState(M, F, it, conv, hist, gap, evals)
