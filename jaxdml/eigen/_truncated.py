"""Leading eigenpairs without a full dense eigendecomposition (block Krylov), with an exactness check.

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
from jax.scipy.linalg import solve_triangular

from ..linalg import symmetrize
from ._common import sign_flip

__all__ = ["leading_eigh", "TRUNCATED_MAX_COMPONENTS", "use_truncated", "whitened_pencil"]

#: ``solver="auto"`` uses the iterative solver up to this many components
TRUNCATED_MAX_COMPONENTS = 50
#: and from this many rows (below, a dense ``eigh`` is cheap anyway)
TRUNCATED_MIN_ROWS = 400


#: Krylov blocks per restart (the basis has ``(DEPTH + 1) * block`` columns)
DEPTH = 6


def _block(n: int, k: int) -> int:
    """Block size: ``k`` plus oversampling (faster convergence of the ``k``-th pair); the Krylov basis
    must fit, ``(DEPTH + 1) * block <= n / 2``."""
    return int(min(max(2 * k, k + 10), n // (2 * (DEPTH + 1))))


def use_truncated(solver: str, n: int, k: int) -> bool:
    """Whether ``solver`` ("auto", "dense", "truncated") means the iterative path for ``k`` of ``n``."""
    if solver not in ("auto", "dense", "truncated"):
        raise ValueError(f"eigen_solver must be 'auto', 'dense' or 'truncated'; got {solver!r}.")
    if solver == "dense" or _block(n, k) < k:
        return False
    if solver == "truncated":
        return True
    return k <= TRUNCATED_MAX_COMPONENTS and n >= TRUNCATED_MIN_ROWS


def _matmul(W, X):
    return W @ X


@functools.partial(jax.jit, static_argnames=("apply", "k", "depth"))
def _krylov_step(apply, operand, X, scale, k: int, depth: int):
    """One restart of block Krylov with Rayleigh-Ritz: the basis ``[X, W X, ..., W^depth X]`` (blocks
    orthogonalised against the previous ones twice, then QR), the Ritz pairs of ``W`` on it, the
    ``block`` leading Ritz vectors (the next start) and the largest residual of the ``k`` first relative
    to the largest Ritz value in magnitude (a lower bound of the norm of ``W``, so the test is never
    looser than one relative to the norm itself). ``W X`` is ``apply(operand, X)``: a dense matrix or a
    product of factors that is never formed; ``scale`` (any bound of the norm) only keeps the products
    of order one.

    A Krylov subspace of depth ``q`` captures the extreme eigenvectors at the rate of a degree-``q``
    Chebyshev polynomial (the square root of the gap, where the power method has the gap itself); the
    graph is ``depth`` products and QR factorisations, cheap to compile.
    """
    Q, _ = jnp.linalg.qr(X)
    basis, products = [Q], []
    for _ in range(depth):
        P = apply(operand, basis[-1]) / scale
        products.append(P)
        B = jnp.concatenate(basis, axis=1)
        Y = P
        for _ in range(2):  # twice is enough (Kahan)
            Y = Y - B @ (B.T @ Y)
        Y, _ = jnp.linalg.qr(Y)
        basis.append(Y)
    products.append(apply(operand, basis[-1]) / scale)
    # the blocks are orthonormal (twice orthogonalised), so W B is the products already computed
    B = jnp.concatenate(basis, axis=1)
    WB = jnp.concatenate(products, axis=1)
    theta, S = jnp.linalg.eigh(symmetrize(B.T @ WB))
    top = S[:, ::-1][:, :X.shape[1]]
    U = B @ top
    lam = theta[::-1][:k]
    resid = jnp.linalg.norm(WB @ top[:, :k] - U[:, :k] * lam[None, :], axis=0)
    norm = jnp.maximum(jnp.max(jnp.abs(theta)), jnp.finfo(theta.dtype).tiny)
    return lam * scale, U, jnp.max(resid) / norm


@jax.jit
def _gershgorin(W):
    return jnp.maximum(jnp.max(jnp.sum(jnp.abs(W), axis=1)), jnp.finfo(W.dtype).tiny)


@functools.partial(jax.jit, static_argnames=("k",))
def _dense(W, k: int):
    w, V = jnp.linalg.eigh(symmetrize(W))
    return w[::-1][:k], V[:, ::-1][:, :k]


@functools.partial(jax.jit, static_argnames=("apply", "n", "dtype"))
def _form(apply, operand, n: int, dtype):
    return apply(operand, jnp.eye(n, dtype=dtype))


def leading_eigh(W, k: int, *, solver: str = "auto", rtol: float = 1e-8, max_iter: int = 100, seed: int = 0,
                 apply=None, shape=None, scale=None):
    r"""The ``k`` largest eigenpairs of a symmetric matrix ``W`` (float64 recommended).

    ``solver="truncated"`` (or ``"auto"`` for ``k <= 50`` and ``n >= 400``) runs restarted block Krylov
    iterations with Rayleigh-Ritz (a Lanczos-type method; ``jnp`` products and QR factorisations, on the
    accelerator when there is one) with a block of ``max(2k, k + 10)`` vectors from a seeded Gaussian
    start, restarted from the leading Ritz vectors. (JAX's LOBPCG was tried first: it gives the same
    answers but its program took 10-40 s to compile on a loaded 2-core CPU.) The result is accepted when every
    residual :math:`\|W v - \theta v\|` is below ``rtol`` times the largest Ritz value in magnitude (a
    lower bound of :math:`\|W\|`); then each eigenvector is within an angle of about ``residual / gap``
    of the exact one (Davis-Kahan). Otherwise the dense ``eigh`` is used and ``info["solver"]`` says so.

    ``W`` need not be formed: with ``apply`` (a module-level function, ``apply(W, X)`` = the product of
    the operator with an ``(n, m)`` block), ``W`` is whatever ``apply`` takes (arrays, a tuple of factors),
    ``shape=(n, dtype)`` and ``scale`` is any bound of the operator's norm. Each product then costs what
    the factors cost (``O(n^2 m)`` for dense ``n x n`` factors) instead of an ``O(n^3)`` product to form
    ``W``; only the dense fallback forms it.

    Returns
    -------
    w : (k,) eigenvalues, descending.
    V : (n, k) orthonormal eigenvectors (deterministic signs).
    info : dict with ``solver`` ("dense", "block Krylov" or "dense (block Krylov inaccurate)") and
        ``max_residual`` (relative; 0 for the dense solver), ``restarts`` (block Krylov). At most ``max_iter`` products with ``W``
        (in restarts of ``DEPTH`` = 6), the residuals checked after each restart.
    """
    if apply is None:
        apply, (n, dtype) = _matmul, (W.shape[0], W.dtype)
    elif shape is None or scale is None:
        raise ValueError("leading_eigh with an operator (apply=...) needs shape=(n, dtype) and a norm bound scale=.")
    else:
        n, dtype = shape
    if not use_truncated(solver, n, k):
        w, V = _dense(W if apply is _matmul else _form(apply, W, n, dtype), k)
        return w, sign_flip(V), dict(solver="dense", max_residual=0.0)
    block, depth = _block(n, k), DEPTH
    U = jax.random.normal(jax.random.PRNGKey(seed), (n, block), dtype=dtype)
    shift = _gershgorin(W) if scale is None else jnp.asarray(scale, dtype)
    rel = np.inf
    for restarts in range(1, -(-max_iter // depth) + 1):
        w, U, rel = _krylov_step(apply, W, U, shift, k, depth)
        rel = float(rel)
        if rel <= rtol or not np.isfinite(rel):
            break
    V = U[:, :k]
    if not np.isfinite(rel) or rel > rtol:
        w, V = _dense(W if apply is _matmul else _form(apply, W, n, dtype), k)
        return w, sign_flip(V), dict(solver="dense (block Krylov inaccurate)", max_residual=rel,
                                     restarts=restarts)
    return w, sign_flip(V), dict(solver="block Krylov", max_residual=rel, restarts=restarts)


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
