"""Kernel local linear discriminant analysis (KLLDA): LFDA's local scatters in the feature space."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from .._runtime._device import to_device
from ..linalg import symmetrize
from ._common import sign_flip
from ._kda import kernel_coordinates
from ._lfda import affinity_matrix, lfda_scatters
from ._truncated import leading_eigh, whitened_pencil

__all__ = ["kllda_components", "kllda_landmark_components"]


@jax.jit
def _cholesky_coordinates(K, jitter):
    """``C`` with ``C C^T = K + jitter * mean(diag K) I`` and the map ``C^{-1}`` of kernel columns."""
    n = K.shape[0]
    scale = jnp.maximum(jnp.trace(K) / n, jnp.finfo(K.dtype).tiny)
    return jnp.linalg.cholesky(symmetrize(K) + jitter * scale * jnp.eye(n, dtype=K.dtype))


_kernel_coordinates = jax.jit(kernel_coordinates)


@functools.partial(jax.jit, static_argnames=("n_components",))
def _dense_solution(Sb, Sw, T, reg, n, n_components: int):
    """The dense path after the scatters, in one compiled program: the ridge, the whitened pencil, its
    eigenvectors and ``A = V^T T^T``."""
    ridge = reg * jnp.maximum(jnp.trace(Sw) / n, jnp.finfo(Sw.dtype).tiny)
    W, C = whitened_pencil(Sb, Sw, ridge)
    w, U = jnp.linalg.eigh(W)
    V = solve_triangular(C.T, U[:, ::-1][:, :n_components], lower=False)
    A = V.T @ T.T
    return sign_flip(A.T).T, w[::-1][:n_components]


@jax.jit
def _truncated_solution(C, R, U, n):
    """``A^T = C^{-T} R^{-T} U`` (zero on padding columns), with deterministic signs."""
    V = solve_triangular(R.T, U, lower=False)
    A = solve_triangular(C.T, V, lower=False).T
    A = A * (jnp.arange(C.shape[0]) < n)[None, :]
    return sign_flip(A.T).T


def _class_laplacians(K, codes, n_classes: int, n: int, k: int, affinity: str):
    r"""LFDA's local scatters of the kernel feature space as Laplacian forms of the training points:
    :math:`S_w = Z^T L_w Z`, :math:`S_b = Z^T (H + L_{bd}) Z` for any coordinates ``Z`` with
    :math:`Z Z^T = K` (NumPy, ``(n, n)``, zero across classes).

    Per class ``c`` with affinity :math:`A_c` (from the feature-space distances
    :math:`K_{ii} + K_{jj} - 2K_{ij}`, as :func:`lfda_scatters` computes them from coordinates) and
    :math:`\Lambda_c = D_c - A_c`: :math:`L_w = \oplus_c \Lambda_c / n_c` and
    :math:`L_{bd} = \oplus_c [(1/n - 1/n_c)\Lambda_c - (n_c/n) H_c]`, with :math:`H, H_c` the centring
    matrices of all points and of class ``c`` (the identity :math:`S_b = S_t + \sum_c (Q_c - n_c S_c)/n
    - S_w` of :func:`lfda_scatters`). ``O(sum_c n_c^2)`` work on the host. Returns :math:`L_w` as its
    diagonal blocks ``[(indices of class c, Lambda_c / n_c), ...]`` and :math:`L_{bd}` dense.
    """
    Kh = np.asarray(K)[:n, :n]
    diag = np.diag(Kh)
    codes = np.asarray(codes)
    blocks = []
    Lbd = np.zeros((n, n))
    for c in range(n_classes):
        idx = np.flatnonzero(codes == c)
        nc = idx.size
        if nc < 2:
            continue
        d2 = np.maximum(diag[idx, None] + diag[None, idx] - 2.0 * Kh[np.ix_(idx, idx)], 0.0)
        kk = min(k, nc - 1)
        sigma = np.sqrt(np.sort(d2, axis=1)[:, kk])  # column 0 is the row itself
        A = affinity_matrix(np, d2, sigma, sigma, affinity)
        Lam = np.diag(A.sum(axis=1)) - A
        block = np.ix_(idx, idx)
        blocks.append((idx, Lam / nc))
        Lbd[block] = (1.0 / n - 1.0 / nc) * Lam - (nc / n) * (np.eye(nc) - 1.0 / nc)
    return blocks, Lbd


@jax.jit
def _kllda_whiten(C, LwZ, reg, n):
    """``S_w = Z^T (L_w Z)`` (``Z`` the first ``n`` rows of ``C``; one ``n x n`` product), the ridge and
    the Cholesky factor ``R`` of ``S_w + rho I``."""
    m = C.shape[0]
    dt = C.dtype
    Sw = symmetrize(C[:LwZ.shape[0]].T @ LwZ)
    ridge = reg * jnp.maximum(jnp.trace(Sw) / n, jnp.finfo(dt).tiny)
    return jnp.linalg.cholesky(Sw + ridge * jnp.eye(m, dtype=dt)), ridge


def _kllda_apply(op, X):
    """``W X = R^{-1} S_b R^{-T} X`` with ``S_b X = Z^T (H + L_bd) Z X``: triangular solves and
    ``O(n^2)`` products per column, ``S_b`` never formed."""
    C, R, Lbd = op
    Z = C[:Lbd.shape[0]]
    Y = Z @ solve_triangular(R.T, X, lower=False)
    Y = Y - jnp.mean(Y, axis=0, keepdims=True) + Lbd @ Y
    return solve_triangular(R, Z.T @ Y, lower=True)


def _kllda_truncated(K, codes, n_classes: int, n_components: int, k: int, reg, affinity: str, jitter, n: int):
    blocks, Lbd = _class_laplacians(K, codes, n_classes, n, k, affinity)
    # the scale of the jitter: the mean diagonal of the n real rows
    C = _cholesky_coordinates(K, jitter * K.shape[0] / n)
    Z = np.asarray(C[:n])
    LwZ = np.zeros_like(Z)
    for idx, Lam in blocks:  # L_w is block diagonal: O(sum_c n_c^2 n) on the host, not an n x n product
        LwZ[idx] = Lam @ Z[idx]
    R, ridge = _kllda_whiten(C, to_device(LwZ), reg, float(n))
    # |W| <= |S_b| / rho <= |K| |H + L_bd| / rho (Gershgorin bounds, on the host arrays)
    bound = ((np.abs(np.asarray(K)).sum(axis=1).max() + 1.0) * (1.0 + np.abs(Lbd).sum(axis=1).max())
             / float(ridge))
    Lbd = to_device(Lbd, K.dtype)
    w, U, info = leading_eigh((C, R, Lbd), n_components, solver="truncated", apply=_kllda_apply,
                              shape=(K.shape[0], K.dtype), scale=bound)
    return _truncated_solution(C, R, U, n), w, info


def kllda_components(K, codes, n_classes: int, n_components: int, k: int = 7, reg=1e-3,
                     affinity: str = "local-scaling", solver: str = "dense", tol=1e-10, jitter=1e-10,
                     n_samples=None):
    r"""KLLDA's coefficients ``A`` (``L \phi(x) = A k(x)``): LLDA in the feature space of a kernel.

    The training points get coordinates ``Z`` in their span (:math:`Z Z^T = K`): the eigenvectors of
    ``K`` (``solver="dense"``, :func:`kernel_coordinates`) or a Cholesky factor of
    :math:`K + \epsilon \bar k I` (``solver="truncated"``, no eigendecomposition; the scatters are
    Laplacian forms of the training points, :func:`_class_laplacians`, and only :math:`S_w` is formed). Feature-space
    distances are the Euclidean distances of the rows of ``Z``, so LFDA's local scatters
    (:func:`lfda_scatters`, the same code as LFDA/LLDA) on ``Z`` are the feature-space scatters. The
    rows solve :math:`S_b v = \lambda (S_w + \rho I) v` with the ridge
    :math:`\rho = ` ``reg`` :math:`\cdot \operatorname{tr}(S_w)/n` (:math:`S_w` is singular in a feature
    space), :math:`v^T (S_w + \rho I) v = 1` (LDA's normalisation), by Cholesky whitening and either a
    dense ``eigh`` or :func:`leading_eigh` (block Krylov, residual-checked). Then ``A = V^T Z^+``.

    ``K`` may be padded with zero rows and columns beyond the first ``n_samples`` (``codes`` has
    ``n_samples`` entries): the compiled programs then depend on the padded size only. Padding
    coordinates carry no scatter; they rank below every positive eigenvalue.

    Returns
    -------
    A : (n_components, len(K)) array (zero on padding columns).
    eigenvalues : (n_components,) descending.
    info : dict (which eigensolver ran).
    """
    n = K.shape[0] if n_samples is None else int(n_samples)
    if solver != "dense":
        return _kllda_truncated(K, codes, n_classes, n_components, k, reg, affinity, jitter, n)
    Z, T, _ = _kernel_coordinates(K, tol)
    Sb, Sw = lfda_scatters(np.asarray(Z)[:n], codes, n_classes, k, 1024, affinity)
    A, w = _dense_solution(Sb, Sw, T, reg, float(n), n_components)
    return A, w, dict(solver="dense")


def kllda_landmark_components(Phi, T, codes, n_classes: int, n_components: int, k: int = 7, reg=1e-3,
                              affinity: str = "local-scaling"):
    r"""KLLDA for the Nystrom kernel :math:`\Phi \Phi^T` of ``m`` landmarks: the dense path of
    :func:`kllda_components` with the features ``Phi`` (n, r) in place of the kernel coordinates
    (LFDA's local scatters of the rows of ``Phi``, ``r x r``; class by class, memory ``O(block n_c)``)
    and ``T`` (m, r) in place of their map. Zero columns of ``Phi`` (padding) carry no scatter.

    Returns
    -------
    A : (n_components, m) array, on the landmarks.
    eigenvalues : (n_components,) descending.
    info : dict (which eigensolver ran).
    """
    Sb, Sw = lfda_scatters(Phi, codes, n_classes, k, 1024, affinity)
    A, w = _dense_solution(Sb, Sw, T, reg, float(Phi.shape[0]), n_components)
    return A, w, dict(solver="dense")
