"""Linear-algebra helpers shared by losses, solvers and estimators.

Distances are always computed with the GEMM identity ``|a - b|^2 = |a|^2 + |b|^2 - 2 a.b`` on
row blocks, never by materialising an ``(n, n, d)`` tensor of differences.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "symmetrize",
    "matmul_nt",
    "matmul_nn",
    "pairwise_sq_dists",
    "sq_dists_from_differences",
    "metric_from_components",
    "components_from_metric",
    "sq_mahalanobis",
    "metric_view",
    "block_size",
    "sum_over_blocks",
    "weighted_scatter",
    "smallest_k",
    "kth_smallest",
    "centred_rows",
]

#: up to this k, float64 selection on a CPU is k masked argmin passes instead of ``lax.top_k``
_ARGMIN_SELECT_MAX_K = 64


def smallest_k(D, k: int, xp=jnp):
    """The ``k`` smallest entries of every row of ``D`` (last axis), smallest first: ``(values, idx)``.

    The same result as ``-lax.top_k(-D, k)`` (equal values in index order; distinct indices even when
    a row has fewer than ``k`` finite entries). XLA's CPU ``top_k`` has a fast kernel for float32
    only: in float64 it sorts every row, 3-180x slower than ``k`` masked ``argmin`` passes for
    ``k <= 30`` (``benchmarks/bench_select.py``). Float64 on a CPU therefore selects candidates in
    float32 and the result exactly in float64 (:func:`_exact_from_float32`), falling back to the
    ``argmin`` passes where float32 cannot decide. ``xp=numpy`` runs the passes on host arrays (the
    same selection, no compilation).
    """
    k = int(k)
    if xp is jnp and (D.dtype != jnp.float64 or k > _ARGMIN_SELECT_MAX_K or jax.default_backend() != "cpu"):
        neg, idx = jax.lax.top_k(-D, k)
        return -neg, idx
    if xp is jnp and k + _CANDIDATE_MARGIN < D.shape[-1]:
        return _exact_from_float32(D, k, lambda A: _argmin_passes(A, k, jnp))
    return _argmin_passes(D, k, xp)


def _argmin_passes(D, k: int, xp):
    """``k`` masked ``argmin`` passes: the selection of :func:`smallest_k`."""
    cols = xp.arange(D.shape[-1])
    taken = None
    vals, idxs = [], []
    for _ in range(k):
        masked = D if taken is None else xp.where(taken, xp.inf, D)
        i = xp.argmin(masked, axis=-1)
        v = xp.take_along_axis(masked, i[..., None], axis=-1)[..., 0]
        if taken is not None:  # a row whose remaining entries are all +inf: the first index not taken (as top_k)
            i = xp.where(v == xp.inf, xp.argmin(taken, axis=-1), i)
        vals.append(v)
        idxs.append(i)
        hit = cols == i[..., None]
        taken = hit if taken is None else taken | hit
    return xp.stack(vals, -1), xp.stack(idxs, -1).astype(xp.int32)


#: candidates beyond ``k`` that the float32 pre-selection keeps
_CANDIDATE_MARGIN = 8


def _exact_from_float32(D, k: int, fallback):
    """The ``k`` smallest float64 entries of every row, ``(values, idx)``, selected through float32.

    ``lax.top_k`` in float32 (XLA's fast CPU kernel) keeps ``k + 8`` candidates per row; their exact
    float64 values are sorted (ties in index order). Rounding to float32 is monotone, so every entry
    left out has a float32 value at least the largest candidate's, ``t``: when the ``k``-th exact
    value rounds strictly below ``t`` in every row, no entry left out can be smaller than it or tie it,
    and the result is exact. Otherwise (near-ties across the cut, NaN, overflow to float32 infinity)
    the whole block takes ``fallback(D)``.
    """
    # the barrier keeps XLA from fusing what follows into the selection: fused, it leaves the fast kernel (50x)
    neg, cand = jax.lax.optimization_barrier(
        jax.lax.top_k(-jax.lax.stop_gradient(D).astype(jnp.float32), k + _CANDIDATE_MARGIN))
    exact = jnp.take_along_axis(D, cand, axis=-1)
    order = jnp.lexsort((cand, exact), axis=-1)[..., :k]  # by value, then index
    vals = jnp.take_along_axis(exact, order, axis=-1)
    idx = jnp.take_along_axis(cand, order, axis=-1).astype(jnp.int32)
    decided = jnp.all(vals[..., -1].astype(jnp.float32) < -neg[..., -1])
    return jax.lax.cond(decided, lambda _: (vals, idx), fallback, D)


def kth_smallest(D, k):
    """``jnp.sort(D, axis=-1)[..., k]`` (``k`` 0-based, may be traced) without sorting: ``k`` masked
    ``argmin`` passes, then the minimum of what is left (see :func:`smallest_k` for why not a sort).
    With ``k`` concrete and float64 ``D``, the selection goes through float32 candidates and is exact
    (:func:`_exact_from_float32`)."""
    cols = jnp.arange(D.shape[-1])

    def drop(_, A):
        i = jnp.argmin(A, axis=-1)
        return jnp.where(cols == i[..., None], jnp.inf, A)

    def passes(A):
        return jnp.min(jax.lax.fori_loop(0, k, drop, A), axis=-1)

    if isinstance(k, (int, np.integer)) and D.dtype == jnp.float64 and k + 1 + _CANDIDATE_MARGIN < D.shape[-1]:
        vals, _ = _exact_from_float32(D, int(k) + 1, lambda A: _argmin_passes(A, int(k) + 1, jnp))
        return vals[..., -1]
    return passes(D)


def centred_rows(X):
    """``X`` minus the mean of its rows, on the host in ``X``'s precision (float64 after validation).

    Distance-based objectives do not change under a translation of the data, but their float32 form
    does: rows far from the origin keep few digits of their differences once cast to float32, and the
    GEMM form ``|a|^2 + |b|^2 - 2 a.b`` cancels the rest. The fits centre their rows before forming a
    float32 problem, so data far from the origin learn the metric of the same data at the origin."""
    X = np.asarray(X)
    return X - X.mean(axis=0)


def symmetrize(M):
    """Return ``(M + M^T) / 2``."""
    return 0.5 * (M + jnp.swapaxes(M, -1, -2))


def pairwise_sq_dists(A, B=None, xp=jnp, *, translate="mean"):
    """Squared Euclidean distances between the rows of ``A`` (..., n, d) and ``B`` (..., m, d).

    Uses one matrix product, ``|a|^2 + |b|^2 - 2 a.b`` (leading axes are batch axes), after
    translating both sides by the mean row of ``B`` (``translate="mean"``) or by its first row
    (``"row"``: rows on an integer lattice keep exact distances, so equal distances stay equal; None:
    not at all, for rows the caller has centred already): the
    distances do not change, and the expansion's cancellation is relative to the rows' spread instead
    of their distance from the origin (rows at 1e4 from it keep their neighbours in float32). Results
    are clipped at zero to remove round-off negatives (a NaN stays NaN). ``xp=numpy`` computes it on
    host arrays. The translation is held constant for differentiation (the distances do not depend on
    it).
    """
    same = B is None
    B = A if same else B
    if translate is not None:
        c = xp.mean(B, axis=-2, keepdims=True) if translate == "mean" else B[..., :1, :]
        if xp is jnp:
            c = jax.lax.stop_gradient(c)
        A = A - c
        B = A if same else B - c
    sa = xp.sum(A * A, axis=-1)
    sb = sa if same else xp.sum(B * B, axis=-1)
    return xp.maximum(sa[..., :, None] + sb[..., None, :] - 2.0 * (A @ xp.swapaxes(B, -1, -2)), 0.0)


def sq_dists_from_differences(A, B, xp=np):
    """Squared Euclidean distances ``sum_f (a_f - b_f)^2`` between the rows of ``A`` (..., n, d) and
    ``B`` (..., m, d), from the differences (memory ``n m d``).

    Slower than :func:`pairwise_sq_dists`, but duplicate rows give exactly equal distances and
    lattice-valued rows exact ones (``|a|^2 + |b|^2 - 2 a.b`` rounds them apart).
    """
    diff = A[..., :, None, :] - B[..., None, :, :]
    return xp.einsum("...ijk,...ijk->...ij", diff, diff)


def metric_from_components(L):
    """``M = L^T L`` for ``L`` of shape (n_components, n_features)."""
    return L.T @ L


def components_from_metric(M, *, tol: float | None = None) -> np.ndarray:
    """A square matrix ``L`` with ``L^T L = M`` for a symmetric PSD ``M`` (host-side, float64).

    ``L = diag(sqrt(w)) V^T`` from ``eigh`` of the symmetrised ``M``, rows ordered by decreasing
    eigenvalue. Eigenvalues within ``tol`` of zero (default ``d * eps * max|w|`` scaled, as in
    ``numpy.linalg.matrix_rank``) are treated as zero; a clearly negative eigenvalue raises
    ``NonPSDError``.
    """
    from .exceptions import NonPSDError

    M = np.asarray(M, dtype=np.float64)
    M = 0.5 * (M + M.T)
    w, V = np.linalg.eigh(M)
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    if tol is None:
        tol = 10 * M.shape[0] * np.finfo(np.float64).eps * scale
    if w.size and w[0] < -max(tol, 1e-6 * scale):
        raise NonPSDError(
            f"The metric matrix is not positive semidefinite (smallest eigenvalue {w[0]:.3g})."
        )
    w = np.where(w > tol, w, 0.0)
    order = np.argsort(w)[::-1]
    return np.sqrt(w[order])[:, None] * V[:, order].T


@jax.custom_jvp
def _nt_cpu(a, b):
    return jnp.matmul(a, jnp.transpose(b))


@_nt_cpu.defjvp
def _nt_cpu_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    # a @ db.T written as the transpose of a materialised db @ a.T: reverse mode then forms
    # (cotangent.T) @ a from a materialised transpose, a product of the "nn" form
    # (jnp functions, not operators: jax 0.8 hands the rule its primals as TypedNdArray)
    a, b, da, db = map(jnp.asarray, (a, b, da, db))
    return a @ b.T, da @ b.T + jax.lax.optimization_barrier(db @ a.T).T


@jax.custom_jvp
def _nn_cpu(a, b):
    return jnp.matmul(a, b)


@_nn_cpu.defjvp
def _nn_cpu_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    # a @ db as a product over the first axes of a materialised a.T and db: its reverse-mode
    # transpose is then a.T @ cotangent, of the "nn" form
    a, b, da, db = map(jnp.asarray, (a, b, da, db))  # (see _nt_cpu_jvp)
    at = jax.lax.optimization_barrier(a.T)
    return a @ b, da @ b + jax.lax.dot_general(at, db, (((0,), (0,)), ((), ())))


def _rows_product(cpu, plain, a, b, k):
    """``cpu`` (on a CPU) or ``plain`` of ``a``'s rows flattened to 2-D and ``b``; the result has
    ``a``'s leading shape and ``k`` columns."""
    lead = a.shape[:-1]
    flat = a.reshape(-1, a.shape[-1])
    return (cpu if jax.default_backend() == "cpu" else plain)(flat, b).reshape(lead + (k,))


def matmul_nn(a, b):
    """``a @ b`` for ``a`` (..., d) and 2-D ``b`` (d, k), whose reverse-mode derivative for ``b``
    (``a.T @ cotangent``) is formed from a materialised ``a.T`` on a CPU (see :func:`matmul_nt`)."""
    return _rows_product(_nn_cpu, jnp.matmul, a, b, b.shape[1])


def matmul_nt(a, b):
    """``a @ b.T`` for ``a`` (..., d) and 2-D ``b`` (k, d), differentiable in either mode.

    On a CPU its derivative avoids a product that contracts the first axis of its left operand,
    which reverse mode forms for ``b`` (``cotangent.T @ a``): XLA:CPU runs that form through Eigen's
    oneDNN GEMM, whose kernel is generated at the first execution in every process (about 20 ms;
    the ``a @ b`` and ``a @ b.T`` forms run through YNNPACK: about 1.5 ms). The cotangent's transpose
    is materialised instead (an ``optimization_barrier`` keeps XLA from folding it back into the
    product): a wine-sized NCA fit's first run takes 10-12 ms instead of 31-37 ms, later runs the
    same. Other backends get the plain product."""
    return _rows_product(_nt_cpu, lambda a, b: a @ b.T, a, b, b.shape[0])


def sq_mahalanobis(M, a, b):
    """Squared Mahalanobis distance ``(a-b)^T M (a-b)`` (broadcast over leading axes)."""
    diff = a - b
    return jnp.einsum("...i,ij,...j->...", diff, M, diff)


def _embed(params, Xs, param: str):
    """``(left, right, s)`` rows for the data rows ``Xs`` (any leading shape)."""
    if param == "L":
        left = matmul_nt(Xs, params)
        right = left
    elif param == "M":
        left = matmul_nn(Xs, symmetrize(params))
        right = Xs
    else:  # pragma: no cover - guarded by the registry
        raise ValueError(f"unknown parametrization {param!r}")
    return left, right, jnp.sum(left * right, axis=-1)


class LazyView:
    """A metric view that embeds rows only when they are asked for (see :func:`metric_view`)."""

    def __init__(self, params, X, param: str):
        self.params, self.X, self.param = params, X, param
        self.dim = params.shape[0] if param == "L" else X.shape[1]

    def rows(self, idx):
        return _embed(self.params, self.X[idx], self.param)


def metric_view(params, X, param: str, lazy: bool = False):
    """Factor the squared distance under ``params`` as ``s_i + s_j - 2 <left_i, right_j>``.

    For ``param == "L"``: ``left = right = X L^T``; for ``param == "M"``: ``left = X M``,
    ``right = X``. Returns ``(left, right, s)`` with ``s_i = <left_i, right_i>``. With
    ``lazy=True`` a :class:`LazyView` that embeds only the rows used (:func:`view_rows`): a
    minibatch step with sampled candidates then costs ``O((B + S) d^2)``, not ``O(N d^2)``.
    """
    if lazy:
        return LazyView(params, X, param)
    return _embed(params, X, param)


def view_rows(view, idx):
    """``(left, right, s)`` of the rows ``idx`` (an index array of any shape)."""
    if isinstance(view, LazyView):
        return view.rows(idx)
    left, right, s = view
    return left[idx], right[idx], s[idx]


def view_dim(view) -> int:
    """Dimension of the embedded rows."""
    return view.dim if isinstance(view, LazyView) else view[0].shape[-1]


def view_sq_dists(view, rows, cols=None):
    """Squared distances between ``rows`` (index array) and ``cols`` (index array or all)."""
    lr, _, sr = view_rows(view, rows)
    if cols is None:
        if isinstance(view, LazyView):
            _, rc, sc = _embed(view.params, view.X, view.param)
        else:
            _, rc, sc = view
    else:
        _, rc, sc = view_rows(view, cols)
    return jnp.maximum(sr[:, None] + sc[None, :] - 2.0 * matmul_nt(lr, rc), 0.0)


#: pairwise entries of one cache tile: a (rows x row_elements) tile this small stays in the CPU caches
#: between a pairwise product and its elementwise consumers (measured on a 2-core CPU: LMNN's exact
#: value and gradient at 5000 rows 1.6x, the impostor search 2x, NCA at 20 000 rows ~10 % faster than
#: memory-budget-sized blocks)
CACHE_TILE_ELEMENTS = 1 << 21


def tile_rows(block: int, row_elements: int, minimum: int = 16) -> int:
    """Rows per cache tile within a block of ``block`` rows: the block itself while it holds at most
    two tiles, else ``CACHE_TILE_ELEMENTS // row_elements`` rows (at least ``minimum``)."""
    if block * row_elements <= 2 * CACHE_TILE_ELEMENTS:
        return block
    return min(block, max(minimum, CACHE_TILE_ELEMENTS // max(row_elements, 1)))


def block_size(n_rows: int, row_elements: int, budget: int | None = None) -> int:
    """Rows per block so that ``rows * row_elements <= budget`` elements (at least 1).

    ``budget`` defaults to :func:`jaxdml.config.block_elements` (the library memory budget).
    """
    from .config import block_elements

    budget = block_elements() if budget is None else int(budget)
    b = max(1, budget // max(1, row_elements))
    return int(min(n_rows, b))


#: "every row, in order" as an index: ``a[ALL]`` is ``a`` itself (a slice, not a gather)
ALL = slice(None)


def index_ids(index, n: int):
    """The row numbers of ``index``: an index array as it is, :data:`ALL` as ``arange(n)``."""
    return jnp.arange(n, dtype=jnp.int32) if isinstance(index, slice) else index


def sum_over_blocks(fn: Callable, n: int, block: int, rows=None):
    """``sum_b fn(rows_b, valid_b)`` over blocks of anchor rows.

    The anchors are ``range(n)`` or, if given, the index array ``rows`` (length ``n``; e.g. a
    minibatch). ``rows_b`` is an int32 index array of length ``block`` (the last block is padded
    with index 0 and ``valid_b`` False), or :data:`ALL` when one block holds every row (``fn``
    indexes with it and gets row numbers from :func:`index_ids`). With several blocks the body is
    rematerialised in the backward pass (``jax.checkpoint``), so reverse-mode memory stays at one
    block, not ``n`` rows of pairwise work.
    """
    n_blocks = -(-n // block)
    if n_blocks == 1 and block == n and rows is None:
        # one block of every row: a slice, not an index array (a gather of every row, and a scatter
        # in the gradient, cost XLA compile and run time for nothing)
        return fn(ALL, jnp.ones(n, bool))
    pos = jnp.arange(n_blocks * block, dtype=jnp.int32)
    valid = pos < n
    pos = jnp.where(valid, pos, 0)
    idx = pos if rows is None else jnp.asarray(rows, jnp.int32)[pos]
    if n_blocks == 1:
        return fn(idx, valid)
    body = jax.checkpoint(lambda args: fn(*args))
    parts = jax.lax.map(body, (idx.reshape(n_blocks, block), valid.reshape(n_blocks, block)))
    return jax.tree_util.tree_map(lambda p: jnp.sum(p, axis=0), parts)


def weighted_scatter(X, W):
    """``sum_ij W_ij (x_i - x_j)(x_i - x_j)^T = X^T (diag(S 1) - S) X`` with ``S = W + W^T``.

    The Laplacian form avoids the ``(n, n, d, d)`` outer-product tensor.
    """
    S = W + W.T
    lap = jnp.diag(jnp.sum(S, axis=1)) - S
    return X.T @ lap @ X


def pair_scatter(X, a, b, w=None):
    """``sum_p w_p (x_{a_p} - x_{b_p})(x_{a_p} - x_{b_p})^T`` for index arrays ``a``, ``b``."""
    D = X[a] - X[b]
    return D.T @ (D if w is None else D * w[:, None])
