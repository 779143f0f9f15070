"""Miners: pure functions of a batch that return index tuples (fixed size, with a mask, so they jit).

A miner selects the pairs or triplets a loss should use from the batch's current distances (held
constant: indices carry no gradient). Its output goes to a loss's ``pairs=`` / ``triplets=``, or the
miner itself to its ``miner=`` (with the loss's ``distance``, ``L`` and ``mask``, and its references).
With ``ref_emb`` / ``ref_labels`` / ``ref_mask`` (see :mod:`jaxdml.losses.deep._refs`) a miner selects
among the (batch row, reference) pairs: anchors index the batch, the other indices the references, and a
B * B grid of slots becomes B * R (B * R * R for :func:`batch_all`). Selections are made
on the smaller-is-closer form of the measure (a similarity ``s`` enters as ``-s``), and thresholds
stay on the measure's own scale, as in the losses.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ._base import SIMILARITIES, apply_map, check_distance, check_real, dense, dissimilarity
from ._refs import check_ref_batch, label_masks
from ._tuples import Pairs, Triplets, grid

__all__ = ["batch_hard", "batch_all", "semi_hard", "multi_similarity_pairs", "pair_margin"]


def _batch(embeddings, labels, distance, L, mask, ref_emb=None, ref_labels=None, ref_mask=None):
    """``(D, V, pos, neg, kind)``: the batch's dense measure ``V`` (constant), its smaller-is-closer
    form ``D``, and the (B, B) masks of positive and negative pairs; with references (B, R), between the
    batch's rows and the references' (:mod:`jaxdml.losses.deep._refs`)."""
    kind = check_distance(distance)
    b = check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask)
    Zm = apply_map(b.Z, L)
    Rm = apply_map(b.R, L) if b.has_ref else Zm
    V = jax.lax.stop_gradient(dense(Zm, Rm, kind, jnp.any(b.rows, axis=0) if b.has_ref else b.valid))
    pos, neg = label_masks(b)
    return dissimilarity(V, kind), V, pos, neg, kind


def batch_hard(embeddings, labels, *, distance="euclidean", L=None, mask=None, ref_emb=None,
               ref_labels=None, ref_mask=None) -> Triplets:
    r"""Batch-hard triplets: for every anchor, its farthest positive and its closest negative.

    .. math::

        p(a) = \arg\max_{p: y_p = y_a, p \ne a} d(a, p), \qquad n(a) = \arg\min_{n: y_n \ne y_a} d(a, n)

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="euclidean"
    L : (k, d) array, optional
        A learned linear map applied first.
    mask : (B,) bool array, optional
        False for padded rows (never selected).

    Returns
    -------
    Triplets
        B slots, one per anchor row; the mask is False for an anchor without a positive or a negative
        (or padded). Ties go to the lower row index.

    References
    ----------
    A. Hermans, L. Beyer, B. Leibe. In Defense of the Triplet Loss for Person Re-Identification.
    arXiv:1703.07737, 2017.
    """
    D, _, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    hard_p = jnp.argmax(jnp.where(pos, D, -jnp.inf), axis=1).astype(jnp.int32)
    hard_n = jnp.argmin(jnp.where(neg, D, jnp.inf), axis=1).astype(jnp.int32)
    ok = jnp.any(pos, axis=1) & jnp.any(neg, axis=1)
    return Triplets(jnp.arange(D.shape[0], dtype=jnp.int32), hard_p, hard_n, ok)


def batch_all(embeddings, labels, *, margin=None, size=None, distance="euclidean", L=None, mask=None, ref_emb=None,
              ref_labels=None, ref_mask=None) -> Triplets:
    r"""Every valid triplet of the batch, optionally only those that violate the margin.

    A triplet ``(a, p, n)`` has ``y_p = y_a``, ``p != a``, ``y_n != y_a``; with ``margin`` it is kept
    only if :math:`d(a, n) < d(a, p) + m` (its hinge loss is positive: Hermans et al.'s "batch all"
    averaged over the active triplets).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    margin : float, optional
        Keep only triplets with a positive hinge :math:`m + d(a, p) - d(a, n)`.
    size : int, optional
        Number of slots. Default: the whole (B * B * B) grid, slot ``(a * B + p) * B + n``. With
        ``size``, the kept triplets are packed first, in grid order; if there are more than ``size``,
        the first ``size`` of them are returned.
    distance, L, mask
        As in :func:`batch_hard`.

    Returns
    -------
    Triplets
        Memory O(B^3) booleans while mining.

    References
    ----------
    A. Hermans, L. Beyer, B. Leibe. In Defense of the Triplet Loss for Person Re-Identification.
    arXiv:1703.07737, 2017 ("batch all", and the average over active triplets).
    """
    D, _, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    keep = pos[:, :, None] & neg[:, None, :]
    if margin is not None:
        check_real("margin", margin, low=0.0, strict=False)
        keep = keep & (D[:, None, :] < D[:, :, None] + margin)
    n, n_ref = D.shape
    if size is None:
        a, p, q = grid(n, 3, n_ref)
        return Triplets(a, p, q, keep.reshape(-1))
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"size must be a positive int (number of triplet slots); got {size!r}.")
    size = int(size)
    (flat,) = jnp.nonzero(keep.reshape(-1), size=size, fill_value=0)
    count = jnp.sum(keep)
    a, rest = jnp.divmod(flat, n_ref * n_ref)
    p, q = jnp.divmod(rest, n_ref)
    i32 = jnp.int32
    return Triplets(a.astype(i32), p.astype(i32), q.astype(i32), jnp.arange(size) < count)


def semi_hard(embeddings, labels, *, margin=0.2, distance="euclidean", L=None, mask=None, ref_emb=None,
              ref_labels=None, ref_mask=None) -> Triplets:
    r"""Semi-hard triplets: for every positive pair, the closest negative farther than the positive
    but within the margin.

    .. math::

        n(a, p) = \arg\min_{n} \{\, d(a, n) : y_n \ne y_a,\ d(a, p) < d(a, n) < d(a, p) + m \,\}

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    margin : float, default=0.2
    distance, L, mask
        As in :func:`batch_hard`.

    Returns
    -------
    Triplets
        B * B slots, slot ``a * B + p`` for the positive pair ``(a, p)``; the mask is False where the
        pair is not positive or has no semi-hard negative. Ties in distance go to the lower row index.
        Every semi-hard triplet (not one per positive pair): :func:`triplet_margin_miner` with
        ``kind="semihard"``.
        Each anchor's negatives are sorted once and searched for every positive: O(B^2 log B) time,
        O(B^2) memory.

    References
    ----------
    F. Schroff, D. Kalenichenko, J. Philbin. FaceNet: A Unified Embedding for Face Recognition and
    Clustering. CVPR 2015.
    """
    check_real("margin", margin, low=0.0, strict=False)
    D, _, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    n, n_ref = D.shape
    # each anchor's negatives sorted by distance (stable: equal distances in row order), then for each
    # positive the first negative strictly farther than it: O(B^2 log B), not a (B, B, B) search
    order = jnp.argsort(jnp.where(neg, D, jnp.inf), axis=1, stable=True).astype(jnp.int32)
    sorted_d = jnp.take_along_axis(jnp.where(neg, D, jnp.inf), order, axis=1)
    first = jax.vmap(lambda row, q: jnp.searchsorted(row, q, side="right"))(sorted_d, D)  # (B, B)
    first = jnp.minimum(first, n_ref - 1).astype(jnp.int32)
    d_an = jnp.take_along_axis(sorted_d, first, axis=1)
    ok = pos & (d_an > D) & (d_an < D + margin)  # finite and inside the margin
    a, p = grid(n, 2, n_ref)
    return Triplets(a, p, jnp.take_along_axis(order, first, axis=1).reshape(-1), ok.reshape(-1))


def multi_similarity_pairs(embeddings, labels, *, epsilon=0.1, distance="cosine", L=None, mask=None, ref_emb=None,
                           ref_labels=None, ref_mask=None) -> Pairs:
    r"""The multi-similarity miner: informative pairs relative to the anchor's hardest opposite pair.

    .. math::

        \text{negative } (i, j) \text{ kept if } S_{ij} > \min_{k: y_k = y_i} S_{ik} - \epsilon,
        \qquad \text{positive } (i, j) \text{ kept if } S_{ij} < \max_{k: y_k \ne y_i} S_{ik} + \epsilon

    with :math:`S` the similarity (a distance enters as :math:`S = -d`, so that :math:`\epsilon` is on
    the distance's scale). An anchor without positives keeps no negatives and one without negatives
    keeps no positives.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    epsilon : float, default=0.1
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="cosine"
    L, mask
        As in :func:`batch_hard`.

    Returns
    -------
    Pairs
        B * B slots, slot ``i * B + j`` for the pair ``(i, j)``.

    References
    ----------
    X. Wang, X. Han, W. Huang, D. Dong, M. R. Scott. Multi-Similarity Loss with General Pair Weighting
    for Deep Metric Learning. CVPR 2019 (Section 4.2, Eqs. 12-13).
    """
    check_real("epsilon", epsilon, low=0.0, strict=False)
    D, _, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    S = -D
    hardest_pos = jnp.min(jnp.where(pos, S, jnp.inf), axis=1, keepdims=True)
    hardest_neg = jnp.max(jnp.where(neg, S, -jnp.inf), axis=1, keepdims=True)
    keep_neg = neg & (S > hardest_pos - epsilon)
    keep_pos = pos & (S < hardest_neg + epsilon)
    return _grid_pairs(pos, keep_pos | keep_neg)


def pair_margin(embeddings, labels, *, pos_margin=None, neg_margin=None, distance="euclidean", L=None,
                mask=None, ref_emb=None,
                ref_labels=None, ref_mask=None) -> Pairs:
    r"""Pairs that violate a margin: positives farther than ``pos_margin``, negatives closer than
    ``neg_margin``.

    With a distance: positive pairs with :math:`d > m^+` and negative pairs with :math:`d < m^-`; with
    a similarity: positives with :math:`s < m^+` and negatives with :math:`s > m^-`. These are the pairs
    with a non-zero term in the contrastive loss of Hadsell et al. (CVPR 2006) with the same margins.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    pos_margin, neg_margin : float, optional
        Default 0.2 and 0.8 for a distance, 0.8 and 0.2 for a similarity.
    distance, L, mask
        As in :func:`batch_hard`.

    Returns
    -------
    Pairs
        B * B slots, slot ``i * B + j`` for the pair ``(i, j)``.
    """
    kind = check_distance(distance)
    sim = kind in SIMILARITIES
    mp = (0.8 if sim else 0.2) if pos_margin is None else check_real("pos_margin", pos_margin)
    mn = (0.2 if sim else 0.8) if neg_margin is None else check_real("neg_margin", neg_margin)
    _, V, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    if sim:
        keep = (pos & (V < mp)) | (neg & (V > mn))
    else:
        keep = (pos & (V > mp)) | (neg & (V < mn))
    return _grid_pairs(pos, keep)


def _grid_pairs(pos, keep) -> Pairs:
    a, o = grid(pos.shape[0], 2, pos.shape[1])
    return Pairs(a, o, pos.reshape(-1), keep.reshape(-1))
