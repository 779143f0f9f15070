"""Exact nearest-neighbour search: the one neighbour search of jaxdml.

Every k-nearest search of the library (target neighbours, impostor candidates, the closed-form
methods' neighbourhoods, KLMNN's and the ordinal methods' neighbourhoods, IMLS's selection, the
ordinal k-NN) goes through :func:`knn_search` and its two class-aware forms,
:func:`same_class_neighbors` and :func:`other_class_neighbors`.

**Inputs.** ``kind="points"``: rows ``X`` and ``Y`` (default ``X``), squared distances
``|L(x - y)|^2``; ``kind="kernel"``: a kernel matrix ``K`` between queries and references,
feature-space squared distances ``k(x, x) + k(y, y) - 2 k(x, y)``; ``kind="distances"``: a matrix of
(squared) distances, used as given. Points and kernels give ``max(., 0)`` of the GEMM form
``|a|^2 + |b|^2 - 2 a.b`` (``K_qq + K_rr - 2 K_qr``), evaluated in the same order on both paths;
on the device, points are first translated by the first reference row, so that rows far from the
origin keep their differences in float32 (the host path's float64 keeps them untranslated).

**Paths.** Up to :data:`DEVICE_SEARCH_ABOVE` query and reference rows the search runs in NumPy
(float64, nothing compiled); above, blockwise on the JAX device (JAX's default float, under jaxdml's
matmul precision): query rows in blocks sized by the memory budget
(:func:`jaxdml.config.set_memory_budget`), so memory is O(block * N), never O(N^2). ``device=True`` /
``False`` forces a path.

**Tie rule.** Neighbours come in increasing distance, equal distances in increasing reference index
(the order of ``np.argsort(d, kind="stable")``). Both paths select with :func:`jaxdml.linalg.smallest_k`
(k masked ``argmin`` passes, or ``lax.top_k``, both lowest index first), so where the two paths compute
equal distances (e.g. integer-valued rows in float64) they return identical indices. Class-aware searches
restrict the references to a class (or its complement) kept in index order, so the rule holds in the
original indices.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import linalg
from ._runtime._padding import bucket_size
from ._search_kernels import CHUNKED_MAX_K, REFERENCE_CHUNK, search, search_chunked, search_host
from ._runtime._device import as_device, to_device
from .config import precise

__all__ = ["knn_search", "same_class_neighbors", "other_class_neighbors", "active_impostors",
           "impostors_within", "DEVICE_SEARCH_ABOVE", "KINDS"]

#: above this many query or reference rows a search runs blockwise on the JAX device; up to it NumPy
#: answers without compiling anything
DEVICE_SEARCH_ABOVE = 5000

#: what a search can start from
KINDS = ("points", "kernel", "distances")

def _operands(source, kind, Y, L, diag, xp, dtype):
    """``(A, B, aq, ar, n, m)`` of the search kernels (:mod:`jaxdml._search_kernels`) for a search input
    (``xp``/``dtype``: where it runs)."""
    conv = (lambda a: np.asarray(a, np.float64)) if xp is np else (lambda a: to_device(np.asarray(a), dtype))
    if kind == "points":
        if xp is not np:
            # on the device, translated by the first reference row: distances are unchanged, but the GEMM
            # form's squared norms stay at the data's spread (far from the origin, float32 would cancel
            # the differences away); integer-valued rows stay integer-valued, so exact ties stay exact
            A, B = _shifted(source, Y, dtype)
        else:
            A = conv(source)
            B = A if Y is None else conv(Y)
        if L is not None:
            Lm = conv(L)
            A = A @ Lm.T
            B = A if Y is None else B @ Lm.T
        if xp is not np:  # the device program computes the squared norms
            return A, B, np.zeros(1), np.zeros(1), A.shape[0], B.shape[0]
        aq = np.sum(A * A, axis=1)
        return A, B, aq, (aq if Y is None else np.sum(B * B, axis=1)), A.shape[0], B.shape[0]
    A = conv(source)
    z = np.zeros(1, np.float64) if xp is np else conv(np.zeros(1))
    if kind == "distances":
        return A, z, z, z, A.shape[0], A.shape[1]
    kq, kr = (np.diag(np.asarray(source)), np.diag(np.asarray(source))) if diag is None else diag
    return A, z, conv(kq), conv(kr), A.shape[0], A.shape[1]


def _shifted(source, Y, dtype):
    """The device operands ``(A, B)`` of a points search (``B`` is ``A`` when ``Y`` is None), translated by the
    first reference row in ``dtype``. Host arrays are converted and translated on the host (in ``dtype``: the
    same rounding as on the device) and then transferred: an eager device subtraction compiles a program for
    every new shape; device arrays stay on the device."""
    if isinstance(source, jax.Array) or isinstance(Y, jax.Array):
        A = as_device(source, dtype)
        B = A if Y is None else as_device(Y, dtype)
        shift = B[0]
        A = A - shift
        return A, (A if Y is None else B - shift)
    A = np.asarray(source, dtype=np.dtype(dtype))
    B = A if Y is None else np.asarray(Y, dtype=np.dtype(dtype))
    shift = B[0].copy()
    A = to_device(A - shift)
    return A, (A if Y is None else to_device(B - shift))


def _check_input(source, kind, Y, L, diag, mode, labels):
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}.")
    if mode not in ("any", "same", "other"):
        raise ValueError(f"mode must be 'any', 'same' or 'other'; got {mode!r}.")
    if mode != "any" and labels is None:
        raise ValueError("labels are needed for mode='same' or 'other'.")
    shape = np.shape(source)
    if len(shape) != 2:
        raise ValueError(f"the search input must be a 2-D array; got shape {shape}.")
    if kind != "points":
        if Y is not None or L is not None:
            raise ValueError(f"Y and L apply to kind='points' only (kind={kind!r}).")
        if kind == "kernel" and diag is None and shape[0] != shape[1]:
            raise ValueError("a rectangular kernel matrix needs diag=(k(x, x) of the queries, k(y, y) of the "
                             "references).")
    return shape[0], (shape[1] if kind != "points" else (shape[0] if Y is None else np.shape(Y)[0]))


@precise
def knn_search(source, k: int, *, kind: str = "points", Y=None, L=None, diag=None, labels=None, y_labels=None,
               mode: str = "any", exclude_self: bool | None = None, device: bool | None = None,
               block_elements: int | None = None):
    """The ``k`` nearest references of every query row, nearest first, ties by lowest index.

    Parameters
    ----------
    source : (n, d) query points (``kind="points"``), (n, m) kernel matrix between queries and
        references (``"kernel"``) or (n, m) matrix of (squared) distances (``"distances"``).
    k : number of neighbours (at most the number of references).
    kind : {"points", "kernel", "distances"}, see the module docstring.
    Y : (m, d) reference points (``kind="points"``; default: the queries).
    L : (d', d) optional linear map (``kind="points"``); distances are ``|L(x - y)|^2``.
    diag : ``(k(x, x) of the queries, k(y, y) of the references)`` for ``kind="kernel"`` (default: the
        diagonal of a square ``source``, whose rows and columns are then the same samples).
    labels, y_labels : labels of the queries and of the references (default ``labels`` when the
        references are the queries); needed for ``mode`` "same" / "other".
    mode : "any", "same" (same label only) or "other" (different label only).
    exclude_self : skip reference ``i`` for query ``i`` (default: True when the references are the
        queries, i.e. ``Y`` is None for points, a square matrix otherwise).
    device : None (by size: the device above :data:`DEVICE_SEARCH_ABOVE` rows), True or False.
    block_elements : pairwise entries per block (default: from the memory budget).

    Returns
    -------
    idx : (n, k) int32 reference rows, nearest first (equal distances: lowest index first); slots
        without a valid neighbour (too few candidates) hold -1.
    sq_dist : (n, k) float64 squared distances (inf for missing slots).
    """
    n, m = _check_input(source, kind, Y, L, diag, mode, labels)
    same_ref = Y is None if kind == "points" else n == m
    exclude_self = same_ref if exclude_self is None else bool(exclude_self)
    if k < 1 or k > m:
        raise ValueError(f"k={k} must be between 1 and the number of reference rows ({m}).")
    if labels is None:
        ql, rl = np.zeros(n, np.int32), np.zeros(m, np.int32)
    else:
        yl = np.asarray(labels) if y_labels is None else np.asarray(y_labels)  # default: the queries' labels
        codes = np.unique(np.concatenate([np.asarray(labels), yl]), return_inverse=True)[1].astype(np.int32)
        ql, rl = codes[:n], codes[n:]
    ids_q = np.arange(n, dtype=np.int32)
    ids_r = np.arange(m, dtype=np.int32) if exclude_self else np.full(m, -1, np.int32)
    return _run(source, kind, Y, L, diag, ql, rl, np.ones(m, bool), ids_q, ids_r, k=int(k), mode=mode,
                device=_on_device(n, m, device), block_elements=block_elements)


def _on_device(n, m, device):
    return max(n, m) > DEVICE_SEARCH_ABOVE if device is None else bool(device)


def _run(source, kind, Y, L, diag, ql, rl, r_valid, ids_q, ids_r, *, k, mode, device, block_elements):
    """One search on the chosen path; ``(idx, sq_dist)`` with -1 / inf for missing slots. ``ids_r`` is -1
    where no reference is to be excluded as the query itself."""
    xp = jnp if device else np
    A, B, aq, ar, n, m = _operands(source, kind, Y, L, diag, xp, jnp.result_type(float))
    if mode == "any":
        ql, rl = np.zeros(n, np.int32), np.zeros(m, np.int32)
    block = linalg.tile_rows(linalg.block_size(n, m, block_elements), m)
    stage = to_device if device else np.asarray  # (jnp.asarray of a host array compiles a program per shape)
    args = (A, B, aq, ar) + tuple(stage(a) for a in (ql, rl, r_valid, ids_q, ids_r, mode == "other"))
    if device and m > 2 * REFERENCE_CHUNK and k <= CHUNKED_MAX_K:
        # equal chunks of at most REFERENCE_CHUNK rows: 18 000 references are three of 6 000, not three of
        # 8 192 with a quarter of the work spent on padding
        chunk = -(-m // -(-m // REFERENCE_CHUNK))
        block = linalg.tile_rows(linalg.block_size(n, chunk, block_elements), chunk)
        idx, dist = search_chunked(*args, k=k, kind=kind, block=block, chunk=chunk)
    elif device:
        idx, dist = search(*args, k=k, kind=kind, block=block)
    else:
        idx, dist = search_host(*args, k=k, kind=kind, block=block)
    idx, dist = np.asarray(idx, np.int32), np.asarray(dist, dtype=np.float64)
    return np.where(np.isfinite(dist), idx, -1), dist


def _class_input(source, kind, rows, cols=None):
    """``(A, Y, diag)`` of the search of the query rows ``rows`` against the references ``cols`` (sample
    indices, None: every sample; for a matrix input, its rows and columns)."""
    S = np.asarray(source)
    if kind == "points":
        return S[rows], (S if cols is None else S[cols]), None
    sub = S[rows] if cols is None else S[np.ix_(rows, cols)]
    if kind == "kernel":
        d = np.diag(S)
        return sub, None, (d[rows], (d if cols is None else d[cols]))
    return sub, None, None


def _query_rows(queries, n):
    """Sorted unique query indices (None: every row), checked against ``n`` samples."""
    if queries is None:
        return None
    q = np.unique(np.asarray(queries).astype(np.int64).ravel())
    if q.size and (q[0] < 0 or q[-1] >= n):
        raise ValueError(f"queries must be row indices in [0, {n}); got values from {q[0]} to {q[-1]}.")
    return q


@precise
def same_class_neighbors(source, codes, k: int, *, kind: str = "points", L=None, device: bool | None = None,
                         block_elements=None, queries=None):
    """``k`` nearest same-class rows of every row (self excluded), searched class by class.

    ``source``/``kind``/``L``/``device`` as in :func:`knn_search` (a kernel or distance matrix is
    square over the samples). Work is ``sum_c n_c^2 d`` rather than ``n^2 d``; on the device class
    subsets are padded to bucket sizes so that similar-sized classes share one compiled search.
    ``queries`` (row indices; default every row) restricts the search to those rows, against every
    classmate: work ``sum_c q_c n_c d``; the other rows get the mask-0 slots.
    Returns ``(idx, mask)`` of shape (n, k); classes with ``n_c <= k`` fill their extra slots with the
    row itself and mask 0.
    """
    codes = np.asarray(codes)
    n = codes.shape[0]
    wanted = _query_rows(queries, n)
    on_device = _on_device(n, n, device)
    if kind == "points" and L is not None:
        source, L = np.asarray(source, np.float64) @ np.asarray(L, np.float64).T, None
    out = np.tile(np.arange(n, dtype=np.int32)[:, None], (1, k))
    mask = np.zeros((n, k), np.float32)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        nc = members.size
        kc = min(k, nc - 1)
        if kc <= 0:
            continue
        pos = np.arange(nc) if wanted is None else np.flatnonzero(np.isin(members, wanted))
        nq = pos.size
        if nq == 0:
            continue
        b = bucket_size(nc) if on_device else nc
        bq = (b if wanted is None else bucket_size(nq)) if on_device else nq
        pad = np.concatenate([members, np.full(b - nc, members[0])])
        qpos = np.concatenate([pos, np.full(bq - nq, pos[0])]).astype(np.int32)
        sub, Y, diag = _class_input(source, kind, pad[qpos], pad)
        ids = np.arange(b, dtype=np.int32)
        idx, _ = _run(sub, kind, Y if wanted is not None else None, None, diag, qpos * 0, ids * 0, ids < nc, qpos,
                      ids, k=kc, mode="any", device=on_device, block_elements=block_elements)
        rows = members[pos]
        out[rows, :kc] = members[idx[:nq]]
        mask[rows, :kc] = 1.0
    return out, mask


@precise
def other_class_neighbors(source, codes, m: int, *, kind: str = "points", L=None, device: bool | None = None,
                          block_elements=None, queries=None):
    """``m`` nearest differently-labelled rows of every row (impostor candidates).

    ``source``/``kind``/``L``/``device`` as in :func:`knn_search` (a kernel or distance matrix is
    square over the samples). ``queries`` (row indices; default every row) restricts the search to
    those rows, against every sample: work ``q n d``; the other rows get the mask-0 slots.
    Returns ``(idx, mask)`` of shape (n, m); the slots beyond the rows of other classes point at the
    row itself with mask 0.
    """
    n = np.shape(source)[0]
    codes = np.asarray(codes)
    wanted = _query_rows(queries, n)
    if wanted is None:
        idx, _ = knn_search(source, min(m, n), kind=kind, L=L, labels=codes, mode="other", device=device,
                            block_elements=block_elements)
    else:
        found = np.full((n, min(m, n)), -1, np.int32)
        if wanted.size:
            A, Y, diag = _class_input(source, kind, wanted)
            found[wanted], _ = knn_search(A, min(m, n), kind=kind, Y=Y, L=L, diag=diag, labels=codes[wanted],
                                          y_labels=codes, mode="other", exclude_self=False,
                                          device=_on_device(n, n, device), block_elements=block_elements)
        idx = found
    ok = idx >= 0
    idx = np.where(ok, idx, np.arange(n)[:, None]).astype(np.int32)
    if idx.shape[1] < m:
        extra = np.tile(np.arange(n, dtype=np.int32)[:, None], (1, m - idx.shape[1]))
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


@jax.jit
def _sq_norms(Z):
    """Squared norms of the rows (one compiled program, not an eager multiply and an eager sum)."""
    return jnp.sum(Z * Z, axis=1)


def _sparse_nonzero(flat):
    """``np.flatnonzero`` of a sparse 1-D int8 array, scanning it 8 bytes at a time (a byte scan where more
    than a quarter of the 8-byte words hold a non-zero byte: expanding each such word to its 8 positions
    would then cost more than it saves)."""
    m = flat.size // 8 * 8
    words = flat[:m].view(np.uint64)
    if 4 * np.count_nonzero(words) > words.size:
        return np.flatnonzero(flat).astype(np.int64)
    words = np.flatnonzero(words)
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
    Z = as_device(Z)
    n = Z.shape[0]
    s = _sq_norms(Z)
    outer = as_device(outer, Z.dtype)
    inner = outer if inner is None else as_device(inner, Z.dtype)
    codes, valid = as_device(codes, np.int32), as_device(valid, bool)
    block = linalg.block_size(n, n, block_elements)
    parts = []
    for start in range(0, n, block):
        code = np.asarray(_within_radius(np.int32(start), Z, s, codes, valid, outer, inner, block=block))
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
def impostors_within(Z, codes, valid, radius, *, ref_range=None, anchors=None, block_elements: int | None = None):
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
    Z = as_device(Z)
    n = Z.shape[0]
    r0, r1 = (0, n) if ref_range is None else (int(ref_range[0]), int(ref_range[1]))
    if not 0 <= r0 <= r1 <= n:
        raise ValueError(f"ref_range must satisfy 0 <= r0 <= r1 <= n={n}; got {ref_range}.")
    s = _sq_norms(Z)
    radius = as_device(radius, Z.dtype)
    codes, valid = as_device(codes, np.int32), as_device(valid, bool)
    width = -(-max(r1 - r0, 1) // 8) * 8
    anchors = np.arange(n, dtype=np.int32) if anchors is None else np.asarray(anchors, np.int32)
    m = anchors.size
    block = linalg.block_size(max(m, 1), width, block_elements)
    tile = linalg.tile_rows(block, width)  # anchors per step inside a block (a cache tile)
    block -= block % tile
    parts = [(np.zeros(0, np.int32), np.zeros(0, np.int32))]

    def unpacked(packed, rows):
        a, l = _unpack(np.asarray(packed)[: rows.size], rows, r0)
        keep = l < r1
        return a[keep], l[keep]

    pending = None
    for start in range(0, m if r1 > r0 else 0, block):
        rows = anchors[start: start + block]
        padded = np.concatenate([rows, np.full(block - rows.size, rows[-1], np.int32)])
        # dispatched before the previous block is unpacked: the device searches while the host unpacks
        packed = _packed_within(to_device(padded), np.int32(r0), Z, s, codes, valid, radius, width=width, tile=tile)
        if pending is not None:
            parts.append(unpacked(*pending))
        pending = (packed, rows)
    if pending is not None:
        parts.append(unpacked(*pending))
    anchor, impostor = (np.concatenate(p) for p in zip(*parts))
    return anchor, impostor
