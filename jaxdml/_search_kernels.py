"""The blockwise kernels of the one neighbour search (:mod:`jaxdml.neighbors`): query rows in blocks,
on the JAX device (:func:`search`, and :func:`search_chunked`, which also walks the references in
chunks) or in NumPy (:func:`search_host`), with the same distances and the same selection (ties by
lowest reference index)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import linalg

#: up to this k the host selection is k masked argmin passes (linalg.smallest_k); above, a stable sort
_HOST_PASSES_MAX_K = 32

#: above twice this many reference rows (and for k up to :data:`CHUNKED_MAX_K`) the device search also
#: walks the references in equal chunks of at most this many, keeping a running k smallest per query: a tile of
#: queries then reuses one cache-sized chunk of references instead of streaming all of them
REFERENCE_CHUNK = 8192
CHUNKED_MAX_K = 64


def _block_dists(xp, kind, A, B, aq, ar, rows):
    """Squared distances of the query rows ``rows`` to every reference (``xp``: NumPy or jax.numpy)."""
    if kind == "points":
        return xp.maximum(aq[rows][:, None] + ar[None, :] - 2.0 * A[rows] @ B.T, 0.0)
    if kind == "kernel":
        return xp.maximum(aq[rows][:, None] + ar[None, :] - 2.0 * A[rows], 0.0)
    return A[rows]


def _allowed(rows, q_lab, r_lab, r_valid, q_ids, r_ids, other):
    """Which references each query row may take: valid ones, of the query's label (of another label when
    ``other``), not the query itself (``q_ids == r_ids``; ``r_ids = -1`` excludes nothing). The mode is
    data, not a static argument, so one compiled search serves "any", "same" and "other"."""
    return _allowed_in(q_lab[rows], q_ids[rows], r_lab, r_valid, r_ids, other)


def _allowed_in(q_lab, q_ids, r_lab, r_valid, r_ids, other):
    """:func:`_allowed` for the labels and ids of the queries and references at hand."""
    labelled = (q_lab[:, None] == r_lab[None, :]) != other
    return r_valid[None, :] & labelled & (q_ids[:, None] != r_ids[None, :])


def _chunk(a, j, size, axis=0):
    """Chunk ``j`` (of ``size`` entries) of ``a`` along ``axis``."""
    return jax.lax.dynamic_slice_in_dim(a, j * size, size, axis=axis)


@functools.partial(jax.jit, static_argnames=("k", "kind", "block", "chunk"))
def search_chunked(A, B, aq, ar, q_lab, r_lab, r_valid, q_ids, r_ids, other, *, k, kind, block, chunk):
    """:func:`search` with the references in chunks of ``chunk``: per block of query rows, a scan over
    the chunks keeps the ``k`` smallest so far (earlier chunks first, so equal distances still keep the
    lowest index). The same distances and the same selection as :func:`search`."""
    nq = A.shape[0]
    m = B.shape[0] if kind == "points" else A.shape[1]
    if kind == "points":
        aq, ar = jnp.sum(A * A, axis=1), jnp.sum(B * B, axis=1)
    n_chunks = -(-m // chunk)
    extra = n_chunks * chunk - m

    def pad(a, axis=0):
        widths = [(0, 0)] * a.ndim
        widths[axis] = (0, extra)
        return jnp.pad(a, widths)

    if kind == "points":
        B, ar = pad(B), pad(ar)
    else:
        A = pad(A, axis=1)
        ar = pad(ar) if kind == "kernel" else ar
    r_lab, r_valid, r_ids = pad(r_lab), pad(r_valid), pad(r_ids)

    def one(rows):
        a_rows = A[rows]

        def step(best, j):
            cols = (rows, _chunk(r_lab, j, chunk), _chunk(r_valid, j, chunk), _chunk(r_ids, j, chunk))
            if kind == "points":
                d = jnp.maximum(aq[rows][:, None] + _chunk(ar, j, chunk)[None, :]
                                - 2.0 * a_rows @ _chunk(B, j, chunk).T, 0.0)
            elif kind == "kernel":
                d = jnp.maximum(aq[rows][:, None] + _chunk(ar, j, chunk)[None, :] - 2.0 * _chunk(a_rows, j, chunk, 1),
                                0.0)
            else:
                d = _chunk(a_rows, j, chunk, 1)
            ok = _allowed_in(q_lab[cols[0]], q_ids[cols[0]], *cols[1:], other)
            dist, idx = linalg.smallest_k(jnp.where(ok, d, jnp.asarray(jnp.inf, d.dtype)), k)
            both = jnp.concatenate([best[0], dist], axis=1)
            dist, pick = linalg.smallest_k(both, k)
            idx = jnp.take_along_axis(jnp.concatenate([best[1], idx + (j * chunk).astype(jnp.int32)], axis=1), pick,
                                      axis=1)
            return (dist, idx), None

        init = (jnp.full((block, k), jnp.inf, A.dtype), jnp.zeros((block, k), jnp.int32))
        (dist, idx), _ = jax.lax.scan(step, init, jnp.arange(n_chunks))
        return idx, dist

    n_blocks = -(-nq // block)
    rows = jnp.minimum(jnp.arange(n_blocks * block, dtype=jnp.int32), nq - 1).reshape(n_blocks, block)
    idx, dist = jax.lax.map(one, rows)
    return idx.reshape(-1, k)[:nq], dist.reshape(-1, k)[:nq]


@functools.partial(jax.jit, static_argnames=("k", "kind", "block"))
def search(A, B, aq, ar, q_lab, r_lab, r_valid, q_ids, r_ids, other, *, k, kind, block):
    """The device path: query rows in blocks of ``block``, the ``k`` smallest of each by ``smallest_k``."""
    nq = A.shape[0]
    if kind == "points":  # the squared norms inside the program (an eager jnp call compiles its own)
        aq, ar = jnp.sum(A * A, axis=1), jnp.sum(B * B, axis=1)

    def one(rows):
        d = _block_dists(jnp, kind, A, B, aq, ar, rows)
        ok = _allowed(rows, q_lab, r_lab, r_valid, q_ids, r_ids, other)
        dist, idx = linalg.smallest_k(jnp.where(ok, d, jnp.asarray(jnp.inf, d.dtype)), k)
        return idx, dist  # int32 indices (smallest_k)

    n_blocks = -(-nq // block)
    rows = jnp.minimum(jnp.arange(n_blocks * block, dtype=jnp.int32), nq - 1).reshape(n_blocks, block)
    idx, dist = jax.lax.map(one, rows)
    return idx.reshape(-1, k)[:nq], dist.reshape(-1, k)[:nq]


def search_host(A, B, aq, ar, q_lab, r_lab, r_valid, q_ids, r_ids, other, *, k, kind, block):
    """The host path: :func:`search` in NumPy (float64), the same distances and the same selection."""
    nq = A.shape[0]
    idx, dist = np.empty((nq, k), np.int32), np.empty((nq, k))
    for s in range(0, nq, block):
        rows = np.arange(s, min(s + block, nq))
        d = _block_dists(np, kind, A, B, aq, ar, rows)
        d = np.where(_allowed(rows, q_lab, r_lab, r_valid, q_ids, r_ids, other), d, np.inf)
        if k <= _HOST_PASSES_MAX_K:
            dist[rows], idx[rows] = linalg.smallest_k(d, k, xp=np)
        else:
            order = np.argsort(d, axis=1, kind="stable")[:, :k]
            idx[rows], dist[rows] = order, np.take_along_axis(d, order, axis=1)
    return idx, dist
