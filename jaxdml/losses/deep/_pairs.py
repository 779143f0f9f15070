"""Pair-based losses: contrastive, margin, lifted structure, multi-similarity, circle.

Each is a function of the dense (B, B) matrix ``V`` of the chosen distance or similarity and of the
weights of the positive and negative pairs: every ordered pair of real rows from the labels (each
unordered pair appears twice: sums are twice the sum over unordered pairs, means are unchanged), or
the pairs a miner returned. Common arguments (see :mod:`jaxdml.losses.deep`):

``distance``
    ``"euclidean"``, ``"sq_euclidean"``, ``"cosine"`` or ``"dot"``; ``L`` a learned linear map
    applied first. Thresholds stay on the chosen measure's scale: a term ``s - t`` of a
    similarity-based formula becomes ``t - d`` for a distance, and vice versa.
``pairs`` / ``miner``
    A :class:`Pairs` or :class:`Triplets` (a triplet gives the pairs ``(a, p)`` and ``(a, n)``), or a
    miner ``miner(embeddings, labels, mask=, distance=, L=)`` run on the batch. Default: all pairs.
``mask``
    (B,) bool, False for padded rows (never an anchor, a positive or a negative).
``reduction``
    ``"mean"`` (the paper's normalisation, 0 when there is no term), ``"sum"`` or ``"none"`` (the
    terms; their layout is given per loss).
``ref_emb`` / ``ref_labels`` / ``ref_mask``
    References: (R, d) rows, (R,) labels, and (R,) or (B, R) bool (see :mod:`jaxdml.losses.deep._refs`).
    The pairs are then (batch row ``i``, reference ``j``), positive when their labels are equal, every
    one of them (no self-pair is left out); dense (B, B) layouts become (B, R), and the miner is called
    with the references too. Anchors are the batch's rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._base import (SIMILARITIES, check_labels_in_range, check_real, check_reduction, dissimilarity,
                    log1p_sum_exp, masked_logsumexp, reduce, sign_of)
from ._tuples import pair_batch

__all__ = ["contrastive", "margin_loss", "lifted_structure", "multi_similarity", "circle"]


def _pair_terms(pos, neg, w_pos, w_neg, reduction):
    """Reduce the (B, B) terms of positive and negative pairs together (weights: pair counts)."""
    w = w_pos + w_neg
    v = (w_pos * pos + w_neg * neg) / jnp.where(w > 0, w, 1.0)
    return reduce(v, w, reduction)


def contrastive(embeddings, labels=None, *, pos_margin=None, neg_margin=None, distance="euclidean", L=None,
                pairs=None, miner=None, mask=None, reduction="mean", ref_emb=None, ref_labels=None,
                ref_mask=None):
    r"""Contrastive loss: pull positive pairs within ``pos_margin``, push negatives beyond ``neg_margin``.

    .. math::

        \ell_{ij} = \begin{cases} \tfrac12 [\,d_{ij} - m^+]_+^2 & y_i = y_j \\
        \tfrac12 [\,m^- - d_{ij}]_+^2 & y_i \ne y_j \end{cases}
        \qquad \mathcal{L} = \frac{1}{|\mathcal{P}|} \sum_{(i, j) \in \mathcal{P}} \ell_{ij}

    over the pairs :math:`\mathcal{P}`. Hadsell et al. use the Euclidean distance, :math:`m^+ = 0`
    and :math:`m^- = m`; with a similarity :math:`s` the terms are :math:`\tfrac12 [m^+ - s]_+^2`
    and :math:`\tfrac12 [s - m^-]_+^2`.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    pos_margin, neg_margin : float, optional
        :math:`m^+`, :math:`m^-`. Default 0 and 1 for a distance, 1 and 0 for a similarity.
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See the module docstring. ``reduction="none"``: the (B, B) pair terms.

    Returns
    -------
    scalar (or the (B, B) terms)

    References
    ----------
    R. Hadsell, S. Chopra, Y. LeCun. Dimensionality Reduction by Learning an Invariant Mapping.
    CVPR 2006.
    """
    check_reduction(reduction)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    sim = b.kind in SIMILARITIES
    mp = (1.0 if sim else 0.0) if pos_margin is None else check_real("pos_margin", pos_margin)
    mn = (0.0 if sim else 1.0) if neg_margin is None else check_real("neg_margin", neg_margin)
    sign = sign_of(b.kind)
    pos = 0.5 * jax.nn.relu(sign * (mp - b.V)) ** 2
    neg = 0.5 * jax.nn.relu(sign * (b.V - mn)) ** 2
    return _pair_terms(pos, neg, b.w_pos, b.w_neg, reduction)


def margin_loss(embeddings, labels=None, *, beta=None, margin=0.2, nu=0.0, distance="euclidean", L=None,
                pairs=None, miner=None, mask=None, reduction="mean", ref_emb=None, ref_labels=None,
                ref_mask=None):
    r"""Margin loss of Wu et al. ("Sampling matters"), with a learnable boundary :math:`\beta`.

    .. math::

        \ell_{ij} = [\,\alpha + y_{ij} (d_{ij} - \beta_{c(i)})]_+ + \nu\, \beta_{c(i)},
        \qquad \mathcal{L} = \frac{1}{|\mathcal{P}|} \sum_{(i, j) \in \mathcal{P}} \ell_{ij}

    with :math:`y_{ij} = +1` for a positive pair and :math:`-1` for a negative one; with a
    similarity the hinge is :math:`[\alpha - y_{ij}(s_{ij} - \beta)]_+`. :math:`\beta` is one value
    or one per class (indexed by the anchor's label); pass it as an array and differentiate with
    respect to it to learn it, as the paper does (``nu``: the paper's :math:`\nu` penalty on it).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (required for a per-class ``beta``)
    beta : float or (n_classes,) array, optional
        The boundary :math:`\beta`. Default 1.2 (the paper's initial value) for a distance, 0.5 for a
        similarity.
    margin : float, default=0.2
        :math:`\alpha`.
    nu : float, default=0.0
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See the module docstring. ``reduction="none"``: the (B, B) pair terms.

    References
    ----------
    C.-Y. Wu, R. Manmatha, A. J. Smola, P. Krähenbühl. Sampling Matters in Deep Embedding Learning.
    ICCV 2017.
    """
    check_reduction(reduction)
    check_real("margin", margin, low=0.0, strict=False)
    check_real("nu", nu, low=0.0, strict=False)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    beta = (0.5 if b.kind in SIMILARITIES else 1.2) if beta is None else check_real("beta", beta, per_class=True)
    beta = jnp.asarray(beta, b.V.dtype)
    if beta.ndim == 1:
        if b.y is None:
            raise ValueError("a per-class beta needs labels (to find each anchor's class).")
        check_labels_in_range(b.y, beta.shape[0], "class boundaries beta")
        beta = beta[b.y][:, None]
    elif beta.ndim != 0:
        raise ValueError(f"beta must be a number or a 1-D array with one value per class; got shape {beta.shape}.")
    sign = sign_of(b.kind)
    pos = jax.nn.relu(margin - sign * (b.V - beta)) + nu * beta
    neg = jax.nn.relu(margin + sign * (b.V - beta)) + nu * beta
    return _pair_terms(pos, neg, b.w_pos, b.w_neg, reduction)


def lifted_structure(embeddings, labels=None, *, margin=1.0, distance="euclidean", L=None, pairs=None, miner=None,
                     mask=None, reduction="mean", ref_emb=None, ref_labels=None,
                     ref_mask=None):
    r"""Lifted structured loss: every positive pair against all negatives of both its rows.

    .. math::

        \tilde J_{ij} = \log\Big(\sum_{(i, k) \in \mathcal{N}} e^{\alpha - D_{ik}}
        + \sum_{(j, l) \in \mathcal{N}} e^{\alpha - D_{jl}}\Big) + D_{ij},
        \qquad \mathcal{L} = \frac{1}{2|\mathcal{P}|} \sum_{(i, j) \in \mathcal{P}} [\tilde J_{ij}]_+^2

    (the paper's Eq. 4, with the smooth log-sum-exp bound; :math:`D` the Euclidean distance, and
    :math:`D = -s` for a similarity). The log of the sum is computed as a log-sum-exp; a positive
    pair neither of whose rows has a negative contributes 0. With references (``ref_emb``) the pairs are
    (query :math:`i`, reference :math:`j`); the negatives of :math:`i` are its negative pairs with the
    references, those of :math:`j` its negative pairs with the queries (the batch's rows of another class).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    margin : float, default=1.0
        :math:`\alpha`.
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See the module docstring. ``reduction="none"``: the (B, B) terms
        :math:`\tfrac12 [\tilde J_{ij}]_+^2` of the positive pairs (their mean is :math:`\mathcal{L}`).

    References
    ----------
    H. Oh Song, Y. Xiang, S. Jegelka, S. Savarese. Deep Metric Learning via Lifted Structured Feature
    Embedding. CVPR 2016.
    """
    check_reduction(reduction)
    check_real("margin", margin, low=0.0, strict=False)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    D = dissimilarity(b.V, b.kind)
    lse, ok = masked_logsumexp(-D, b.w_neg, axis=1)  # log sum_k exp(-D_ik) over the negatives of i
    li, lj, oi, oj = lse[:, None], lse[None, :], ok[:, None], ok[None, :]
    if b.has_ref:  # the negatives of reference j: the batch's rows of another class, column j
        lse_j, ok_j = masked_logsumexp(-D, b.w_neg, axis=0)
        lj, oj = lse_j[None, :], ok_j[None, :]
    comb = jnp.where(oi & oj, jnp.logaddexp(li, lj), jnp.where(oi, li, lj))
    J = margin + comb + D
    terms = jnp.where(oi | oj, 0.5 * jax.nn.relu(J) ** 2, 0.0)
    return reduce(terms, b.w_pos, reduction)


def multi_similarity(embeddings, labels=None, *, alpha=2.0, beta=50.0, base=0.5, distance="cosine", L=None,
                     pairs=None, miner=None, mask=None, reduction="mean", ref_emb=None, ref_labels=None,
                     ref_mask=None):
    r"""Multi-similarity loss: soft weighting of every positive and negative pair of each anchor.

    .. math::

        \mathcal{L} = \frac{1}{m} \sum_{i=1}^{m} \Big\{ \frac{1}{\alpha}
        \log\Big[1 + \sum_{k \in \mathcal{P}_i} e^{-\alpha (S_{ik} - \lambda)}\Big]
        + \frac{1}{\beta} \log\Big[1 + \sum_{k \in \mathcal{N}_i} e^{\beta (S_{ik} - \lambda)}\Big] \Big\}

    over the ``m`` real rows (anchors without pairs contribute 0, as in the paper). With a distance,
    :math:`S_{ik} - \lambda` becomes :math:`\lambda - D_{ik}`. Pair it with
    :func:`multi_similarity_pairs` (the paper's mining step) through ``pairs=`` or ``miner=``.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    alpha, beta : float, default=2.0, 50.0
        Scales of the positive and negative terms.
    base : float, default=0.5
        :math:`\lambda` (0.5 in the authors' released code).
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See the module docstring (default ``distance="cosine"``). ``reduction="none"``: the (B,)
        per-anchor terms.

    References
    ----------
    X. Wang, X. Han, W. Huang, D. Dong, M. R. Scott. Multi-Similarity Loss with General Pair Weighting
    for Deep Metric Learning. CVPR 2019.
    """
    check_reduction(reduction)
    check_real("alpha", alpha, low=0.0)
    check_real("beta", beta, low=0.0)
    check_real("base", base)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    x = sign_of(b.kind) * (b.V - base)
    pos = log1p_sum_exp(-alpha * x, b.w_pos, axis=1) / alpha
    neg = log1p_sum_exp(beta * x, b.w_neg, axis=1) / beta
    return reduce(pos + neg, b.valid.astype(b.V.dtype), reduction)


def circle(embeddings, labels=None, *, margin=0.4, gamma=80.0, distance="cosine", L=None, pairs=None, miner=None,
           mask=None, reduction="mean", ref_emb=None, ref_labels=None,
           ref_mask=None):
    r"""Circle loss: pair similarities re-weighted by how far each is from its optimum.

    .. math::

        \mathcal{L}_i = \log\Big[1 + \sum_{j \in \mathcal{N}_i} e^{\gamma \alpha_n^j (s_n^j - \Delta_n)}
        \sum_{k \in \mathcal{P}_i} e^{-\gamma \alpha_p^k (s_p^k - \Delta_p)}\Big],
        \quad \alpha_p = [O_p - s_p]_+,\ \alpha_n = [s_n - O_n]_+

    with :math:`O_p = 1 + m`, :math:`O_n = -m`, :math:`\Delta_p = 1 - m`, :math:`\Delta_n = m`; the
    weights :math:`\alpha` are held constant in the gradient (the paper's "stop gradient"). The
    product of sums is computed as ``softplus(LSE_n + LSE_p)``. The mean is over the anchors with at
    least one positive and one negative (the others have no term). The paper's settings: ``m=0.25,
    gamma=256`` (faces) and ``m=0.4, gamma=80`` (fine-grained retrieval, the default).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    margin : float, default=0.4
        The relaxation :math:`m`.
    gamma : float, default=80.0
        The scale :math:`\gamma`.
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See the module docstring. The formula is written for similarities in [-1, 1]: ``distance``
        must be ``"cosine"`` (default) or ``"dot"``. ``reduction="none"``: the (B,) per-anchor terms.

    References
    ----------
    Y. Sun, C. Cheng, Y. Zhang, C. Zhang, L. Zheng, Z. Wang, Y. Wei. Circle Loss: A Unified Perspective
    of Pair Similarity Optimization. CVPR 2020.
    """
    check_reduction(reduction)
    check_real("margin", margin, low=0.0, strict=False)
    check_real("gamma", gamma, low=0.0)
    if distance not in SIMILARITIES:
        raise ValueError("circle loss is defined on similarities: distance must be 'cosine' or 'dot'; "
                         f"got {distance!r}.")
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    s = b.V
    fixed = jax.lax.stop_gradient(s)
    a_p, a_n = jax.nn.relu(1.0 + margin - fixed), jax.nn.relu(fixed + margin)
    lp, ok_p = masked_logsumexp(-gamma * a_p * (s - (1.0 - margin)), b.w_pos, axis=1)
    ln, ok_n = masked_logsumexp(gamma * a_n * (s - margin), b.w_neg, axis=1)
    ok = ok_p & ok_n
    terms = jnp.where(ok, jax.nn.softplus(jnp.where(ok, lp + ln, 0.0)), 0.0)
    return reduce(terms, ok.astype(s.dtype), reduction)
