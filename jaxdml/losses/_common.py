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


def row_block(problem, row_elements: int, block_elements: int | None, anchors=None) -> int:
    """Static anchor-block size for pairwise work of ``row_elements`` per anchor: within the memory
    budget and, under the default budget, a cache tile (:func:`jaxdml.linalg.tile_rows`)."""
    block = linalg.block_size(n_anchors(problem, anchors), row_elements, block_elements)
    return block if block_elements is not None else linalg.tile_rows(block, row_elements)


def pair_columns(candidates, n: int):
    """The columns every anchor is compared with, and their row numbers: all ``n`` rows as
    :data:`jaxdml.linalg.ALL` (a slice, not a gather of every row) or the sampled ``candidates``."""
    cols = linalg.ALL if candidates is None else candidates
    return cols, linalg.index_ids(cols, n)


def other_real_columns(mask, rows, cols, col_ids, n: int):
    """(block, n_cols) mask of the pairs an anchor may use: real (unpadded) columns other than itself."""
    return (mask[cols][None, :] > 0) & (col_ids[None, :] != linalg.index_ids(rows, n)[:, None])


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
