"""Scatter matrices and symmetric (generalised) eigen-solvers shared by the closed-form methods."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..linalg import symmetrize


def class_means(X, codes, n_classes: int, weights=None):
    """Per-class means and counts (``weights`` masks padding rows)."""
    w = jnp.ones(X.shape[0], X.dtype) if weights is None else weights
    counts = jax.ops.segment_sum(w, codes, num_segments=n_classes)
    sums = jax.ops.segment_sum(X * w[:, None], codes, num_segments=n_classes)
    return sums / jnp.maximum(counts, 1.0)[:, None], counts


def scatter_matrices(X, codes, n_classes: int):
    """Between-class ``S_b = sum_c N_c (mu_c - mu)(mu_c - mu)^T``, within-class
    ``S_w = sum_c sum_{i in c} (x_i - mu_c)(x_i - mu_c)^T`` and the within-class residuals
    ``x_i - mu_{y_i}`` (a factor of ``S_w``)."""
    mu = jnp.mean(X, axis=0)
    means, counts = class_means(X, codes, n_classes)
    Dm = means - mu
    Sb = (Dm * counts[:, None]).T @ Dm
    Xc = X - means[codes]
    Sw = Xc.T @ Xc
    return symmetrize(Sb), symmetrize(Sw), Xc


def sign_flip(V):
    """Make the largest-magnitude entry of each column positive (deterministic output)."""
    idx = jnp.argmax(jnp.abs(V), axis=0)
    signs = jnp.sign(V[idx, jnp.arange(V.shape[1])])
    return V * jnp.where(signs == 0, 1.0, signs)


def top_eigh(S, n_components: int):
    """Eigenvectors (columns) of symmetric ``S`` for its ``n_components`` largest eigenvalues."""
    w, V = jnp.linalg.eigh(symmetrize(S))
    w, V = w[::-1], V[:, ::-1]
    return w[:n_components], sign_flip(V[:, :n_components]), w


def whitener(B=None, *, factor=None, reg=1e-6):
    """``P`` (d, d) with ``P^T (B + floor) P = I``: a whitening map for the PSD matrix ``B``.

    Prefer giving ``factor`` ``F`` with ``B = F^T F`` (e.g. within-class residuals): the SVD of the
    column-standardised ``F`` is used, which keeps float32 accurate (forming ``F^T F`` would
    square the condition number). Singular values are floored at ``sqrt(reg)`` times the largest,
    i.e. eigenvalues of the standardised ``B`` at ``reg`` times the largest - the regularisation
    of a singular ``B``. Constant columns (zero scale) are left unscaled, and ``B = 0`` (no
    within-class spread at all) gives the identity, i.e. ``A``'s own eigenproblem.
    """
    if factor is not None and factor.shape[0] >= factor.shape[1]:
        F = factor
        std = jnp.sqrt(jnp.mean(F * F, axis=0))
        std = jnp.where(std > jnp.finfo(F.dtype).eps * jnp.max(std), std, 1.0)
        _, s, Vt = jnp.linalg.svd(F / std, full_matrices=False)
        # B = 0 (e.g. one sample per class): nothing to whiten, the problem is A's own eigenproblem
        s = jnp.where(s[0] > 0, jnp.maximum(s, jnp.sqrt(reg) * s[0]), 1.0)
        return (Vt.T / s[None, :]) / std[:, None]
    if B is None:
        B = factor.T @ factor
    std = jnp.sqrt(jnp.maximum(jnp.diag(B), 0.0))
    std = jnp.where(std > jnp.finfo(B.dtype).eps * jnp.max(std), std, 1.0)
    w, V = jnp.linalg.eigh(symmetrize(B / jnp.outer(std, std)))
    top = jnp.max(w)
    w = jnp.where(top > 0, jnp.maximum(w, reg * top), 1.0)  # B = 0: A's own eigenproblem
    return (V / jnp.sqrt(w)[None, :]) / std[:, None]


def generalized_eigh(A, B=None, n_components: int = 1, reg=1e-6, *, B_factor=None):
    """Leading solutions of ``A v = lambda B v`` (symmetric A, PSD B) by whitening ``B``.

    Returns ``(eigenvalues (all, descending), V (d, n_components))`` with ``V^T B_reg V = I``.
    """
    P = whitener(B, factor=B_factor, reg=reg)
    w, U = jnp.linalg.eigh(symmetrize(P.T @ A @ P))
    w, U = w[::-1], U[:, ::-1]
    V = P @ U[:, :n_components]
    return w, sign_flip(V)
