"""MMC's diagonal form (Xing, Ng, Jordan & Russell, 2002, section 2.2), solved to a certified optimum.

With a diagonal metric ``A = diag(w)``, Xing et al. minimise

.. math::

    g(w) = \\sum_{(i,j)\\in S} \\|x_i - x_j\\|_A^2 - c \\log \\sum_{(i,j)\\in D} \\|x_i - x_j\\|_A
         = s^T w - c \\log \\sum_k \\sqrt{a_k^T w}, \\qquad w \\ge 0,

with ``s`` the similar pairs' summed squared differences per feature and ``a_k`` a dissimilar
pair's squared differences. ``g`` is convex. Along a ray ``w = t u`` (``s^T u = 1``) the optimal
scale is ``t = c / 2``, so the problem is the maximisation of the concave, degree-1/2 homogeneous

.. math::

    F(v) = \\sum_k \\sqrt{b_k^T v}, \\qquad b_{ki} = a_{ki} / s_i,

over the simplex ``v >= 0, sum(v) = 1`` (``v_i = s_i u_i``), and ``w = (c / 2) v / s``. (A feature
along which no similar pair differs while a dissimilar one does makes ``g`` unbounded below; the
caller refuses such data.)

The solver is exponentiated-gradient (mirror) ascent on the simplex, ``v <- v exp(eta dF / F)``
normalised, with a step that doubles after an ascent and halves until one (iterates stay inside
the simplex, where ``F`` is differentiable), stopped by the Frank-Wolfe duality gap
``max_i dF_i - dF^T v``, an upper bound on ``F* - F(v)`` because ``F`` is concave: ``converged``
only when the gap is at most ``tol * F(v)``. (A pair at distance 0 has an infinite derivative; its
distance is floored at ``1e-12`` of the largest one.)

E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning with application to
clustering with side-information. NIPS 2002. J. Kivinen, M. K. Warmuth. Exponentiated gradient
versus gradient descent for linear predictors. Information and Computation 132 (1997).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["MMCDiagonalState", "mmc_diagonal_objective", "mmc_diagonal_solve"]


class MMCDiagonalState(NamedTuple):
    """The result of :func:`mmc_diagonal_solve`: ``w`` (the diagonal of the metric), Xing et al.'s
    objective ``g(w)``, steps taken, whether the duality gap certified the optimum, ``F`` after each
    step (NaN after the last) and the last gap (relative to ``F``)."""

    w: jax.Array
    objective: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    history: jax.Array
    gap: jax.Array


def mmc_diagonal_objective(w, s, D2, mask, c):
    """Xing et al.'s ``g(w) = s^T w - c log sum_k mask_k sqrt(a_k^T w)`` (``D2``: the rows ``a_k``;
    ``mask``: 1 for a real pair, 0 for padding)."""
    return s @ w - c * jnp.log(jnp.sum(mask * jnp.sqrt(jnp.maximum(D2 @ w, 0.0))))


def _value_grad(v, B, mask):
    dist = jnp.sqrt(jnp.maximum(B @ v, 0.0))
    floor = 1e-12 * jnp.maximum(jnp.max(dist), jnp.finfo(v.dtype).tiny)
    F = jnp.sum(mask * dist)
    G = B.T @ (mask * 0.5 / jnp.maximum(dist, floor))
    return F, G


@functools.partial(jax.jit, static_argnames=("max_iter",))
def mmc_diagonal_solve(w0, s, D2, mask, c, *, max_iter: int = 1000, tol=1e-6) -> MMCDiagonalState:
    """Minimise :func:`mmc_diagonal_objective` over ``w >= 0`` from ``w0`` (module docstring).

    Parameters
    ----------
    w0 : (d,) non-negative start with ``s^T w0 > 0``.
    s : (d,) the similar pairs' summed squared differences per feature, all positive.
    D2 : (p, d) the dissimilar pairs' squared differences per feature.
    mask : (p,) 1 for a real pair, 0 for a padded one.
    c : the weight of the dissimilarity term (it only scales ``w``).
    max_iter : static budget of ascent steps.
    tol : stop when the duality gap is at most ``tol`` times ``F``.
    """
    dtype = D2.dtype
    tiny = jnp.finfo(dtype).tiny
    B = D2 / s
    v0 = jnp.maximum(w0, 0.0) * s
    v0 = v0 / jnp.maximum(jnp.sum(v0), tiny)

    def gap_of(v, G):
        return jnp.max(G) - G @ v

    def body(st):
        v, F, G, eta, it, hist, _, _, _ = st

        def trial(eta):
            z = eta * (G - jnp.max(G)) / jnp.maximum(F, tiny)  # exponentiated-gradient step (mirror ascent)
            v1 = v * jnp.exp(z)
            v1 = v1 / jnp.sum(v1)
            return v1, *_value_grad(v1, B, mask)

        def ls_cond(c_):
            eta, _, F1, _, k = c_
            return ~(F1 >= F) & (k < 60)

        def ls_body(c_):
            eta, _, _, _, k = c_
            eta = 0.5 * eta
            return eta, *trial(eta), k + 1

        eta, v1, F1, G1, _ = jax.lax.while_loop(ls_cond, ls_body, (eta, *trial(eta), 0))
        ok = jnp.isfinite(F1) & (F1 >= F)
        v1, F1, G1 = jnp.where(ok, v1, v), jnp.where(ok, F1, F), jnp.where(ok, G1, G)
        gap = gap_of(v1, G1) / jnp.maximum(F1, tiny)
        return v1, F1, G1, 2.0 * eta, it + 1, hist.at[it + 1].set(F1), gap, gap <= tol, ~ok

    def cond(st):
        it, conv, stalled = st[4], st[7], st[8]
        return (it < max_iter) & ~conv & ~stalled

    F0, G0 = _value_grad(v0, B, mask)
    gap0 = gap_of(v0, G0) / jnp.maximum(F0, tiny)
    hist = jnp.full((max_iter + 1,), jnp.nan, dtype).at[0].set(F0)
    init = (v0, F0, G0, jnp.ones((), dtype), jnp.asarray(0), hist, gap0, gap0 <= tol, jnp.asarray(False))
    v, _, _, _, it, hist, gap, conv, _ = jax.lax.while_loop(cond, body, init)
    w = 0.5 * c * v / s
    return MMCDiagonalState(w, mmc_diagonal_objective(w, s, D2, mask, c), it, conv, hist, gap)
