"""More miners: triplets by their margin (every semi-hard, hard or easy triplet), easy/semi-hard/hard
selection per side (BatchEasyHard), and distance-weighted sampling of negatives.

As in :mod:`jaxdml.losses.deep._miners`: pure functions of a batch, fixed-size outputs with a mask,
no gradient through the selection; selections on the smaller-is-closer form of the measure, ranges
and margins on the measure's own scale. With ``ref_emb`` / ``ref_labels`` / ``ref_mask`` (see
:mod:`jaxdml.losses.deep._refs`) they select among the (batch row, reference) pairs: anchors index the
batch, positives and negatives the references, and a grid of B * B (B * B * B) slots becomes B * R
(B * R * R).
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ._base import apply_map, check_choice, check_real, dense, normalize
from ._miners import _batch
from ._refs import check_ref_batch, label_masks
from ._tuples import Pairs, Triplets, grid

__all__ = ["triplet_margin_miner", "batch_easy_hard", "distance_weighted", "distance_weighted_probabilities"]

TRIPLET_KINDS = ("all", "hard", "semihard", "easy")
STRATEGIES = ("easy", "semihard", "hard", "all")


def _check_size(size):
    if size is not None and (isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1):
        raise ValueError(f"size must be a positive int (number of triplet slots); got {size!r}.")


def _pack(keep, size):
    """Triplets of the (B, R, R) grid where ``keep``: the whole grid, or the first ``size`` kept ones."""
    n, n_ref, _ = keep.shape
    if size is None:
        a, p, q = grid(n, 3, n_ref)
        return Triplets(a, p, q, keep.reshape(-1))
    (flat,) = jnp.nonzero(keep.reshape(-1), size=int(size), fill_value=0)
    a, rest = jnp.divmod(flat, n_ref * n_ref)
    p, q = jnp.divmod(rest, n_ref)
    i32 = jnp.int32
    return Triplets(a.astype(i32), p.astype(i32), q.astype(i32), jnp.arange(int(size)) < jnp.sum(keep))


def triplet_margin_miner(embeddings, labels, *, margin=0.2, kind="all", size=None, distance="euclidean", L=None,
                         mask=None, ref_emb=None, ref_labels=None, ref_mask=None) -> Triplets:
    r"""Every triplet of the batch of a kind defined by its margin :math:`t = d(a, n) - d(a, p)`
    (:math:`s(a, p) - s(a, n)` for a similarity).

    ``"all"``: :math:`t \le m` (the triplets whose hinge :math:`[m - t]_+` is not cleared, counting the
    boundary); ``"semihard"``: :math:`0 < t \le m` (every semi-hard triplet, not one per positive as
    :func:`semi_hard` returns); ``"hard"``: :math:`t \le 0`; ``"easy"``: :math:`t > m`. These are PML's
    ``TripletMarginMiner`` types.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    margin : float, default=0.2
    kind : {"all", "hard", "semihard", "easy"}, default="all"
    size : int, optional
        Number of slots, as in :func:`batch_all` (default: the (B * B * B) grid, slot
        ``(a * B + p) * B + n``; with ``size`` the kept triplets are packed first, in grid order).
    distance, L, mask, ref_emb, ref_labels, ref_mask
        As in :func:`batch_hard` (with references the grid is (B * R * R), slot ``(a * R + p) * R + n``).

    Returns
    -------
    Triplets

    References
    ----------
    F. Schroff, D. Kalenichenko, J. Philbin. FaceNet: A Unified Embedding for Face Recognition and
    Clustering. CVPR 2015 (semi-hard triplets).
    """
    check_real("margin", margin)
    check_choice("kind", kind, TRIPLET_KINDS)
    _check_size(size)
    D, _, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    t = D[:, None, :] - D[:, :, None]  # [a, p, n]: d(a, n) - d(a, p)
    if kind == "easy":
        cond = t > margin
    else:
        cond = t <= margin
        if kind == "hard":
            cond = cond & (t <= 0)
        elif kind == "semihard":
            cond = cond & (t > 0)
    return _pack(pos[:, :, None] & neg[:, None, :] & cond, size)


def _check_range(name, r):
    if r is None:
        return None
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise ValueError(f"{name} must be a pair (low, high) or None; got {r!r}.")
    lo, hi = (check_real(f"{name}[{i}]", v) for i, v in enumerate(r))
    if lo > hi:
        raise ValueError(f"{name} must have low <= high; got {r!r}.")
    return lo, hi


def _select(D, V, cand, strategy, side, rng, threshold):
    """Per anchor, the chosen candidate (index, its D, found) among ``cand`` (B, B) under ``strategy``."""
    if rng is not None:
        cand = cand & (V >= rng[0]) & (V <= rng[1])
    if threshold is not None:  # semi-hard: positives closer than the chosen negative, negatives farther
        cand = cand & ((D < threshold[:, None]) if side == "pos" else (D > threshold[:, None]))
    farthest = (strategy in ("hard", "semihard")) == (side == "pos")
    if farthest:
        idx = jnp.argmax(jnp.where(cand, D, -jnp.inf), axis=1)
    else:
        idx = jnp.argmin(jnp.where(cand, D, jnp.inf), axis=1)
    found = jnp.any(cand, axis=1)
    d = jnp.take_along_axis(D, idx[:, None], axis=1)[:, 0]
    return idx.astype(jnp.int32), jnp.where(found, d, jnp.inf if farthest else -jnp.inf), found


def batch_easy_hard(embeddings, labels, *, pos_strategy="easy", neg_strategy="semihard", pos_range=None,
                    neg_range=None, distance="euclidean", L=None, mask=None, ref_emb=None, ref_labels=None,
                    ref_mask=None):
    r"""For every anchor, a positive and a negative each chosen easy, semi-hard or hard (or all of them).

    With :math:`d` the distance (:math:`-s` for a similarity): a *hard* positive is the anchor's
    farthest positive, an *easy* one its closest; a *hard* negative is its closest negative, an *easy*
    one its farthest. *Semi-hard* is relative to the other side's choice: a semi-hard negative is the
    closest negative farther than the chosen positive; a semi-hard positive the farthest positive closer
    than the chosen negative. ``"all"`` keeps every pair of that side. ``pos_range``/``neg_range``
    (low, high), on the measure's own scale, keep only the pairs whose value lies in it (bounds
    included). These are PML's ``BatchEasyHardMiner`` rules (default: easy positives, semi-hard
    negatives, Xuan et al.'s "easy positive" mining).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    pos_strategy, neg_strategy : {"easy", "semihard", "hard", "all"}, default="easy", "semihard"
        Not both "semihard"; "semihard" not with "all".
    pos_range, neg_range : (float, float), optional
    distance, L, mask, ref_emb, ref_labels, ref_mask
        As in :func:`batch_hard` (with references the pair grid is (B * R), slot ``a * R + j``).

    Returns
    -------
    Triplets or Pairs
        Neither side "all": :class:`Triplets`, B slots (one per anchor; mask False where the anchor has
        no allowed positive or negative; ties to the lower row). One side "all": :class:`Pairs`, the
        (B * B) grid slots of that side's pairs followed by B slots of the other side's chosen pair
        per anchor. Both "all": every pair (:func:`all_pairs`' grid).

    References
    ----------
    H. Xuan, A. Stylianou, R. Pless. Improved Embeddings with Easy Positive Triplet Mining. WACV 2020.
    """
    check_choice("pos_strategy", pos_strategy, STRATEGIES)
    check_choice("neg_strategy", neg_strategy, STRATEGIES)
    if pos_strategy == neg_strategy == "semihard":
        raise ValueError('pos_strategy and neg_strategy cannot both be "semihard".')
    if "semihard" in (pos_strategy, neg_strategy) and "all" in (pos_strategy, neg_strategy):
        raise ValueError('"semihard" cannot be combined with "all".')
    pos_range, neg_range = _check_range("pos_range", pos_range), _check_range("neg_range", neg_range)
    D, V, pos, neg, _ = _batch(embeddings, labels, distance, L, mask, ref_emb, ref_labels, ref_mask)
    n, n_ref = D.shape
    p = q = None
    if pos_strategy == "semihard":
        q = _select(D, V, neg, neg_strategy, "neg", neg_range, None)
        p = _select(D, V, pos, pos_strategy, "pos", pos_range, q[1])
    else:
        if pos_strategy != "all":
            p = _select(D, V, pos, pos_strategy, "pos", pos_range, None)
        if neg_strategy != "all":
            q = _select(D, V, neg, neg_strategy, "neg", neg_range, p[1] if neg_strategy == "semihard" else None)
    rows = jnp.arange(n, dtype=jnp.int32)
    if p is not None and q is not None:
        return Triplets(rows, p[0], q[0], p[2] & q[2])
    a, o = grid(n, 2, n_ref)
    if p is None and q is None:
        return Pairs(a, o, pos.reshape(-1), (pos | neg).reshape(-1))
    if p is None:  # every positive pair, one chosen negative per anchor
        keep = pos if pos_range is None else pos & (V >= pos_range[0]) & (V <= pos_range[1])
        return Pairs(jnp.concatenate([a, rows]), jnp.concatenate([o, q[0]]),
                     jnp.concatenate([pos.reshape(-1), jnp.zeros(n, bool)]), jnp.concatenate([keep.reshape(-1), q[2]]))
    keep = neg if neg_range is None else neg & (V >= neg_range[0]) & (V <= neg_range[1])
    return Pairs(jnp.concatenate([a, rows]), jnp.concatenate([o, p[0]]),
                 jnp.concatenate([jnp.zeros(n * n_ref, bool), jnp.ones(n, bool)]),
                 jnp.concatenate([keep.reshape(-1), p[2]]))


def distance_weighted_log_weights(embeddings, labels, *, cutoff=0.5, nonzero_loss_cutoff=1.4, L=None, mask=None,
                                  ref_emb=None, ref_labels=None, ref_mask=None):
    """(B, B) log sampling weights of :func:`distance_weighted` (``-inf`` where a pair is never drawn); (B, R)
    with references."""
    check_real("cutoff", cutoff, low=0.0)
    check_real("nonzero_loss_cutoff", nonzero_loss_cutoff, low=0.0, high=2.0)
    if not cutoff < nonzero_loss_cutoff:
        raise ValueError(f"cutoff must be below nonzero_loss_cutoff; got {cutoff!r} and {nonzero_loss_cutoff!r}.")
    b = check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask)
    X = jax.lax.stop_gradient(normalize(apply_map(b.Z, L)))
    XR = jax.lax.stop_gradient(normalize(apply_map(b.R, L))) if b.has_ref else X
    dim = X.shape[1]
    d = jnp.maximum(dense(X, XR, "euclidean", jnp.any(b.rows, axis=0) if b.has_ref else b.valid), cutoff)
    one_minus = jnp.maximum(1.0 - 0.25 * d * d, jnp.finfo(d.dtype).tiny)
    logw = (2.0 - dim) * jnp.log(d) - 0.5 * (dim - 3.0) * jnp.log(one_minus)
    _, neg = label_masks(b)
    ok = neg & (d < nonzero_loss_cutoff) & jnp.isfinite(logw)
    return jnp.where(ok, logw, -jnp.inf)


def distance_weighted_probabilities(embeddings, labels, *, cutoff=0.5, nonzero_loss_cutoff=1.4, L=None, mask=None,
                                    ref_emb=None, ref_labels=None, ref_mask=None):
    """(B, B) probabilities with which :func:`distance_weighted` draws each row's negatives: row ``a`` is
    :math:`q(\\max(d_{aj}, c))^{-1}` over its allowed negatives, normalised (PML's ``DistanceWeightedMiner``
    weights); a row without an allowed negative is all zeros. Arguments as in :func:`distance_weighted`; (B, R)
    over the references with ``ref_emb``."""
    logw = distance_weighted_log_weights(embeddings, labels, cutoff=cutoff, nonzero_loss_cutoff=nonzero_loss_cutoff,
                                         L=L, mask=mask, ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    has = jnp.any(jnp.isfinite(logw), axis=1, keepdims=True)
    return jnp.where(has, jax.nn.softmax(jnp.where(has, logw, 0.0), axis=1), 0.0)


def distance_weighted(embeddings, labels, *, key, cutoff=0.5, nonzero_loss_cutoff=1.4, L=None, mask=None,
                      distance="euclidean", ref_emb=None, ref_labels=None, ref_mask=None) -> Triplets:
    r"""Distance-weighted sampling: for every positive pair, one negative drawn with probability
    proportional to the inverse density of its distance on the unit sphere.

    Rows are unit-normalised (after ``L``); in dimension :math:`n` the distance :math:`d` between
    uniform points on the sphere has density :math:`q(d) \propto d^{\,n-2} (1 - d^2/4)^{(n-3)/2}`. A
    negative :math:`j` of anchor :math:`a` is drawn with probability proportional to
    :math:`q(\max(d_{aj}, c))^{-1}` (``cutoff`` :math:`c` bounds the weight of very close negatives), and
    0 when :math:`d_{aj} \ge` ``nonzero_loss_cutoff`` (the negative would give no loss) - Wu et al.'s
    sampler, the partner of :func:`margin_loss`, with PML's ``DistanceWeightedMiner`` defaults and
    weights. Every positive pair is kept (PML draws each anchor's positives at random too, as many as
    its class has rows, with replacement).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    key : jax.random key
        The draws' seed (same key, same triplets).
    cutoff : float, default=0.5
    nonzero_loss_cutoff : float, default=1.4
        In (cutoff, 2].
    L, mask, ref_emb, ref_labels, ref_mask
        As in :func:`batch_hard`: with references the anchors are the batch's rows, positives and negatives
        the references (B * R slots, slot ``a * R + p``; each negative drawn among the references).
    distance : {"euclidean"}
        The sampler is defined for the Euclidean distance of unit rows (accepted for ``miner=``).

    Returns
    -------
    Triplets
        B * B slots, slot ``a * B + p`` for the positive pair ``(a, p)`` with its drawn negative; the mask
        is False where the pair is not positive or the anchor has no negative with a positive weight.

    References
    ----------
    C.-Y. Wu, R. Manmatha, A. J. Smola, P. Krähenbühl. Sampling Matters in Deep Embedding Learning.
    ICCV 2017 (Section 4).
    """
    if distance != "euclidean":
        raise ValueError(f"distance_weighted samples by the Euclidean distance of unit rows; got {distance!r}.")
    refs = {"ref_emb": ref_emb, "ref_labels": ref_labels, "ref_mask": ref_mask}
    logw = distance_weighted_log_weights(embeddings, labels, cutoff=cutoff, nonzero_loss_cutoff=nonzero_loss_cutoff,
                                         L=L, mask=mask, **refs)
    pos, _ = label_masks(check_ref_batch(embeddings, labels, mask, **refs))
    n, n_ref = logw.shape
    has = jnp.any(jnp.isfinite(logw), axis=1)
    safe = jnp.where(has[:, None], logw, 0.0)
    drawn = jax.random.categorical(key, safe[:, None, :], axis=-1, shape=(n, n_ref)).astype(jnp.int32)  # [a, p]
    a, p = grid(n, 2, n_ref)
    return Triplets(a, p, drawn.reshape(-1), (pos & has[:, None]).reshape(-1))
