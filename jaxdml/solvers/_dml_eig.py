"""DML-eig's solver (Ying & Li, 2012): Frank-Wolfe over the spectrahedron.

:func:`dml_eig_solve` maximises the entropy-smoothed objective (:func:`jaxdml.losses.dml_eig_smoothed`)
with an exact line search per step and a Frank-Wolfe duality gap as its stopping test. The objectives
and the pair handling it shares with LSI (:func:`jaxdml.losses.pair_sq_dists`,
:func:`jaxdml.losses.pair_weights`) are pure functions in :mod:`jaxdml.losses`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..linalg import symmetrize
from ..losses._dml_eig import smoothed_from_values
from ..losses._lsi import pair_sq_dists, pair_weights
from ..problems import PairsProblem

__all__ = ["dml_eig_solve", "DMLEigState"]


class DMLEigState(NamedTuple):
    """Result of :func:`dml_eig_solve`.

    Attributes
    ----------
    S : (d, d) solution on the spectrahedron (PSD, trace 1), in the coordinates of ``problem.X``.
    objective : smoothed objective :math:`f_\\mu(S)`.
    gap : Frank-Wolfe duality gap at the last iterate (``>= f_mu* - f_mu(S)``).
    n_iter : Frank-Wolfe steps taken.
    converged : True when the gap fell below ``tol * f_mu``.
    history : (max_iter + 1,) smoothed objective per iterate (NaN after the last).
    """

    S: jax.Array
    objective: jax.Array
    gap: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    history: jax.Array


def _rank_one_values(v, problem):
    q = problem.X @ v
    if isinstance(problem, PairsProblem):
        return (q[problem.a] - q[problem.b]) ** 2
    return (q[:, None] - q[None, :]) ** 2


def _line_search(a, b, dis, mu, n_steps):
    """argmax over [0, 1] of the concave phi(t) = f_mu((1 - t) a + t b): safeguarded Newton."""

    def derivs(t):
        c = a + t * (b - a)
        logits = jnp.where(dis > 0, -c / mu, -jnp.inf)
        w = jax.nn.softmax(logits.ravel()).reshape(logits.shape)
        w = jnp.where(dis > 0, w, 0.0)
        diff = jnp.where(dis > 0, b - a, 0.0)
        g = jnp.sum(w * diff)
        h = -(jnp.sum(w * diff * diff) - g * g) / mu
        return g, h

    def step(_, carry):
        t, lo, hi = carry
        g, h = derivs(t)
        lo = jnp.where(g > 0, t, lo)
        hi = jnp.where(g > 0, hi, t)
        newton = t - g / jnp.where(h < 0, h, -jnp.inf)
        t = jnp.where((newton > lo) & (newton < hi), newton, 0.5 * (lo + hi))
        return t, lo, hi

    g1, _ = derivs(jnp.asarray(1.0, a.dtype))
    t0 = jnp.asarray(0.5, a.dtype)
    t, lo, hi = jax.lax.fori_loop(0, n_steps, step, (t0, jnp.zeros_like(t0), jnp.ones_like(t0)))
    # phi is concave and phi'(lo) > 0 (or lo = 0), so phi is increasing on [0, lo]: lo never loses
    # to the current point. A Newton iterate past a maximiser close to 0 can (the bracket still
    # holds it after n_steps), so it is kept only when it is at least as good as lo.
    t = jnp.where(g1 >= 0, 1.0, t)
    lo = jnp.where(g1 >= 0, 1.0, lo)

    def phi(s):
        return smoothed_from_values(a + s * (b - a), dis, mu)

    return jnp.where(phi(t) >= phi(lo), t, lo)


@functools.partial(jax.jit, static_argnames=("max_iter", "line_search_steps"))
def dml_eig_solve(problem, *, mu=0.01, max_iter: int = 100, tol=1e-5, line_search_steps: int = 12):
    r"""DML-eig: maximise the smoothed objective over the spectrahedron by Frank-Wolfe (jitted).

    ``problem.X`` must already be whitened by :math:`X_S^{-1/2}` (rows :math:`z_i = X_S^{-1/2}
    x_i`), so that :math:`\widetilde X_\tau = X_S^{-1/2} X_\tau X_S^{-1/2}` are the pair outer
    products of the ``z`` and the constraint :math:`\langle X_S, M\rangle \le 1` becomes
    :math:`\operatorname{tr} S \le 1`. The method then solves (seed, Eq. dmleig:3 smoothed; Ying &
    Li 2012, Sec. 3)

    .. math::

        \max_{S \in \mathcal P} f_\mu(S) = -\mu \log \frac{1}{|D|}\sum_{\tau\in D}
        e^{-\langle \widetilde X_\tau, S\rangle/\mu},
        \qquad \mathcal P = \{S \succeq 0,\ \operatorname{tr} S = 1\},

    whose dual is :math:`\min_{u\in\Delta} \lambda_{\max}(\sum_\tau u_\tau \widetilde X_\tau) +
    \mu \sum_\tau u_\tau \log(|D| u_\tau)` (the smoothed eigenvalue problem, Eq. dmleig:4).
    Frank-Wolfe steps: :math:`G = \nabla f_\mu(S_t)` (``jax.grad``: the softmax-weighted sum of
    the :math:`\widetilde X_\tau`), its top eigenvector ``v`` gives the vertex :math:`Z = v v^T`
    maximising :math:`\langle G, Z\rangle` over :math:`\mathcal P`, and
    :math:`S_{t+1} = (1-\alpha) S_t + \alpha Z` with :math:`\alpha` from an exact line search (the
    pair values are affine in :math:`\alpha`, so it costs no distance recomputation). The
    Frank-Wolfe gap :math:`\lambda_{\max}(G) - \langle G, S_t \rangle` bounds the suboptimality;
    the loop stops when it is below ``tol * f_mu`` or after ``max_iter`` steps. Starts from
    :math:`S_0 = I/d`.

    Parameters
    ----------
    problem : LabeledProblem or PairsProblem with whitened ``X``.
    mu : float > 0, smoothing (traced). The whitening makes the mean squared distance of the
        similar pairs ``tr S = 1`` (when ``X_S`` is normalised by their number), so ``mu`` is on
        that scale.
    max_iter, line_search_steps : static ints.
    tol : float (traced).

    Returns
    -------
    DMLEigState

    References
    ----------
    Y. Ying, P. Li. Distance metric learning with eigenvalue optimization. JMLR 13, 2012.
    """
    X = problem.X
    dtype = X.dtype
    d = X.shape[1]
    mu = jnp.asarray(mu, dtype)
    tol = jnp.asarray(tol, dtype)
    _, dis = pair_weights(problem)

    def value(S):
        a = pair_sq_dists(S, problem)
        return smoothed_from_values(a, dis, mu), a

    vg = jax.value_and_grad(value, has_aux=True)

    def body(state):
        S, _, _, it, _, hist = state
        (f, a), G = vg(S)
        G = symmetrize(G)
        w, V = jnp.linalg.eigh(G)
        v = V[:, -1]
        gap = w[-1] - jnp.sum(G * S)
        b = _rank_one_values(v, problem)
        alpha = _line_search(a, b, dis, mu, line_search_steps)
        done = gap <= tol * jnp.abs(f)
        S1 = jnp.where(done, S, (1.0 - alpha) * S + alpha * jnp.outer(v, v))
        hist = hist.at[it].set(f)
        return S1, f, gap, it + 1, done, hist

    def cond(state):
        return (state[3] < max_iter) & ~state[4]

    S0 = jnp.eye(d, dtype=dtype) / d
    hist = jnp.full((max_iter + 1,), jnp.nan, dtype)
    nan = jnp.asarray(jnp.nan, dtype)
    S, _, gap, it, done, hist = jax.lax.while_loop(
        cond, body, (S0, nan, nan, jnp.asarray(0), jnp.asarray(False), hist))
    f = smoothed_from_values(pair_sq_dists(S, problem), dis, mu)
    hist = hist.at[it].set(f)
    return DMLEigState(symmetrize(S), f, gap, jnp.where(done, it - 1, it), done, hist)
