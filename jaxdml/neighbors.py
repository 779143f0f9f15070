"""Exact nearest-neighbour search under a (learned) metric, blockwise and memory-bounded.

Query rows are processed in blocks sized by the library memory budget
(:func:`jaxdml.config.set_memory_budget`): each block computes its distances to every reference
row with one matrix product and keeps the ``k`` smallest with :func:`jaxdml.linalg.smallest_k`, so memory is
O(block * N), never O(N^2). Runs on any JAX device.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import linalg
from ._padding import bucket_size
from .config import precise

__all__ = ["knn_search", "same_class_neighbors", "other_class_neighbors", "active_impostors", "impostor_candidates"]


@functools.partial(jax.jit, static_argnames=("k", "mode", "exclude_self", "block"))
def _search(Q, R, q_lab, r_lab, r_valid, q_ids, r_ids, *, k, mode, exclude_self, block):
    nq = Q.shape[0]
    sr = jnp.sum(R * R, axis=1)
    big = jnp.asarray(jnp.inf, Q.dtype)

    def one(rows, valid):
        q = Q[rows]
        d = jnp.maximum(jnp.sum(q * q, axis=1)[:, None] + sr[None, :] - 2.0 * q @ R.T, 0.0)
        ok = r_valid[None, :]
        if mode == "same":
            ok = ok & (q_lab[rows][:, None] == r_lab[None, :])
        elif mode == "other":
            ok = ok & (q_lab[rows][:, None] != r_lab[None, :])
        if exclude_self:
            ok = ok & (q_ids[rows][:, None] != r_ids[None, :])
        d = jnp.where(ok, d, big)
        dist, idx = linalg.smallest_k(d, k)
        return idx, dist  # int32 indices (smallest_k)

    n_blocks = -(-nq // block)
    pos = jnp.arange(n_blocks * block, dtype=jnp.int32)
    rows = jnp.minimum(pos, nq - 1).reshape(n_blocks, block)
    idx, dist = jax.lax.map(lambda r: one(r, None), rows)
    return idx.reshape(-1, k)[:nq], dist.reshape(-1, k)[:nq]


@precise
def knn_search(X, k: int, *, Y=None, L=None, labels=None, y_labels=None, mode: str = "any",
               exclude_self: bool | None = None, block_elements: int | None = None):
    """The ``k`` nearest rows of ``Y`` (default ``X``) for every row of ``X``.

    Parameters
    ----------
    X : (n, d) queries. Y : (m, d) references (default: X).
    k : number of neighbours.
    L : (d', d) optional linear map; distances are ``|L(x - y)|^2``.
    labels, y_labels : labels of X and Y (needed for ``mode`` "same" / "other").
    mode : "any", "same" (same label only) or "other" (different label only).
    exclude_self : skip the query itself (default: True when ``Y`` is X).
    block_elements : pairwise entries per block (default: from the memory budget).

    Returns
    -------
    idx : (n, k) int array of row indices into Y, nearest first. Slots without a valid
        neighbour (too few candidates) hold -1.
    sq_dist : (n, k) squared distances (inf for missing slots).
    """
    X = np.asarray(X)
    same_ref = Y is None
    Y = X if same_ref else np.asarray(Y)
    if exclude_self is None:
        exclude_self = same_ref
    if mode not in ("any", "same", "other"):
        raise ValueError(f"mode must be 'any', 'same' or 'other'; got {mode!r}.")
    if mode != "any" and labels is None:
        raise ValueError("labels are needed for mode='same' or 'other'.")
    n, m = X.shape[0], Y.shape[0]
    if k < 1 or k > m:
        raise ValueError(f"k={k} must be between 1 and the number of reference rows ({m}).")
    dtype = jnp.result_type(float)
    Q = jnp.asarray(X, dtype)
    R = jnp.asarray(Y, dtype)
    if L is not None:
        Lj = jnp.asarray(L, dtype)
        Q, R = Q @ Lj.T, R @ Lj.T
    if labels is None:
        ql, rl = jnp.zeros(n, jnp.int32), jnp.zeros(m, jnp.int32)
    else:
        yl = np.asarray(labels) if (same_ref or y_labels is None) else np.asarray(y_labels)
        codes = np.unique(np.concatenate([np.asarray(labels), yl]), return_inverse=True)[1].astype(np.int32)
        ql, rl = jnp.asarray(codes[:n]), jnp.asarray(codes[n:])
    ids_q = jnp.arange(n, dtype=jnp.int32)
    ids_r = jnp.arange(m, dtype=jnp.int32) if same_ref else jnp.full(m, -1, jnp.int32)
    block = linalg.tile_rows(linalg.block_size(n, m, block_elements), m)
    idx, dist = _search(Q, R, ql, rl, jnp.ones(m, bool), ids_q, ids_r, k=int(k), mode=mode,
                        exclude_self=bool(exclude_self), block=block)
    idx, dist = np.asarray(idx), np.asarray(dist, dtype=np.float64)
    idx = np.where(np.isfinite(dist), idx, -1)
    return idx, dist


@precise
def same_class_neighbors(X, codes, k: int, *, L=None, block_elements=None):
    """``k`` nearest same-class rows of every row (self excluded), searched class by class.

    Work is ``sum_c n_c^2 d`` rather than ``n^2 d``; class subsets are padded to bucket sizes so
    that similar-sized classes share one compiled search. Returns ``(idx, mask)`` of shape (n, k);
    classes with ``n_c <= k`` fill their extra slots with the row itself and mask 0.
    """
    X = np.asarray(X)
    n = X.shape[0]
    dtype = jnp.result_type(float)
    Z = jnp.asarray(X, dtype) if L is None else jnp.asarray(X, dtype) @ jnp.asarray(L, dtype).T
    out = np.tile(np.arange(n, dtype=np.int32)[:, None], (1, k))
    mask = np.zeros((n, k), np.float32)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        nc = members.size
        kc = min(k, nc - 1)
        if kc <= 0:
            continue
        b = bucket_size(nc)
        pad = np.concatenate([members, np.full(b - nc, members[0])])
        Zc = Z[jnp.asarray(pad)]
        valid = jnp.asarray(np.arange(b) < nc)
        ids = jnp.arange(b, dtype=jnp.int32)
        block = linalg.tile_rows(linalg.block_size(b, b, block_elements), b)
        idx, _ = _search(Zc, Zc, ids * 0, ids * 0, valid, ids, ids, k=kc, mode="any",
                         exclude_self=True, block=block)
        out[members, :kc] = members[np.asarray(idx)[:nc]]
        mask[members, :kc] = 1.0
    return out, mask


@precise
def other_class_neighbors(X, codes, m: int, *, L=None, block_elements=None):
    """``m`` nearest differently-labelled rows of every row (impostor candidates).

    Returns ``(idx, mask)`` of shape (n, m); mask 0 where fewer candidates exist.
    """
    idx, dist = knn_search(X, min(m, X.shape[0]), L=L, labels=np.asarray(codes), mode="other",
                           block_elements=block_elements)
    ok = idx >= 0
    idx = np.where(ok, idx, np.arange(X.shape[0])[:, None]).astype(np.int32)
    if idx.shape[1] < m:
        extra = np.tile(np.arange(X.shape[0], dtype=np.int32)[:, None], (1, m - idx.shape[1]))
        idx = np.concatenate([idx, extra], axis=1)
        ok = np.concatenate([ok, np.zeros_like(extra, bool)], axis=1)
    return idx, ok.astype(np.float32)


@functools.partial(jax.jit, static_argnames=("block",))
def _within_radius(start, Z, s, codes, valid, outer, inner, *, block):
    """Codes for anchors ``start .. start + block``: 2 where ``d < inner``, 1 where ``d < outer``,
    0 otherwise (differently-labelled valid rows only)."""
    n = Z.shape[0]
    rows = jnp.minimum(start + jnp.arange(block, dtype=jnp.int32), n - 1)
    d = jnp.maximum(s[rows][:, None] + s[None, :] - 2.0 * Z[rows] @ Z.T, 0.0)
    ok = (codes[rows][:, None] != codes[None, :]) & valid[None, :]
    return (ok & (d < outer[rows][:, None])).astype(jnp.int8) + (ok & (d < inner[rows][:, None])).astype(jnp.int8)


def _sparse_nonzero(flat):
    """``np.flatnonzero`` of a sparse 1-D int8 array, scanning it 8 bytes at a time."""
    m = flat.size // 8 * 8
    words = np.flatnonzero(flat[:m].view(np.uint64))
    pos = (words[:, None] * 8 + np.arange(8)).reshape(-1)
    pos = pos[flat[pos] != 0]
    return np.concatenate([pos, m + np.flatnonzero(flat[m:])]).astype(np.int64)


@precise
def active_impostors(Z, codes, valid, outer, inner=None, *, block_elements: int | None = None):
    """Every differently-labelled pair ``(i, l)`` with ``|z_i - z_l|^2 < outer[i]``, exactly.

    The LMNN active set (Weinberger & Saul, 2009, Section 5): with ``outer[i] = max_j
    |L(x_i - x_j)|^2 + margin`` over the target neighbours ``j`` of ``i`` (plus a slack), it holds
    every impostor whose hinge can be non-zero. Anchors are processed in blocks sized by the
    memory budget (O(block * N) memory, never O(N^2)); the pairs come back as index arrays.

    Parameters
    ----------
    Z : (n, d') embedded rows ``X L^T`` (JAX or NumPy array).
    codes : (n,) int class codes. valid : (n,) bool, False for padding rows.
    outer : (n,) squared radius per anchor (``-inf``: no impostors for that row).
    inner : (n,) optional smaller radius; ``strict`` flags the pairs inside it.
    block_elements : pairwise entries per block (default: from the memory budget).

    Returns
    -------
    anchor, impostor : (p,) int32 index arrays, sorted by anchor then impostor.
    strict : (p,) bool, the pairs with ``|z_i - z_l|^2 < inner[i]`` (all True without ``inner``).
    """
    Z = jnp.asarray(Z)
    n = Z.shape[0]
    s = jnp.sum(Z * Z, axis=1)
    outer = jnp.asarray(outer, Z.dtype)
    inner = outer if inner is None else jnp.asarray(inner, Z.dtype)
    codes, valid = jnp.asarray(codes, jnp.int32), jnp.asarray(valid, bool)
    block = linalg.block_size(n, n, block_elements)
    parts = []
    for start in range(0, n, block):
        code = np.asarray(_within_radius(jnp.int32(start), Z, s, codes, valid, outer, inner, block=block))
        code = np.ascontiguousarray(code[: min(block, n - start)]).reshape(-1)
        pos = _sparse_nonzero(code)
        parts.append(((pos // n).astype(np.int32) + start, (pos % n).astype(np.int32), code[pos] == 2))
    anchor, impostor, strict = (np.concatenate(p) for p in zip(*parts))
    return anchor, impostor, strict


@functools.partial(jax.jit, static_argnames=("width", "tile"))
def _packed_within(rows, r0, Z, s, codes, valid, radius, *, width, tile=None):
    """Bit-packed ``|z_i - z_l|^2 < radius[i]`` (differently labelled, valid ``l``) for the anchors
    ``rows`` against references ``r0 .. r0 + width``: (len(rows), width / 8) uint8, bit ``b`` of
    byte ``c`` standing for reference ``r0 + 8 c + b``. ``tile``: anchors per step (it must divide
    ``len(rows)``; default all at once)."""
    n = Z.shape[0]
    cols = r0 + jnp.arange(width, dtype=jnp.int32)
    inside = cols < n
    cols = jnp.minimum(cols, n - 1)
    Zc, sc, cc, vc = Z[cols], s[cols], codes[cols], valid[cols] & inside

    def one(r):
        d = s[r][:, None] + sc[None, :] - 2.0 * Z[r] @ Zc.T
        hit = (codes[r][:, None] != cc[None, :]) & vc[None, :] & (d < radius[r][:, None])
        bits = hit.reshape(r.shape[0], width // 8, 8).astype(jnp.uint8) << jnp.arange(8, dtype=jnp.uint8)
        return jnp.sum(bits, axis=-1, dtype=jnp.uint8)  # distinct bits: the sum is the OR

    if tile is None or tile >= rows.shape[0]:  # one step
        return one(rows)
    return jax.lax.map(one, rows.reshape(-1, tile)).reshape(rows.shape[0], width // 8)


def _unpack(packed, rows, r0):
    """Pairs ``(anchor, reference)`` of the set bits of a :func:`_packed_within` block (``rows``:
    the anchors of its rows), in row order, then reference order."""
    flat = np.ascontiguousarray(packed).reshape(-1)
    byte = _sparse_nonzero(flat.view(np.int8))
    bits = np.unpackbits(flat[byte][:, None], axis=1, bitorder="little").astype(bool)
    pos = (byte[:, None] * 8 + np.arange(8))[bits]
    w = packed.shape[1] * 8
    return rows[pos // w].astype(np.int32), (pos % w + r0).astype(np.int32)


@precise
def impostor_candidates(Z, codes, valid, radius, *, ref_range=None, anchors=None, block_elements: int | None = None):
    """Every differently-labelled pair ``(i, l)`` with ``|z_i - z_l|^2 < radius[i]``, exactly, with
    ``l`` restricted to the reference rows ``ref_range = (r0, r1)`` (default: all rows).

    The same search as :func:`active_impostors` (float32 or float64 as ``Z``), tiled over anchors
    and references and returned as a bit mask per block (one bit per pair on the host instead of
    one byte), so that a search over a reference range costs O(n (r1 - r0) d') time and
    O(block) memory. Used by the LMNN active-set solver to build its candidate lists.

    Parameters
    ----------
    Z : (n, d') embedded rows. codes : (n,) int class codes. valid : (n,) bool.
    radius : (n,) squared radius per anchor (``-inf``: none).
    ref_range : (r0, r1) reference rows searched (default ``(0, n)``).
    anchors : sorted int array of the anchor rows searched (default: every row).
    block_elements : pairwise entries per block (default: from the memory budget).

    Returns
    -------
    anchor, impostor : (p,) int32 index arrays, sorted by anchor then impostor.
    """
    Z = jnp.asarray(Z)
    n = Z.shape[0]
    r0, r1 = (0, n) if ref_range is None else (int(ref_range[0]), int(ref_range[1]))
    if not 0 <= r0 <= r1 <= n:
        raise ValueError(f"ref_range must satisfy 0 <= r0 <= r1 <= n={n}; got {ref_range}.")
    s = jnp.sum(Z * Z, axis=1)
    radius = jnp.asarray(radius, Z.dtype)
    codes, valid = jnp.asarray(codes, jnp.int32), jnp.asarray(valid, bool)
    width = -(-max(r1 - r0, 1) // 8) * 8
    anchors = np.arange(n, dtype=np.int32) if anchors is None else np.asarray(anchors, np.int32)
    m = anchors.size
    block = linalg.block_size(max(m, 1), width, block_elements)
    tile = linalg.tile_rows(block, width)  # anchors per step inside a block (a cache tile)
    block -= block % tile
    parts = [(np.zeros(0, np.int32), np.zeros(0, np.int32))]
    for start in range(0, m if r1 > r0 else 0, block):
        rows = anchors[start: start + block]
        padded = np.concatenate([rows, np.full(block - rows.size, rows[-1], np.int32)])
        packed = np.asarray(_packed_within(jnp.asarray(padded), jnp.int32(r0), Z, s, codes, valid, radius,
                                           width=width, tile=tile))
        a, l = _unpack(packed[: rows.size], rows, r0)
        keep = l < r1
        parts.append((a[keep], l[keep]))
    anchor, impostor = (np.concatenate(p) for p in zip(*parts))
    return anchor, impostor
