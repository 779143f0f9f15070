"""Triplet margin loss (hinge and soft-plus forms), on every triplet of a batch or on mined ones."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._base import apply_map, check_distance, check_real, check_reduction, dense, dissimilarity, paired, reduce
from ._refs import check_ref_batch, label_masks, ref_kwargs
from ._tuples import Triplets, check_tuples

__all__ = ["triplet_margin"]


def triplet_margin(embeddings, labels=None, *, margin=0.2, soft=False, swap=False, distance="euclidean", L=None,
                   triplets=None, miner=None, mask=None, reduction="mean", ref_emb=None, ref_labels=None, ref_mask=None):
    r"""Triplet margin loss: each anchor closer to its positive than to its negative by a margin.

    .. math::

        \ell_{apn} = [\,m + d(a, p) - d(a, n)]_+ \quad\text{or (``soft=True``)}\quad
        \log\big(1 + e^{\,m + d(a, p) - d(a, n)}\big),
        \qquad \mathcal{L} = \frac{1}{|\mathcal{T}|} \sum_{(a, p, n) \in \mathcal{T}} \ell_{apn}

    over the triplets :math:`\mathcal{T}`: every valid triplet of the batch (``y_a = y_p``, ``a != p``,
    ``y_n != y_a``; Hermans et al.'s "batch all"), or the given/mined ones (:func:`batch_hard`,
    :func:`semi_hard`, ...). With a similarity the term is :math:`m + s(a, n) - s(a, p)`. Schroff et
    al. use the squared Euclidean distance and :math:`m = 0.2`; Hermans et al. the Euclidean distance
    and the soft-plus form with :math:`m = 0` (``soft=True, margin=0``). At most B mined triplets (one
    per anchor, as batch-hard gives) are evaluated from the differences of their rows; more (semi-hard
    gives B^2 slots) from the entries of the dense (B, B) distances (a gather of scalars, not of rows);
    every triplet of the batch from the dense distances, in O(B^3) memory.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``triplets`` is given)
    margin : float, default=0.2
    soft : bool, default=False
        The soft-plus form instead of the hinge.
    swap : bool, default=False
        The anchor swap of Balntas et al.: the negative's distance is the smaller of :math:`d(a, n)` and
        :math:`d(p, n)` (the larger similarity), so the harder of the two rows is pushed away.
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="euclidean"
    L : (k, d) array, optional
        A learned linear map applied first (Mahalanobis distances).
    triplets : Triplets, optional
        Index triplets (a miner's output); default: every valid triplet of the batch.
    miner : callable, optional
        ``miner(embeddings, labels, mask=, distance=, L=) -> Triplets``, run on the batch.
    mask : (B,) bool array, optional
        False for padded rows.
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"``: the (T,) terms of the given triplets, or the (B, B, B) terms ``[a, p, n]``.
    ref_emb, ref_labels, ref_mask : optional
        References (see :mod:`jaxdml.losses.deep._refs`): anchors are the batch's rows, positives and
        negatives the references' (every triplet: the (B, R, R) grid; mined: indices into the references).

    Returns
    -------
    scalar (or the terms)

    References
    ----------
    F. Schroff, D. Kalenichenko, J. Philbin. FaceNet: A Unified Embedding for Face Recognition and
    Clustering. CVPR 2015.
    A. Hermans, L. Beyer, B. Leibe. In Defense of the Triplet Loss for Person Re-Identification.
    arXiv:1703.07737, 2017.
    V. Balntas, E. Riba, D. Ponsa, K. Mikolajczyk. Learning local feature descriptors with triplets and
    shallow convolutional neural networks. BMVC 2016 (the anchor swap).
    """
    if not isinstance(swap, bool):
        raise TypeError(f"swap must be True or False; got {swap!r}.")
    check_reduction(reduction)
    check_real("margin", margin, low=0.0, strict=False)
    kind = check_distance(distance)
    if triplets is not None and miner is not None:
        raise ValueError("give either triplets or a miner, not both.")
    b = check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask, labels_required=triplets is None)
    Z, valid = b.Z, b.valid
    if miner is not None:
        triplets = miner(Z, b.y, mask=valid, distance=kind, L=L, **ref_kwargs(b))
    Zm = apply_map(Z, L)
    Rm = apply_map(b.R, L) if b.has_ref else Zm
    r_valid = jnp.any(b.rows, axis=0) if b.has_ref else valid
    f = jax.nn.softplus if soft else jax.nn.relu
    if triplets is None:
        D = dissimilarity(dense(Zm, Rm, kind, r_valid), kind)
        pos, neg = label_masks(b)
        # [a, p, n]: d(p, n) between two references (the batch's own rows without references)
        d_an = jnp.minimum(D[:, None, :], _reference_dists(D, Rm, b, kind, r_valid)[None]) if swap else D[:, None, :]
        terms = f(margin + D[:, :, None] - d_an)
        return reduce(terms, (pos[:, :, None] & neg[:, None, :]).astype(Zm.dtype), reduction)
    t = check_tuples(triplets, (Triplets,), Z.shape[0], "triplets", b.R.shape[0])
    a, p, n = t.anchor, t.positive, t.negative
    if a.shape[0] <= Z.shape[0]:  # few triplets (batch-hard): from the differences of their rows
        d_ap = dissimilarity(paired(Zm[a], Rm[p], kind), kind)
        d_an = dissimilarity(paired(Zm[a], Rm[n], kind), kind)
        if swap:
            d_an = jnp.minimum(d_an, dissimilarity(paired(Rm[p], Rm[n], kind), kind))
    else:  # many (semi-hard: B^2 slots): entries of the dense matrix, not B^2 gathered rows
        D = dissimilarity(dense(Zm, Rm, kind, r_valid), kind)
        d_ap, d_an = D[a, p], D[a, n]
        if swap:
            d_an = jnp.minimum(d_an, _reference_dists(D, Rm, b, kind, r_valid)[p, n])
    ok = (t.mask > 0) & b.rows[a, p] & b.rows[a, n]
    return reduce(f(margin + d_ap - d_an), ok.astype(Zm.dtype), reduction)


def _reference_dists(D, Rm, b, kind, r_valid):
    """The dissimilarities between the references (``D`` itself when the batch is its own reference set)."""
    return dissimilarity(dense(Rm, Rm, kind, r_valid), kind) if b.has_ref else D
