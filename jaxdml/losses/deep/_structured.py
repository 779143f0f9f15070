"""Losses over the structure of a batch: generalized lifted structure, tuplet margin, angular, instance.

Common arguments as in :mod:`jaxdml.losses.deep._pairs` (``pairs``/``miner``/``mask``/``L``/
``reduction``, and the references ``ref_emb``/``ref_labels``/``ref_mask`` for all but the instance
loss). The tuplet margin and angular losses work on unit-normalised rows (angles); log-sums of
exponentials are computed as log-sum-exp.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._base import (apply_map, check_batch, check_real, check_reduction, log1p_sum_exp,
                    masked_logsumexp, normalize, reduce, sign_of)
from ._tuples import pair_batch

__all__ = ["generalized_lifted_structure", "tuplet_margin", "angular_loss", "instance_loss"]

FORTY_DEGREES = math.radians(40.0)


def generalized_lifted_structure(embeddings, labels=None, *, pos_margin=0.0, neg_margin=1.0, distance="euclidean",
                                 L=None, pairs=None, miner=None, mask=None, reduction="mean", ref_emb=None,
                                 ref_labels=None, ref_mask=None):
    r"""Generalized lifted structure loss: per anchor, a soft maximum over its positives against a soft
    minimum over its negatives.

    .. math::

        \ell_a = \Big[\log \sum_{p \in \mathcal{P}_a} e^{\,D_{ap} - m^+}
        + \log \sum_{n \in \mathcal{N}_a} e^{\,m^- - D_{an}}\Big]_+,
        \qquad \mathcal{L} = \frac1m \sum_{a=1}^m \ell_a

    (Hermans et al., Section 2, with :math:`m^+ = 0`); with a similarity the exponents are
    :math:`m^+ - s_{ap}` and :math:`s_{an} - m^-`. The mean is over the ``m`` real rows; an empty sum
    (an anchor without positives or without negatives) contributes a log-sum-exp of 0, as PML's
    ``GeneralizedLiftedStructureLoss`` does. A pair given twice (``pairs``) weighs twice in its sum.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    pos_margin, neg_margin : float, default=0.0, 1.0
        :math:`m^+`, :math:`m^-` on the measure's own scale.
    distance, L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        As in :func:`contrastive`. ``reduction="none"``: the (B,) per-anchor terms. With references
        the anchors are the batch's rows and their positives and negatives the references.

    References
    ----------
    A. Hermans, L. Beyer, B. Leibe. In Defense of the Triplet Loss for Person Re-Identification.
    arXiv:1703.07737, 2017.
    """
    check_reduction(reduction)
    check_real("pos_margin", pos_margin)
    check_real("neg_margin", neg_margin)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance=distance, L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    sign = sign_of(b.kind)
    pos, _ = masked_logsumexp(-sign * (b.V - pos_margin), b.w_pos, axis=1)
    neg, _ = masked_logsumexp(sign * (b.V - neg_margin), b.w_neg, axis=1)
    return reduce(jax.nn.relu(pos + neg), b.valid.astype(b.V.dtype), reduction)


def _clipped_cos(c):
    eps = jnp.finfo(c.dtype).eps
    return jnp.clip(c, -1.0 + eps, 1.0 - eps)


def tuplet_margin(embeddings, labels=None, *, margin=0.1, scale=64.0, L=None, pairs=None, miner=None, mask=None,
                  reduction="mean", ref_emb=None, ref_labels=None, ref_mask=None):
    r"""Tuplet margin loss: every positive pair against the negatives of its anchor, with a slack
    angular margin on the positive.

    .. math::

        \ell_{ap} = \log\Big(1 + \sum_{n \in \mathcal{N}_a} e^{\,s (\cos\theta_{an} - \cos(\theta_{ap} - \beta))}\Big),
        \qquad \mathcal{L} = \frac{1}{|\mathcal{P}|} \sum_{(a, p) \in \mathcal{P}} \ell_{ap}

    with :math:`\theta` the angle between rows (cosine similarity) and :math:`\beta` the slack
    margin in radians (PML's ``TupletMarginLoss`` takes degrees, default 5.73, i.e. 0.1 rad). With
    ``pairs``/``miner``, the positive pairs and each anchor's negative pairs are the given ones. The
    positive's angle comes from ``arccos`` of its cosine clipped to :math:`[-1 + \epsilon, 1 - \epsilon]`
    (finite gradients).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array (optional when ``pairs`` is given)
    margin : float, default=0.1
        :math:`\beta` (radians).
    scale : float, default=64.0
        :math:`s`.
    L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        As in :func:`contrastive`. ``reduction="none"``: the (B, B) terms of the positive pairs ((B, R)
        with references: the anchors are the batch's rows, positives and negatives the references).

    References
    ----------
    B. Yu, D. Tao. Deep Metric Learning with Tuplet Margin Loss. ICCV 2019.
    """
    check_reduction(reduction)
    check_real("margin", margin, low=0.0, strict=False)
    check_real("scale", scale, low=0.0)
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance="cosine", L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    pos = jnp.cos(jnp.arccos(_clipped_cos(b.V)) - margin)  # (B, B): cos(theta_ap - beta)
    x = scale * (b.V[:, None, :] - pos[:, :, None])  # [a, p, n]
    terms = log1p_sum_exp(x, jnp.broadcast_to(b.w_neg[:, None, :], x.shape), axis=2)
    return reduce(terms, b.w_pos, reduction)


def angular_loss(embeddings, labels=None, *, alpha=FORTY_DEGREES, L=None, pairs=None, miner=None, mask=None,
                 reduction="mean", ref_emb=None, ref_labels=None, ref_mask=None):
    r"""Angular loss: the angle at the negative of the triangle (anchor, positive, negative) bounded by
    :math:`\alpha`, in the N-pair form of the paper (Eq. 8).

    .. math::

        f_{apn} = 4 \tan^2\alpha\, (x_a + x_p)^\top x_n - 2 (1 + \tan^2\alpha)\, x_a^\top x_p,
        \qquad \ell_{ap} = \log\Big(1 + \sum_{n: y_n \ne y_a} e^{f_{apn}}\Big)

    on unit-normalised rows (after ``L``), averaged over the positive pairs :math:`(a, p)`: every
    positive pair of the batch, or the positive pairs of ``pairs``/``miner``; the negatives are every
    real row of another class (as PML's ``AngularLoss``), so labels are required. PML normalises the
    anchor and the positive but not the negative :math:`x_n`: its value is this one on unit-norm
    embeddings (its gradient still differs there, by the normalisation's projection).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    alpha : float, default=radians(40)
        The angle :math:`\alpha` in radians, in (0, pi/2) (the paper uses 36 to 55 degrees).
    L, pairs, miner, mask, reduction, ref_emb, ref_labels, ref_mask
        As in :func:`contrastive`. ``reduction="none"``: the (B, B) terms of the positive pairs. With
        references ((B, R) terms) the anchor :math:`x_a` is a batch row, :math:`x_p` and :math:`x_n`
        references (:math:`x_p^\top x_n` between two references).

    References
    ----------
    J. Wang, F. Zhou, S. Wen, X. Liu, Y. Lin. Deep Metric Learning with Angular Loss. ICCV 2017.
    """
    check_reduction(reduction)
    check_real("alpha", alpha, low=0.0, high=math.pi / 2)
    if labels is None:
        raise ValueError("angular_loss needs labels (its negatives are the rows of other classes).")
    if alpha == math.pi / 2:
        raise ValueError("alpha must be < pi/2 (tan(alpha) is infinite there).")
    b = pair_batch(embeddings, labels, pairs=pairs, miner=miner, distance="dot", L=L, mask=mask,
                   ref_emb=ref_emb, ref_labels=ref_labels, ref_mask=ref_mask)
    X, XR = normalize(b.Z), normalize(b.R)
    G = X @ XR.T  # x_a^T x_j: (B, R)
    GR = XR @ XR.T  # x_p^T x_n between references (the batch's rows without references)
    t2 = jnp.tan(alpha) ** 2
    f = 4.0 * t2 * (G[:, None, :] + GR[None, :, :]) - 2.0 * (1.0 + t2) * G[:, :, None]  # [a, p, n]
    neg = (b.y[:, None] != b.yr[None, :]) & b.ok
    terms = log1p_sum_exp(f, jnp.broadcast_to(neg[:, None, :], f.shape).astype(f.dtype), axis=2)
    return reduce(terms, b.w_pos, reduction)


def instance_loss(embeddings, labels=None, *, gamma=64.0, L=None, reduction="mean"):
    r"""Instance loss: a softmax over the batch's rows in which each row's target is a row index.

    .. math::

        \ell_i = -\log \frac{e^{\,\gamma \cos(x_i, x_{t_i})}}{\sum_{j=1}^{B} e^{\,\gamma \cos(x_i, x_j)}}

    Without labels each row is its own class, :math:`t_i = i` (the instance loss of Zheng et al.,
    with the batch's rows as the classifier's weights). With labels, :math:`t_i` is the code of
    :math:`y_i` among the batch's sorted distinct labels (0, 1, ...), the convention of the authors'
    released code and of PML's ``InstanceLoss`` (a batch has at least as many rows as classes, so every
    code is a row); labels traced inside ``jax.jit`` are taken as these codes already. Rows are columns
    by position, so there is no row mask.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array, optional
    gamma : float, default=64.0
        The scale :math:`\gamma`.
    L : (k, d) array, optional
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"
        ``"none"``: the (B,) per-row terms.

    References
    ----------
    Z. Zheng, L. Zheng, M. Garrett, Y. Yang, M. Xu, Y.-D. Shen. Dual-Path Convolutional Image-Text
    Embeddings with Instance Loss. ACM TOMM 2020.
    """
    check_reduction(reduction)
    check_real("gamma", gamma, low=0.0)
    Z, y, _ = check_batch(embeddings, labels, None, labels_required=False)
    n = Z.shape[0]
    if y is None:
        t = jnp.arange(n)
    else:
        if not isinstance(y, jax.core.Tracer):  # codes 0 .. n_classes - 1 < B
            y = jnp.asarray(np.unique(np.asarray(y), return_inverse=True)[1].reshape(-1))
        t = y
    X = normalize(apply_map(Z, L))
    logits = gamma * (X @ X.T)
    terms = jax.nn.logsumexp(logits, axis=1) - jnp.take_along_axis(logits, t[:, None], axis=1)[:, 0]
    return reduce(terms, jnp.ones_like(terms), reduction)
