"""SCML's solver (Shi, Bellet & Sha, AAAI 2014): stochastic regularised dual averaging with AdaGrad.

:func:`scml_rda` minimises the SCML objective (:func:`jaxdml.losses.scml_objective`, evaluated streamed by
:func:`jaxdml.losses.scml_streamed_objective`; the notation is :mod:`jaxdml.losses._scml`'s) over the
non-negative basis weights ``w``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._runtime._executable_cache import cached_jit
from ..losses._scml import scml_streamed_objective

__all__ = ["scml_rda", "SCMLState"]


class SCMLState(NamedTuple):
    """Result of :func:`scml_rda`.

    ``w`` is the best iterate by the full objective, ``best`` its objective, ``n_iter`` the blocks run,
    ``converged`` the convergence flag and ``history`` the objective at ``w = 0`` and after each block (NaN
    after the last one run).
    """

    w: jax.Array
    best: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    history: jax.Array


def _pair_projections(V, B, idx):
    """Rows ``idx`` of the implicit ``P``: ``P[k, i] = (b_i^T v_k)^2`` for the pairs ``k = idx``."""
    return (V[idx] @ B.T) ** 2


def _rda_block(carry, V, B, iab, ian, n_t, beta, gamma, batch_size, block):
    """``block`` steps of regularised dual averaging with AdaGrad scaling (minibatches drawn from the
    first ``n_t`` triplets, the real ones; each minibatch's rows of ``P`` computed from ``V`` and ``B``)."""
    t0, gbar, g2, key = carry
    delta = 1e-3

    def step(i, c):
        t, gbar, g2, key, _ = c
        key, sub = jax.random.split(key)
        idx = jax.random.randint(sub, (batch_size,), 0, n_t)
        Dt = _pair_projections(V, B, iab[idx]) - _pair_projections(V, B, ian[idx])  # (batch, n_basis)
        w = _weights(t, gbar, g2, beta, gamma, delta)
        active = (1.0 + Dt @ w) > 0
        g = jnp.sum(jnp.where(active[:, None], Dt, 0.0), axis=0) / batch_size
        gbar = gbar + (g - gbar) / (t + 1.0)
        g2 = g2 + g * g
        return t + 1.0, gbar, g2, key, w

    t, gbar, g2, key, _ = jax.lax.fori_loop(0, block, step, (t0, gbar, g2, key, jnp.zeros_like(gbar)))
    return (t, gbar, g2, key), _weights(t, gbar, g2, beta, gamma, delta)


def _weights(t, gbar, g2, beta, gamma, delta):
    r"""The RDA step in closed form: :math:`\arg\min_{w \ge 0} \langle \bar g, w\rangle + \beta\|w\|_1
    + \frac{\gamma}{2t}\sum_i (\delta + \sqrt{G_i}) w_i^2`."""
    return jnp.maximum(-gbar - beta, 0.0) * jnp.maximum(t, 1.0) / (gamma * (delta + jnp.sqrt(g2)))


@functools.partial(cached_jit, static_argnames=("batch_size", "block", "max_blocks"))
def scml_rda(V, B, iab, ian, mask, beta, gamma, tol, key, *, batch_size, block, max_blocks):
    """Stochastic RDA (Xiao 2010) with AdaGrad (Duchi et al. 2011), as the SCML paper solves it.

    ``V`` (n_pairs, d): the difference vectors of the distinct pairs of the triplets; ``B``
    (n_basis, d): the bases; ``iab``/``ian``: each triplet's two pairs; ``mask``: 1 for real
    triplets. The matrix ``P`` (n_pairs, n_basis) of the module docstring is never formed: a step
    computes the rows of its minibatch, the full objective uses ``M = B^T diag(w) B``, so memory is
    ``O((n_pairs + n_basis) d)``. Runs ``block`` minibatch steps at a time; after each block the
    full objective of the current ``w`` is evaluated and the best of these iterates kept (as
    metric-learn does: the zero start is not a candidate). Stops (``converged``) when a block
    improves the best objective by less than ``tol`` relative, once it is below the objective of
    ``w = 0`` (a plateau of the stochastic trajectory, not a certificate of optimality); else after
    ``max_blocks``.
    """
    nb = B.shape[0]
    dtype = V.dtype
    zeros = jnp.zeros(nb, dtype)
    n_t = jnp.sum(mask).astype(jnp.int32)
    f0 = scml_streamed_objective(zeros, V, B, iab, ian, beta, mask)
    hist = jnp.full((max_blocks + 1,), jnp.nan, dtype).at[0].set(f0)
    # the best iterate is chosen among the iterates the method computed (the zero start is not one: on
    # hard triplets no iterate may beat its objective, and returning w = 0 would be no metric at all)
    inf = jnp.asarray(jnp.inf, dtype)
    init = ((jnp.asarray(0.0, dtype), zeros, zeros, key), zeros, inf, jnp.asarray(0), jnp.asarray(False), hist, f0)

    def cond(s):
        return (s[3] < max_blocks) & ~s[4]

    def body(s):
        carry, w_best, f_best, k, _, hist, f_prev = s
        carry, w = _rda_block(carry, V, B, iab, ian, n_t, beta, gamma, batch_size, block)
        f = scml_streamed_objective(w, V, B, iab, ian, beta, mask)
        better = f < f_best
        gain = (f_best - jnp.minimum(f, f_best)) / jnp.maximum(jnp.abs(f_best), 1e-12)
        done = (k >= 1) & (gain < tol) & (f_best < f0)
        return (carry, jnp.where(better, w, w_best), jnp.minimum(f, f_best), k + 1, done, hist.at[k + 1].set(f), f)

    _, w, f, k, done, hist, _ = jax.lax.while_loop(cond, body, init)
    return SCMLState(w, f, k, done, hist)
