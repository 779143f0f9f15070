"""The inverse-covariance (Mahalanobis) baseline and the inverse square root of a PSD matrix."""

from __future__ import annotations

import jax.numpy as jnp

from ..linalg import symmetrize

__all__ = ["covariance_components", "inverse_sqrt_psd", "span_restricted"]


def inverse_sqrt_psd(C, reg=1e-10, *, drop=False):
    r"""``(L, M)`` with ``L = C^{-1/2}`` (symmetric) and ``M = L^T L = C^{-1}`` for a PSD ``C``.

    A singular ``C`` is regularised: its eigenvalues are floored at ``reg`` times the largest
    (``C = 0`` gives the identity). With ``drop=True`` the directions of eigenvalues at most
    ``reg`` times the largest are left out instead (the pseudo-inverse, ``M = C^+``): when ``C`` is a
    covariance, those are the directions in which the data does not vary (a feature that is a linear
    combination of others), and a floored inverse would amplify their round-off by ``reg^{-1/2}``.

    Returns
    -------
    L : (d, d) array, ``L C_reg L^T = I`` (on the kept directions with ``drop``).
    M : (d, d) array, ``C_reg^{-1}`` (``C^+`` with ``drop``).
    """
    w, V = jnp.linalg.eigh(symmetrize(C))
    top = jnp.max(w)
    if drop:
        keep = w > reg * jnp.maximum(top, 0.0)
        inv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)
    else:
        inv = 1.0 / jnp.where(top > 0, jnp.maximum(w, reg * top), 1.0)
    L = (V * jnp.sqrt(inv)[None, :]) @ V.T
    M = (V * inv[None, :]) @ V.T
    return symmetrize(L), symmetrize(M)


def span_restricted(C, S, rtol=1e-10):
    r"""``C`` restricted to the span of the PSD matrix ``S``, as ``(C_s, B, keep)``: ``B`` an
    orthonormal basis (eigenvectors of ``S``), ``keep`` the directions with eigenvalue above ``rtol``
    times the largest, and ``C_s = B^T C B`` on the kept directions and the identity on the others
    (so that an inverse of ``C_s`` leaves those alone; map back with ``B (keep keep^T * .) B^T``)."""
    ws, B = jnp.linalg.eigh(symmetrize(S))
    keep = ws > rtol * jnp.maximum(jnp.max(ws), 0.0)
    both = keep[:, None] & keep[None, :]
    C_s = jnp.where(both, B.T @ C @ B, 0.0) + jnp.diag(jnp.where(keep, 0.0, 1.0))
    return symmetrize(C_s), B, keep


def covariance_components(X, reg=1e-10):
    r"""The Mahalanobis metric of the data's own covariance: ``M = \Sigma^{-1}``.

    :math:`\Sigma = \frac{1}{n-1} \sum_i (x_i - \mu)(x_i - \mu)^T` (as ``np.cov``); when it is
    singular, the pseudo-inverse (directions of eigenvalue at most ``reg`` times the largest, in which
    the data does not vary, are left out).

    Returns
    -------
    L : (d, d) array, ``\Sigma^{-1/2}`` (so ``L^T L = M``).
    M : (d, d) array, ``\Sigma^{-1}``.
    C : (d, d) array, the covariance ``\Sigma``.
    """
    Xc = X - jnp.mean(X, axis=0)
    C = symmetrize(Xc.T @ Xc / max(X.shape[0] - 1, 1))
    L, M = inverse_sqrt_psd(C, reg, drop=True)
    return L, M, C
