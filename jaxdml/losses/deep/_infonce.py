"""Softmax losses over the pairs of a batch: NT-Xent / InfoNCE, N-pair, supervised contrastive.

The logits are the similarities divided by a temperature (``x = s / tau``; with a distance,
``x = -d / tau``). Softmax denominators are log-sum-exps over the allowed pairs of each anchor.
Common arguments (``distance``, ``L``, ``pairs``, ``miner``, ``mask``, ``reduction``) as in
:mod:`jaxdml.losses.deep._pairs`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._base import check_real, check_reduction, masked_logsumexp, reduce, similarity
from ._tuples import pair_batch

__all__ = ["ntxent", "infonce", "npair", "supervised_contrastive"]


def _positive_pair_terms(b, temperature):
    """(B, B) terms ``-log(e^{x_ap} / (e^{x_ap} + sum_{n in N(a)} e^{x_an}))`` and their weights."""
    x = similarity(b.V, b.kind) / temperature
    lse_n, ok_n = masked_logsumexp(x, b.w_neg, axis=1)  # log sum over the negatives of each anchor
    terms = jnp.where(ok_n[:, None], jax.nn.softplus(jnp.where(ok_n[:, None], lse_n[:, None] - x, 0.0)), 0.0)
    return terms, b.w_pos


def ntxent(embeddings, labels=None, *, temperature=0.1, distance="cosine", L=None, pairs=None, miner=None,
           mask=None, reduction="mean", ref_emb=None, ref_labels=None,
           ref_mask=None):
    r"""NT-Xent / InfoNCE: each positive pair classified against the anchor's negatives.

    .. math::

        \ell_{ap} = -\log \frac{e^{s_{ap}/\tau}}{e^{s_{ap}/\tau} + \sum_{n \in \mathcal{N}(a)} e^{s_{an}/\tau}},
        \qquad \mathcal{L} = \frac{1}{|\mathcal{P}|} \sum_{(a, p) \in \mathcal{P}} \ell_{ap}

    over the (ordered) positive pairs :math:`\mathcal{P}`, with :math:`\mathcal{N}(a)` the rows of
    another class (or the anchor's mined negative pairs). With two views of each example and the
    example's id as its label, every anchor has one positive and the other :math:`2N - 2` rows as
    negatives: SimCLR's NT-Xent (cosine similarity, temperature :math:`\tau`), InfoNCE's
    categorical cross-entropy. A positive pair whose anchor has no negative contributes 0.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    temperature : float, default=0.1
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See :mod:`jaxdml.losses.deep` (default ``distance="cosine"``). ``reduction="none"``: the (B, B)
        terms of the positive pairs.

    References
    ----------
    T. Chen, S. Kornblith, M. Norouzi, G. Hinton. A Simple Framework for Contrastive Learning of Visual
    Representations. ICML 2020.
    A. van den Oord, Y. Li, O. Vinyals. Representation Learning with Contrastive Predictive Coding.
    arXiv:1807.03748, 2018.
    """
    check_reduction(reduction)
    check_real("temperature", temperature, low=0.0)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    terms, w = _positive_pair_terms(b, temperature)
    return reduce(terms, w, reduction)


#: InfoNCE is the same loss (:func:`ntxent`)
infonce = ntxent


def npair(embeddings, labels=None, *, l2_reg=0.0, distance="dot", L=None, pairs=None, miner=None, mask=None,
          reduction="mean", ref_emb=None, ref_labels=None, ref_mask=None):
    r"""Multi-class N-pair loss: the softmax of inner products, one positive against the negatives.

    .. math::

        \ell_{ap} = \log\Big(1 + \sum_{n \in \mathcal{N}(a)} e^{f_a^\top f_n - f_a^\top f_p}\Big),
        \qquad \mathcal{L} = \frac{1}{|\mathcal{P}|} \sum_{(a, p) \in \mathcal{P}} \ell_{ap}
        + \lambda \frac{1}{m} \sum_{i=1}^{m} \|f_i\|^2

    Sohn's batch holds one pair from each of N classes, so that the negatives of an anchor are the
    other classes' examples; here, as for any labelled batch, :math:`\mathcal{N}(a)` holds every row of
    another class. It is :func:`ntxent` with ``temperature=1`` and the inner product, plus the
    paper's L2 penalty on the embeddings (``l2_reg``, :math:`\lambda`, over the ``m`` real rows).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    l2_reg : float, default=0.0
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See :mod:`jaxdml.losses.deep` (default ``distance="dot"``). ``reduction="none"``: the (B, B)
        terms of the positive pairs (without the penalty).

    References
    ----------
    K. Sohn. Improved Deep Metric Learning with Multi-class N-pair Loss Objective. NeurIPS 2016.
    """
    check_reduction(reduction)
    check_real("l2_reg", l2_reg, low=0.0, strict=False)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    terms, w = _positive_pair_terms(b, 1.0)
    value = reduce(terms, w, reduction)
    if reduction == "none":
        return value
    sq = jnp.sum(b.Z * b.Z, axis=1)
    return value + l2_reg * reduce(sq, b.valid.astype(sq.dtype), reduction)


def supervised_contrastive(embeddings, labels=None, *, temperature=0.1, distance="cosine", L=None, pairs=None,
                           miner=None, mask=None, reduction="mean", ref_emb=None, ref_labels=None,
                           ref_mask=None):
    r"""Supervised contrastive loss (SupCon, the "out" form): every positive of an anchor against all others.

    .. math::

        \mathcal{L}_i = -\frac{1}{|P(i)|} \sum_{p \in P(i)}
        \log \frac{e^{s_{ip}/\tau}}{\sum_{a \in A(i)} e^{s_{ia}/\tau}}

    with :math:`P(i)` the other rows of the anchor's class and :math:`A(i)` every other real row (with
    mined pairs: the anchor's positive pairs and all its pairs). The paper sums over anchors; the mean
    here is over the anchors with at least one positive (the others have no term).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    temperature : float, default=0.1
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        See :mod:`jaxdml.losses.deep` (default ``distance="cosine"``). ``reduction="none"``: the (B,)
        per-anchor terms.

    References
    ----------
    P. Khosla, P. Teterwak, C. Wang, A. Sarna, Y. Tian, P. Isola, A. Maschinot, C. Liu, D. Krishnan.
    Supervised Contrastive Learning. NeurIPS 2020 (Eq. 2).
    """
    check_reduction(reduction)
    check_real("temperature", temperature, low=0.0)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    x = similarity(b.V, b.kind) / temperature
    lse, _ = masked_logsumexp(x, b.w_pos + b.w_neg, axis=1)
    n_pos = jnp.sum(b.w_pos, axis=1)
    has = n_pos > 0
    mean_pos = jnp.sum(b.w_pos * x, axis=1) / jnp.where(has, n_pos, 1.0)
    return reduce(jnp.where(has, lse - mean_pos, 0.0), has.astype(x.dtype), reduction)
