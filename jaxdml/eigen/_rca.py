"""Relevant Components Analysis (Bar-Hillel et al., 2005): the within-chunklet covariance and its whitening."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ..linalg import symmetrize
from ._common import generalized_eigh
from ._covariance import inverse_sqrt_psd, span_restricted
from .._runtime._executable_cache import cached_jit

__all__ = ["chunklet_covariance", "rca_components"]


def chunklet_covariance(X, chunks):
    r"""``C = 1/N sum_k sum_{i in k} (x_i - m_k)(x_i - m_k)^T`` over the chunklets ``k``.

    ``chunks[i]`` is the chunklet of row ``i`` (ids in ``[0, n)``) or -1 (in none); ``m_k`` is the
    mean of chunklet ``k`` and ``N`` the number of rows in chunklets.
    """
    n = X.shape[0]
    inside = chunks >= 0
    seg = jnp.where(inside, chunks, n)  # rows outside every chunklet go to a dropped segment
    w = inside.astype(X.dtype)
    counts = jax.ops.segment_sum(w, seg, num_segments=n + 1)
    sums = jax.ops.segment_sum(X * w[:, None], seg, num_segments=n + 1)
    means = sums / jnp.maximum(counts, 1.0)[:, None]
    R = (X - means[seg]) * w[:, None]
    return symmetrize(R.T @ R / jnp.maximum(jnp.sum(w), 1.0))


@functools.partial(cached_jit, static_argnames=("n_components",))
def rca_components(X, chunks, n_components: int, reg=1e-6):
    r"""RCA's map ``L`` (n_components, n_features) with ``L C L^T = I``.

    At full dimension ``L = C^{-1/2}`` (symmetric), ``C`` the within-chunklet covariance
    (:func:`chunklet_covariance`, eigenvalues floored at ``reg`` times the largest when
    singular), within the span of the data (directions in which no row varies get no weight). Below it, the paper's optional reduction first: the ``n_components`` directions
    maximising the total variance relative to the within-chunklet variance,
    ``|A^T S_t A| / |A^T C A|`` (the leading solutions of ``S_t v = lambda C v``, ``S_t`` the
    covariance of all rows), normalised so that ``V^T C V = I``; then ``L = V^T``.

    Returns
    -------
    L : (n_components, n_features) array.
    C : (n_features, n_features) array, the within-chunklet covariance.
    """
    C = chunklet_covariance(X, chunks)
    Xt = X - jnp.mean(X, axis=0)
    St = symmetrize(Xt.T @ Xt / X.shape[0])
    if n_components == X.shape[1]:
        # whiten C within the span of the data: a direction in which no row varies (a feature that is
        # a linear combination of others) has no within-chunklet variance either, and flooring it
        # would amplify its round-off; it gets no weight
        C_s, B, keep = span_restricted(C, St)
        L_s = inverse_sqrt_psd(C_s, reg)[0] * (keep[:, None] & keep[None, :])
        return symmetrize(B @ L_s @ B.T), C
    _, V = generalized_eigh(St, C, n_components, reg)
    return V.T, C
