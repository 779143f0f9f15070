"""Linear Discriminant Analysis."""

from __future__ import annotations

import functools

import jax

from ._common import generalized_eigh, scatter_matrices


@functools.partial(jax.jit, static_argnames=("n_components", "n_classes"))
def lda_components(X, codes, n_components: int, n_classes: int, reg=1e-6):
    r"""Discriminant directions as the rows of ``L`` (n_components, n_features).

    Maximises :math:`\operatorname{tr}((L S_w L^T)^{-1} L S_b L^T)`: the rows of ``L`` are the
    generalised eigenvectors of :math:`S_b v = \lambda S_w v` with the largest eigenvalues
    (at most ``n_classes - 1`` are informative), normalised so that :math:`L S_w L^T = I`.
    ``S_w`` is whitened through the SVD of the (feature-standardised) within-class residuals,
    which stays accurate in float32, and regularised when singular: its standardised eigenvalues
    are floored at ``reg`` times the largest (``reg`` is traced).

    Returns
    -------
    L : (n_components, n_features) array.
    eigenvalues : (n_features,) the generalised eigenvalues, descending.
    """
    Sb, Sw, residuals = scatter_matrices(X, codes, n_classes)
    w, V = generalized_eigh(Sb, Sw, n_components, reg, B_factor=residuals)
    return V.T, w
