"""The inverse-covariance (Mahalanobis) baseline and the inverse square root of a PSD matrix."""

from __future__ import annotations

import jax.numpy as jnp

from ..linalg import symmetrize

__all__ = ["covariance_components", "inverse_sqrt_psd"]


def inverse_sqrt_psd(C, reg=1e-10):
    r"""``(L, M)`` with ``L = C^{-1/2}`` (symmetric) and ``M = L^T L = C^{-1}`` for a PSD ``C``.

    A singular ``C`` is regularised: its eigenvalues are floored at ``reg`` times the largest
    (``C = 0`` gives the identity).

    Returns
    -------
    L : (d, d) array, ``L C_reg L^T = I``.
    M : (d, d) array, ``C_reg^{-1}``.
    """
    w, V = jnp.linalg.eigh(symmetrize(C))
    top = jnp.max(w)
    w = jnp.where(top > 0, jnp.maximum(w, reg * top), 1.0)
    L = (V / jnp.sqrt(w)[None, :]) @ V.T
    M = (V / w[None, :]) @ V.T
    return symmetrize(L), symmetrize(M)


def covariance_components(X, reg=1e-10):
    r"""The Mahalanobis metric of the data's own covariance: ``M = \Sigma^{-1}``.

    :math:`\Sigma = \frac{1}{n-1} \sum_i (x_i - \mu)(x_i - \mu)^T` (as ``np.cov``), regularised
    when singular (eigenvalues floored at ``reg`` times the largest).

    Returns
    -------
    L : (d, d) array, ``\Sigma^{-1/2}`` (so ``L^T L = M``).
    M : (d, d) array, ``\Sigma^{-1}``.
    C : (d, d) array, the covariance ``\Sigma``.
    """
    Xc = X - jnp.mean(X, axis=0)
    C = symmetrize(Xc.T @ Xc / max(X.shape[0] - 1, 1))
    L, M = inverse_sqrt_psd(C, reg)
    return L, M, C
