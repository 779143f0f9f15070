"""Average Neighborhood Margin Maximization (ANMM) and its kernel version (KANMM)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jax.scipy.linalg import solve_triangular

from ..linalg import symmetrize
from ._common import sign_flip
from ._kda import kernel_coordinates
from ._truncated import leading_eigh

__all__ = ["anmm_components", "kanmm_components", "kanmm_components_truncated", "neighbourhood_scatter"]


def _average_weights(idx, mask):
    """Weights ``1 / |N_i|`` on the valid neighbours of each row (0 on masked slots)."""
    m = jnp.ones(idx.shape, jnp.result_type(float)) if mask is None else mask
    return m / jnp.maximum(jnp.sum(m, axis=1, keepdims=True), 1.0)


def neighbourhood_scatter(X, idx, weights, slotwise: bool = False):
    r"""Weighted scatter of neighbour differences, via a graph Laplacian.

    .. math:: \sum_i \sum_{j} w_{ij} (x_i - x_{\mathrm{idx}_{ij}})(x_i - x_{\mathrm{idx}_{ij}})^T
              = X^T G X,

    with ``G`` the Laplacian of the (symmetrised) neighbour graph, applied through segment sums:
    memory ``O(n k d)`` for ``idx`` of shape (n, k), never ``(n, k, d, d)`` or ``(n, n)``.

    Parameters
    ----------
    X : (n, d) array
    idx : (n, k) int array, neighbour indices of each row.
    weights : (n, k) array, ``w_ij`` (0 for padding slots).
    slotwise : bool (static)
        Gather the neighbours one slot at a time (``O(n d)`` memory instead of the ``(n, k, d)``
        gather; for large ``n d``, e.g. Nystrom features of many rows).
    """
    n, k = idx.shape
    w = weights.astype(X.dtype)
    deg = jnp.sum(w, axis=1) + jax.ops.segment_sum(w.reshape(-1), idx.reshape(-1), num_segments=n)
    if slotwise:
        pulled = sum(w[:, j, None] * X[idx[:, j]] for j in range(k))
    else:
        pulled = jnp.einsum("nk,nkd->nd", w, X[idx])  # W X, a gather (no scatter of rows)
    # X^T (D - W - W^T) X = sym(X^T (D X - 2 W X)): one product, no transposed graph
    return symmetrize(X.T @ (deg[:, None] * X - 2.0 * pulled))


def laplacian_apply(X, idx, weights):
    """``G X`` for the Laplacian ``G`` of the symmetrised neighbour graph (see :func:`neighbourhood_scatter`)."""
    n, k = idx.shape
    w = weights.astype(X.dtype)
    flat = idx.reshape(-1)
    wf = w.reshape(-1)
    pulled = jnp.einsum("nk,nkd->nd", w, X[idx])  # sum_j w_ij x_j
    pushed = jax.ops.segment_sum(wf[:, None] * jnp.repeat(X, k, axis=0), flat, num_segments=n)
    deg = jnp.sum(w, axis=1) + jax.ops.segment_sum(wf, flat, num_segments=n)
    return deg[:, None] * X - pulled - pushed


def _margin_graph(friends_idx, enemies_idx, wf, we):
    """``(idx, weights)`` of the margin's graph: the enemies with their weights, the friends with theirs
    negated. Scatters and Laplacians are linear in the weights, so its scatter is ``S - C`` and its
    Laplacian ``G_S - G_C``, each in one pass."""
    return jnp.concatenate([enemies_idx, friends_idx], axis=1), jnp.concatenate([we, -wf], axis=1)


@functools.partial(jax.jit, static_argnames=("n_components", "slotwise"))
def anmm_components(X, friends_idx, enemies_idx, n_components: int, friends_mask=None, enemies_mask=None,
                    feature_mask=None, slotwise: bool = False):
    r"""ANMM: the linear map maximising the average neighbourhood margin.

    .. math::
        \max_{L L^T = I} \operatorname{tr}\big(L (S - C) L^T\big), \quad
        S = \sum_i \sum_{k \in \mathcal{N}^e_i} \frac{(x_i - x_k)(x_i - x_k)^T}{|\mathcal{N}^e_i|}, \quad
        C = \sum_i \sum_{j \in \mathcal{N}^o_i} \frac{(x_i - x_j)(x_i - x_j)^T}{|\mathcal{N}^o_i|}

    where :math:`\mathcal{N}^o_i` = ``friends_idx[i]`` (the :math:`\xi` nearest same-class samples,
    self excluded) and :math:`\mathcal{N}^e_i` = ``enemies_idx[i]`` (the :math:`\zeta` nearest
    samples of other classes). ``tr(L (S - C) L^T)`` is the average neighbourhood margin
    :math:`\gamma^L` of the projected data. By Ky Fan's theorem (seed, thm:eigen_trace_opt) the rows
    of ``L`` are orthonormal eigenvectors of ``S - C`` for its ``n_components`` largest
    eigenvalues; the maximum is their sum. At full dimension ``L`` is orthogonal (an isometry).

    Parameters
    ----------
    X : (n, d) array
    friends_idx, enemies_idx : (n, xi) and (n, zeta) int arrays
        Precomputed neighbourhoods (host-side search; see ``jaxdml.fit(loss="anmm")``).
    n_components : int
        Rows of ``L`` (static).
    friends_mask, enemies_mask : (n, xi) and (n, zeta) arrays, optional
        1 for valid neighbours, 0 for padding (a sample with fewer valid friends averages over
        those it has; padding rows have all-zero masks).
    feature_mask : (d,) array, optional
        0 marks coordinates that carry no data (e.g. dropped kernel directions): they are ranked
        last instead of competing with negative eigenvalues.
    slotwise : bool (static)
        See :func:`neighbourhood_scatter`.

    Returns
    -------
    L : (n_components, d) array with orthonormal rows.
    eigenvalues : (d,) eigenvalues of ``S - C``, descending (the margin is the sum of the first
        ``n_components``).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> from jaxdml.eigen import anmm_components
    >>> X = jnp.asarray(np.random.default_rng(0).normal(size=(6, 3)))
    >>> friends = jnp.array([[1], [0], [3], [2], [5], [4]])
    >>> enemies = jnp.array([[2], [3], [4], [5], [0], [1]])
    >>> L, w = anmm_components(X, friends, enemies, 2)
    >>> L.shape
    (2, 3)

    References
    ----------
    F. Wang, C. Zhang. Feature extraction by maximizing the average neighborhood margin. CVPR 2007.
    """
    # one n x d x d product instead of two (see _margin_graph)
    G = neighbourhood_scatter(X, *_margin_graph(friends_idx, enemies_idx, _average_weights(friends_idx, friends_mask),
                                                _average_weights(enemies_idx, enemies_mask)), slotwise)
    if feature_mask is not None:
        # dropped coordinates have zero rows/columns; push their eigenvalues below every real one
        shift = 2.0 * (jnp.sum(jnp.abs(G)) + 1.0)
        G = G - shift * jnp.diag(1.0 - feature_mask.astype(G.dtype))
    w, V = jnp.linalg.eigh(symmetrize(G))
    w, V = w[::-1], V[:, ::-1]
    if feature_mask is not None:
        n_kept = jnp.sum(feature_mask > 0)
        w = jnp.where(jnp.arange(w.shape[0]) < n_kept, w, 0.0)
    return sign_flip(V[:, :n_components]).T, w


@functools.partial(jax.jit, static_argnames=("n_components",))
def kanmm_components(K, friends_idx, enemies_idx, n_components: int, friends_mask=None, enemies_mask=None,
                     tol=1e-10):
    r"""KANMM: ANMM in the feature space of a kernel, returned as coefficients ``A``.

    With :math:`L \phi(x) = A k(x)` (representer theorem) the problem is ANMM's in the feature
    space:

    .. math::
        \max_{L L^T = I} \operatorname{tr}\big(L (S^\phi - C^\phi) L^T\big)
        \;=\; \max_{A K A^T = I} \operatorname{tr}\big(A (\tilde S - \tilde C) A^T\big),

    with :math:`\tilde S, \tilde C` the seed's scatter/compactness matrices of the kernel columns
    :math:`K_{.i}` and :math:`A K A^T = L L^T`. It is solved by applying
    :func:`anmm_components` to the kernel coordinates ``Z`` (``Z Z^T = K``, see
    :func:`kernel_coordinates`) and mapping back, ``A = L_Z T^T``; the rows satisfy the
    generalised eigen-equation :math:`(\tilde S - \tilde C) a = \lambda K a`. Unlike the seed's
    constraint :math:`A A^T = I` (which depends on the coordinates of the span), this reduces
    exactly to ANMM for the linear kernel. Neighbourhoods are computed from feature-space
    distances :math:`K_{ii} + K_{jj} - 2K_{ij}` by the caller.

    Parameters
    ----------
    K : (n, n) kernel matrix of the training data.
    friends_idx, enemies_idx, friends_mask, enemies_mask, n_components
        As in :func:`anmm_components`.
    tol : float
        Kernel eigenvalues below ``tol`` times the largest are treated as zero.

    Returns
    -------
    A : (n_components, n) array; embed new data with ``K(X_new, X_fit) @ A.T``.
    eigenvalues : (n,) eigenvalues of the feature-space ``S - C`` (descending; 0 for dropped
        directions).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> from jaxdml.eigen import kanmm_components
    >>> X = np.random.default_rng(0).normal(size=(6, 3))
    >>> K = jnp.asarray(np.exp(-((X[:, None] - X[None]) ** 2).sum(-1)))
    >>> friends = jnp.array([[1], [0], [3], [2], [5], [4]])
    >>> enemies = jnp.array([[2], [3], [4], [5], [0], [1]])
    >>> kanmm_components(K, friends, enemies, 2)[0].shape
    (2, 6)

    References
    ----------
    F. Wang, C. Zhang. Feature extraction by maximizing the average neighborhood margin. CVPR 2007.
    """
    Z, T, keep = kernel_coordinates(K, tol)
    L, w = anmm_components(Z, friends_idx, enemies_idx, n_components, friends_mask, enemies_mask, keep)
    return L @ T.T, w


def _margin_laplacian_apply(X, friends_idx, enemies_idx, wf, we):
    """``(G_S - G_C) X``: the enemies' Laplacian minus the friends' (both symmetrised graphs)."""
    return laplacian_apply(X, *_margin_graph(friends_idx, enemies_idx, wf, we))


def _kanmm_margin_apply(op, X):
    """``G X`` for ``G = C^T (G_S - G_C) C``, never formed (``O(n^2 m)``)."""
    C, friends_idx, enemies_idx, wf, we = op
    return C.T @ _margin_laplacian_apply(C @ X, friends_idx, enemies_idx, wf, we)


@jax.jit
def _kanmm_margin_operator(K, friends_idx, enemies_idx, friends_mask, enemies_mask, row_mask, jitter):
    """The factors of ``G = C^T (G_S - G_C) C`` with ``C C^T = K + jitter I`` (Cholesky coordinates of
    the kernel) and a bound of its norm: ``|G| <= |K + jitter I| |G_S - G_C|``, each by Gershgorin (a
    Laplacian's row sums are twice the degrees)."""
    n = K.shape[0]
    dt = K.dtype
    scale = jnp.maximum(jnp.trace(K) / jnp.maximum(jnp.sum(row_mask), 1.0), jnp.finfo(dt).tiny)
    C = jnp.linalg.cholesky(symmetrize(K) + jitter * scale * jnp.eye(n, dtype=dt))
    wf = _average_weights(friends_idx, friends_mask).astype(dt)
    we = _average_weights(enemies_idx, enemies_mask).astype(dt)

    def degree(idx, w):
        return jnp.sum(w, axis=1) + jax.ops.segment_sum(w.reshape(-1), idx.reshape(-1), num_segments=n)

    bound = ((jnp.max(jnp.sum(jnp.abs(K), axis=1)) + jitter * scale)
             * 2.0 * (jnp.max(degree(friends_idx, wf)) + jnp.max(degree(enemies_idx, we))))
    # padding rows of K are zero and have no neighbours: G is zero on them (eigenvalue 0, below every
    # accepted leading eigenvalue, which the caller checks to be positive)
    return (C, friends_idx, enemies_idx, wf, we), jnp.maximum(bound, jnp.finfo(dt).tiny)


def kanmm_components_truncated(K, friends_idx, enemies_idx, n_components: int, friends_mask=None,
                               enemies_mask=None, row_mask=None, jitter=1e-10, solver="auto"):
    r"""KANMM without dense eigendecompositions: the ``n_components`` leading solutions only.

    The same problem as :func:`kanmm_components`, :math:`(\tilde S - \tilde C) a = \lambda K a`, in the
    coordinates of a Cholesky factor :math:`C C^T = K + \epsilon \bar k I` (:math:`\bar k` the mean
    diagonal of ``K``, :math:`\epsilon` = ``jitter``) instead of the eigenvectors of ``K``: the margin
    matrix :math:`G = C^T (G_S - G_C) C` (never formed: block Krylov multiplies by ``C``, the sparse
    Laplacians and ``C^T`` in turn, ``O(n^2)`` per vector) and its leading eigenvectors ``U`` by
    :func:`leading_eigh` (checked; a dense fallback forms ``G``), then :math:`A^T = C^{-T} U`. The embedding
    agrees with the dense one up to the jitter (directions of ``K`` below :math:`\epsilon \bar k`,
    which the dense path drops below ``1e-10`` of the largest eigenvalue).
    ``row_mask`` (0 on padding rows of ``K``, which have no neighbours) gives the mean diagonal of the
    real rows; padding directions have eigenvalue 0, and so (nearly) do directions in
    the (numerical) null space of ``K``: the result is the dense one only when
    the ``n_components`` leading eigenvalues are positive (``jaxdml.fit`` checks and falls back).

    Returns
    -------
    A : (n_components, n) array.
    eigenvalues : (n_components,) descending.
    info : dict from :func:`leading_eigh`.
    """
    n = K.shape[0]
    fm = jnp.ones(friends_idx.shape, K.dtype) if friends_mask is None else friends_mask
    em = jnp.ones(enemies_idx.shape, K.dtype) if enemies_mask is None else enemies_mask
    rm = jnp.ones(n, K.dtype) if row_mask is None else row_mask
    op, bound = _kanmm_margin_operator(K, friends_idx, enemies_idx, fm, em, rm, jitter)
    w, U, info = leading_eigh(op, n_components, solver=solver, apply=_kanmm_margin_apply, shape=(n, K.dtype),
                              scale=bound)
    At = solve_triangular(op[0].T, U, lower=False)
    return sign_flip(At).T, w, info
