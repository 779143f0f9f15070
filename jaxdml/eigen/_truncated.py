"""Leading eigenpairs without a full dense eigendecomposition (LOBPCG), with an exactness check.

Kernel methods need the ``k`` leading eigenvectors of an ``n x n`` symmetric matrix (``n`` training
samples); when ``k`` is small a block iterative solver costs ``O(n^2 k)`` per iteration instead of the
``O(n^3)`` (with a large constant) of ``eigh``. The generalised problems are reduced to standard ones by
Cholesky whitening. Every truncated result is checked by its residuals; a result that is not accurate
falls back to the dense solver (and says so), so the answer never silently differs from the dense one.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.sparse.linalg import lobpcg_standard
from jax.scipy.linalg import solve_triangular

from ..linalg import symmetrize
from ._common import sign_flip

__all__ = ["leading_eigh", "TRUNCATED_MAX_COMPONENTS", "use_truncated", "whitened_pencil"]

#: ``solver="auto"`` uses the iterative solver up to this many components
TRUNCATED_MAX_COMPONENTS = 50
#: and from this many rows (below, a dense ``eigh`` is cheap anyway)
TRUNCATED_MIN_ROWS = 400


def _block(n: int, k: int) -> int:
    """Block size: ``k`` plus oversampling (faster convergence of the ``k``-th pair), ``5 * block < n``."""
    return int(min(max(2 * k, k + 10), (n - 1) // 5))


def use_truncated(solver: str, n: int, k: int) -> bool:
    """Whether ``solver`` ("auto", "dense", "truncated") means the iterative path for ``k`` of ``n``."""
    if solver not in ("auto", "dense", "truncated"):
        raise ValueError(f"eigen_solver must be 'auto', 'dense' or 'truncated'; got {solver!r}.")
    if solver == "dense" or _block(n, k) < k:
        return False
    if solver == "truncated":
        return True
    return k <= TRUNCATED_MAX_COMPONENTS and n >= TRUNCATED_MIN_ROWS


@functools.partial(jax.jit, static_argnames=("k", "chunk"))
def _lobpcg_chunk(W, X, shift, k: int, chunk: int):
    """``chunk`` LOBPCG iterations from the block ``X`` and the residuals of the ``k`` leading pairs.

    LOBPCG returns the largest eigenvalues; the shift (a Gershgorin bound) makes ``W + shift I`` positive
    definite without changing the eigenvectors. Its own stopping rule asks every vector of the block
    (oversampling included) to converge, so it runs a fixed ``chunk`` of iterations and the caller checks
    the ``k`` pairs it needs.
    """
    Ws = W + shift * jnp.eye(W.shape[0], dtype=W.dtype)
    theta, U, _ = lobpcg_standard(Ws, X, m=chunk, tol=jnp.finfo(W.dtype).eps)
    lam = theta[:k] - shift
    resid = jnp.linalg.norm(W @ U[:, :k] - U[:, :k] * lam[None, :], axis=0)
    return lam, U, jnp.max(resid) / shift


@jax.jit
def _gershgorin(W):
    return jnp.maximum(jnp.max(jnp.sum(jnp.abs(W), axis=1)), jnp.finfo(W.dtype).tiny)


@functools.partial(jax.jit, static_argnames=("k",))
def _dense(W, k: int):
    w, V = jnp.linalg.eigh(symmetrize(W))
    return w[::-1][:k], V[:, ::-1][:, :k]


def leading_eigh(W, k: int, *, solver: str = "auto", rtol: float = 1e-8, max_iter: int = 100, seed: int = 0):
    r"""The ``k`` largest eigenpairs of a symmetric matrix ``W`` (float64 recommended).

    ``solver="truncated"`` (or ``"auto"`` for ``k <= 50`` and ``n >= 400``) runs LOBPCG
    (:func:`jax.experimental.sparse.linalg.lobpcg_standard`, on the accelerator when there is one) with
    a block of ``max(2k, k + 10)`` vectors from a seeded Gaussian start. The result is accepted when every
    residual :math:`\|W v - \theta v\|` is below ``rtol`` times the spectral bound of ``W``; then each
    eigenvector is within an angle of about ``residual / gap`` of the exact one (Davis-Kahan). Otherwise
    the dense ``eigh`` is used and ``info["solver"]`` says so.

    Returns
    -------
    w : (k,) eigenvalues, descending.
    V : (n, k) orthonormal eigenvectors (deterministic signs).
    info : dict with ``solver`` ("dense", "lobpcg" or "dense (lobpcg inaccurate)") and
        ``max_residual`` (relative; 0 for the dense solver). The iterations run in chunks of 10 (at most
    ``max_iter``), the residuals checked after each.
    """
    n = W.shape[0]
    if not use_truncated(solver, n, k):
        w, V = _dense(W, k)
        return w, sign_flip(V), dict(solver="dense", max_residual=0.0)
    block, chunk = _block(n, k), 10
    U = jax.random.normal(jax.random.PRNGKey(seed), (n, block), dtype=W.dtype)
    shift = _gershgorin(W)
    rel = np.inf
    for _ in range(-(-max_iter // chunk)):
        w, U, rel = _lobpcg_chunk(W, U, shift, k, chunk)
        rel = float(rel)
        if rel <= rtol or not np.isfinite(rel):
            break
    V = U[:, :k]
    if not np.isfinite(rel) or rel > rtol:
        w, V = _dense(W, k)
        return w, sign_flip(V), dict(solver="dense (lobpcg inaccurate)", max_residual=rel)
    return w, sign_flip(V), dict(solver="lobpcg", max_residual=rel)


@jax.jit
def whitened_pencil(A, B, ridge):
    r"""Reduce :math:`A v = \lambda (B + \rho I) v` to a standard problem by Cholesky whitening.

    With :math:`B + \rho I = C C^T`: :math:`W = C^{-1} A C^{-T}` has the same eigenvalues, and
    :math:`v = C^{-T} u` for an eigenvector ``u`` of ``W`` (then :math:`v^T (B + \rho I) v = 1`).
    Two triangular solves and one Cholesky factorisation (``n^3 / 3``), no eigendecomposition.

    Returns
    -------
    W : (n, n) symmetric.
    C : (n, n) lower Cholesky factor (map back with ``solve_triangular(C.T, U, lower=False)``).
    """
    n = A.shape[0]
    C = jnp.linalg.cholesky(symmetrize(B) + ridge * jnp.eye(n, dtype=A.dtype))
    W = solve_triangular(C, solve_triangular(C, symmetrize(A), lower=True).T, lower=True)
    return symmetrize(W), C
