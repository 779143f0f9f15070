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
    """Between-class ``S_b = sum_c N_c (mu_c - mu)(mu_c - mu)^T`` and within-class
    ``S_w = sum_c sum_{i in c} (x_i - mu_c)(x_i - mu_c)^T``."""
    mu = jnp.mean(X, axis=0)
    means, counts = class_means(X, codes, n_classes)
    Dm = means - mu
    Sb = (Dm * counts[:, None]).T @ Dm
    Xc = X - means[codes]
    Sw = Xc.T @ Xc
    return symmetrize(Sb), symmetrize(Sw)


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


def whitener(B, reg):
    """``P`` with ``P^T (B + eps I) P = I`` on the range kept, via ``eigh`` (robust when ``B`` is
    singular): eigenvalues of ``B`` are floored at ``reg * max eigenvalue``."""
    w, V = jnp.linalg.eigh(symmetrize(B))
    floor = reg * jnp.maximum(jnp.max(w), jnp.finfo(w.dtype).tiny)
    w = jnp.maximum(w, floor)
    return V / jnp.sqrt(w)[None, :]


def generalized_eigh(A, B, n_components: int, reg):
    """Leading solutions of ``A v = lambda B v`` (symmetric A, PSD B) by whitening ``B``.

    Returns ``(eigenvalues (all, descending), V (d, n_components))`` with ``V^T B_reg V = I``.
    """
    P = whitener(B, reg)
    w, U = jnp.linalg.eigh(symmetrize(P.T @ A @ P))
    w, U = w[::-1], U[:, ::-1]
    V = P @ U[:, :n_components]
    return w, sign_flip(V)
