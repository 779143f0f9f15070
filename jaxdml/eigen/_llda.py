"""Kernel local linear discriminant analysis (KLLDA): LFDA's local scatters in the feature space."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from ..linalg import symmetrize
from ._common import sign_flip
from ._kda import kernel_coordinates
from ._lfda import lfda_scatters
from ._truncated import leading_eigh, whitened_pencil

__all__ = ["kllda_components"]


@jax.jit
def _cholesky_coordinates(K, jitter):
    """``C`` with ``C C^T = K + jitter * mean(diag K) I`` and the map ``C^{-1}`` of kernel columns."""
    n = K.shape[0]
    scale = jnp.maximum(jnp.trace(K) / n, jnp.finfo(K.dtype).tiny)
    return jnp.linalg.cholesky(symmetrize(K) + jitter * scale * jnp.eye(n, dtype=K.dtype))


_kernel_coordinates = jax.jit(kernel_coordinates)


@jax.jit
def _dense_pencil(Sb, Sw, ridge):
    W, C = whitened_pencil(Sb, Sw, ridge)
    w, U = jnp.linalg.eigh(W)
    return w[::-1], U[:, ::-1], C


def kllda_components(K, codes, n_classes: int, n_components: int, k: int = 7, reg=1e-3,
                     affinity: str = "local-scaling", solver: str = "dense", tol=1e-10, jitter=1e-10,
                     n_samples=None):
    r"""KLLDA's coefficients ``A`` (``L \phi(x) = A k(x)``): LLDA in the feature space of a kernel.

    The training points get coordinates ``Z`` in their span (:math:`Z Z^T = K`): the eigenvectors of
    ``K`` (``solver="dense"``, :func:`kernel_coordinates`) or a Cholesky factor of
    :math:`K + \epsilon \bar k I` (``solver="truncated"``, no eigendecomposition). Feature-space
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
    if solver == "dense":
        Z, T, _ = _kernel_coordinates(K, tol)
    else:
        Z = _cholesky_coordinates(K, jitter)
    Sb, Sw = lfda_scatters(Z[:n], codes, n_classes, k, 1024, affinity)
    ridge = reg * jnp.maximum(jnp.trace(Sw) / n, jnp.finfo(K.dtype).tiny)
    if solver == "dense":
        w, U, C = _dense_pencil(Sb, Sw, ridge)
        w, U, info = w[:n_components], U[:, :n_components], dict(solver="dense")
    else:
        W, C = whitened_pencil(Sb, Sw, ridge)
        w, U, info = leading_eigh(W, n_components, solver="truncated")
    V = solve_triangular(C.T, U, lower=False)
    if solver == "dense":
        A = V.T @ T.T
    else:
        A = solve_triangular(Z.T, V, lower=False).T  # A^T = Z^{-T} V, Z lower triangular
        A = A * (jnp.arange(K.shape[0]) < n)[None, :]
    return sign_flip(A.T).T, w, info
