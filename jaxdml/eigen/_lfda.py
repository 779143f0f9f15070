"""Local Fisher Discriminant Analysis (Sugiyama, 2007): local scatters and the generalised eigenproblem."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._runtime._padding import bucket_size
from .._runtime._device import to_device
from ..linalg import kth_smallest, pairwise_sq_dists, symmetrize
from ._common import generalized_eigh
from .._runtime._executable_cache import cached_jit

__all__ = ["lfda_components", "lfda_scatters", "EMBEDDING_TYPES", "AFFINITIES"]

EMBEDDING_TYPES = ("weighted", "orthonormalized", "plain")
#: ``"local-scaling"``: ``exp(-|x_i - x_j|^2 / (sigma_i sigma_j))``; ``"neighbors"``: ``(N_ij + N_ji) / 2``
#: with ``N_ij = 1`` when ``x_j`` is among the ``k`` nearest classmates of ``x_i`` (distance <= sigma_i)
AFFINITIES = ("local-scaling", "neighbors")


def affinity_matrix(xp, d2, sigma_rows, sigma_cols, affinity: str):
    """LFDA's affinity of rows and columns with squared distances ``d2`` and local scales ``sigma``
    (``xp``: NumPy or ``jax.numpy``): ``exp(-d2 / (sigma_i sigma_j))``, or for ``"neighbors"`` the
    symmetrised indicator of ``d2 <= sigma^2`` (the ``k``-th neighbour itself included despite the
    rounding of ``sigma``)."""
    if affinity == "neighbors":
        near = 1.0 + 1e-9
        return 0.5 * ((d2 <= near * (sigma_rows * sigma_rows)[:, None]).astype(d2.dtype)
                      + (d2 <= near * (sigma_cols * sigma_cols)[None, :]).astype(d2.dtype))
    tiny = xp.finfo(d2.dtype).tiny
    return xp.exp(-d2 / xp.maximum(xp.outer(sigma_rows, sigma_cols), tiny))


def _blocks(a, block: int):
    return a.reshape((a.shape[0] // block, block) + a.shape[1:])


@functools.partial(cached_jit, static_argnames=("k", "block", "affinity"))
def _class_scatter(Xc, mask, k: int, block: int, affinity: str = "local-scaling"):
    r"""``Q_c = X_c^T (D - A) X_c = 1/2 sum_ij A_ij (x_i - x_j)(x_i - x_j)^T`` of one class, with
    the local-scaling affinity ``A_ij = exp(-|x_i - x_j|^2 / (sigma_i sigma_j))`` (``sigma_i`` the
    distance to the ``k``-th nearest other row), and ``n_c S_c`` (``S_c`` the class scatter).

    ``Xc`` is padded to a multiple of ``block`` rows (``mask`` 0 there); the affinity is formed
    ``block`` rows at a time, so memory is ``block * len(Xc)``. ``affinity="neighbors"``: the symmetrised
    ``k``-nearest-neighbour indicator ``(N_ij + N_ji) / 2`` (``N_ij = 1`` when ``|x_i - x_j| <= sigma_i``;
    ties at the ``k``-th distance are all included; the diagonal cancels in ``D - A``).
    """
    inf = jnp.asarray(jnp.inf, Xc.dtype)
    valid = mask > 0

    def scale(rows_mask):
        rows, _ = rows_mask
        d2 = jnp.where(valid[None, :], pairwise_sq_dists(rows, Xc), inf)
        return jnp.sqrt(kth_smallest(d2, k))  # column 0 is the row itself

    sigma = jax.lax.map(scale, (_blocks(Xc, block), _blocks(mask, block))).reshape(-1)
    sigma = jnp.where(valid, sigma, 0.0)

    def step(cross, blk):
        rows, rmask, rsig = blk
        A = affinity_matrix(jnp, pairwise_sq_dists(rows, Xc), rsig, sigma, affinity) * rmask[:, None] * mask[None, :]
        return cross + rows.T @ (A @ Xc), jnp.sum(A, axis=1)

    cross0 = jnp.zeros((Xc.shape[1], Xc.shape[1]), Xc.dtype)
    cross, deg = jax.lax.scan(step, cross0, (_blocks(Xc, block), _blocks(mask, block), _blocks(sigma, block)))
    Q = (Xc * deg.reshape(-1)[:, None]).T @ Xc - cross
    nc = jnp.sum(mask)
    Xm = (Xc - jnp.sum(Xc * mask[:, None], axis=0) / nc) * mask[:, None]
    return symmetrize(Q), nc * (Xm.T @ Xm)


def _padded_class(Xc, block_max: int):
    """``(Xc padded, mask, block)`` (NumPy): rows padded to a bucket size that ``block`` divides."""
    nc, d = Xc.shape
    m = bucket_size(nc)
    block = min(m, block_max)
    m = -(-m // block) * block
    out = np.zeros((m, d), Xc.dtype)
    out[:nc] = Xc
    mask = np.zeros(m, Xc.dtype)
    mask[:nc] = 1.0
    return out, mask, block


def lfda_scatters(X, codes, n_classes: int, k: int = 7, block: int = 512, affinity: str = "local-scaling"):
    r"""The local between- and within-class scatters ``(S_b, S_w)`` of LFDA.

    With the affinity ``A`` (local scaling, ``sigma_i`` the distance to the ``k``-th nearest
    neighbour in the class of ``x_i``, ``k`` clipped to the class size), the pairwise weights are
    ``W^w_ij = A_ij / n_c`` and ``W^b_ij = A_ij (1/n - 1/n_c)`` within a class ``c``, and
    ``W^w_ij = 0``, ``W^b_ij = 1/n`` across classes. Each scatter ``1/2 sum_ij W_ij (x_i -
    x_j)(x_i - x_j)^T`` is a Laplacian form ``X^T (D - W) X``, assembled class by class (in row
    blocks of ``block``), so memory stays linear in ``n``:
    ``S_w = sum_c Q_c / n_c`` and ``S_b = S_t + (sum_c Q_c - n_c S_c) / n - S_w``, with
    ``Q_c = X_c^T (D - A_c) X_c``, ``S_c`` the scatter of class ``c`` about its mean and ``S_t``
    the total scatter. ``codes`` must be concrete (NumPy). Class blocks are padded to bucket
    sizes, so classes of similar sizes share one compiled executable. ``affinity``: one of
    :data:`AFFINITIES` (LFDA's local scaling by default).
    """
    if affinity not in AFFINITIES:
        raise ValueError(f"affinity must be one of {AFFINITIES}; got {affinity!r}.")
    Xh = np.asarray(X)
    n, d = Xh.shape
    Xt = Xh - Xh.mean(axis=0)
    St = Xt.T @ Xt
    Sw = np.zeros((d, d), Xh.dtype)
    extra = np.zeros((d, d), Xh.dtype)
    codes = np.asarray(codes)
    for c in range(n_classes):
        idx = np.flatnonzero(codes == c)
        if idx.size < 2:
            continue
        Xc, mask, blk = _padded_class(Xh[idx], block)
        # NumPy arguments go to the compiled program as they are (jnp.asarray would stage each one)
        Q, scatter = (np.asarray(a) for a in _class_scatter(Xc, mask, int(min(k, idx.size - 1)), blk, affinity))
        Sw = Sw + Q / idx.size
        extra = extra + Q - scatter
    Sb = St + extra / n - Sw
    return to_device(0.5 * (Sb + Sb.T)), to_device(0.5 * (Sw + Sw.T))


def lfda_components(X, codes, n_classes: int, n_components: int, k: int = 7, embedding_type: str = "weighted",
                    reg=1e-6, block: int = 1024, affinity: str = "local-scaling"):
    r"""LFDA's map ``L`` (n_components, n_features): the leading solutions of ``S_b v = lambda S_w v``.

    ``S_w`` is symmetrised and regularised (eigenvalues of the standardised ``S_w`` floored at
    ``reg`` times the largest) and whitened, so the problem is a real symmetric eigenproblem
    (never complex eigenvectors). The eigenvectors ``V`` satisfy ``V^T S_w V = I``; the
    embedding is ``V sqrt(max(lambda, 0))`` (``"weighted"``), an orthonormal basis of the same
    subspace (``"orthonormalized"``) or ``V`` (``"plain"``).

    Returns
    -------
    L : (n_components, n_features) array.
    eigenvalues : (n_features,) the generalised eigenvalues, descending.
    """
    if embedding_type not in EMBEDDING_TYPES:
        raise ValueError(f"embedding_type must be one of {EMBEDDING_TYPES}; got {embedding_type!r}.")
    Sb, Sw = lfda_scatters(X, codes, n_classes, k, block, affinity)
    return _embedding(Sb, Sw, reg, n_components, embedding_type)


@functools.partial(cached_jit, static_argnames=("n_components", "embedding_type"))
def _embedding(Sb, Sw, reg, n_components: int, embedding_type: str):
    w, V = generalized_eigh(Sb, Sw, n_components, reg)
    if embedding_type == "weighted":
        V = V * jnp.sqrt(jnp.maximum(w[:n_components], 0.0))[None, :]
    elif embedding_type == "orthonormalized":
        V, _ = jnp.linalg.qr(V)
    return V.T, w
