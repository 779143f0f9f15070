"""Shared pieces of the pure losses."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import linalg


def n_valid(problem, anchors=None):
    """Number of real (unpadded) samples among the anchors (all rows by default), at least 1."""
    m = problem.sample_mask if anchors is None else problem.sample_mask[anchors]
    return jnp.maximum(jnp.sum(m), 1.0)


def n_anchors(problem, anchors=None) -> int:
    """Static number of anchor rows: all rows, or the length of a minibatch index array."""
    return problem.X.shape[0] if anchors is None else anchors.shape[0]


#: pairwise entries of one anchor block under the default budget once the work outgrows it: a tile
#: that stays in the CPU caches between the pairwise product and its elementwise consumers (NCA's
#: value and gradient at 20 000 rows: about 25 % faster than memory-budget-sized blocks)
CACHE_TILE_ELEMENTS = 1 << 21


def row_block(problem, row_elements: int, block_elements: int | None, anchors=None) -> int:
    """Static anchor-block size for pairwise work of ``row_elements`` per anchor: within the memory
    budget, and (default budget only) in cache-sized tiles of at least 16 rows once the work of all
    anchors exceeds twice a tile."""
    n = n_anchors(problem, anchors)
    block = linalg.block_size(n, row_elements, block_elements)
    if block_elements is None and n * row_elements > 2 * CACHE_TILE_ELEMENTS:
        block = min(block, max(16, CACHE_TILE_ELEMENTS // max(row_elements, 1)))
    return block


def masked_softmax_parts(logits, allowed):
    """Unnormalised softmax weights ``exp(logits - max) * allowed`` along the last axis.

    The max is taken over allowed entries only and held constant (it cancels in every ratio built
    from the weights), so the exponentials never overflow and masked entries contribute exactly 0.
    """
    neg = jnp.finfo(logits.dtype).min
    m = jnp.max(jnp.where(allowed, logits, neg), axis=-1, keepdims=True)
    m = jax.lax.stop_gradient(jnp.where(m > neg, m, 0.0))
    shifted = jnp.where(allowed, logits - m, 0.0)  # double where: no inf in the unused branch
    return jnp.where(allowed, jnp.exp(shifted), 0.0)
