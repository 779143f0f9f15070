"""Principal Component Analysis."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ._common import top_eigh


@functools.partial(jax.jit, static_argnames=("n_components",))
def pca_components(X, n_components: int):
    r"""Principal directions as the rows of ``L`` (n_components, n_features).

    Solves :math:`\max_{L L^T = I} \operatorname{tr}(L \Sigma L^T)` with :math:`\Sigma` the
    covariance of ``X``: the rows of ``L`` are the eigenvectors of :math:`\Sigma` for its largest
    eigenvalues (each with its largest entry made positive).

    Returns
    -------
    L : (n_components, n_features) array with orthonormal rows.
    explained_variance : (n_features,) all eigenvalues of the covariance, descending.
    """
    Xc = X - jnp.mean(X, axis=0)
    C = Xc.T @ Xc / jnp.maximum(X.shape[0] - 1, 1)
    _, V, w = top_eigh(C, n_components)
    return V.T, w
