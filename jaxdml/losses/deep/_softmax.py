"""Large-margin softmax losses on angles: one shared angular-margin form, and ArcFace, CosFace, SphereFace.

The class weights are an ordinary (n_classes, d) array argument (trainable, like proxies). The logits
are cosines between an embedding and the class weights, both normalised; the target class's cosine
gets a margin. These losses are defined on angles (the cosine similarity); ``L`` maps embeddings and
class weights first.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ._base import (apply_map, check_batch, check_labels_in_range, check_param_matrix, check_real, check_reduction,
                    normalize, reduce, safe_norm)

__all__ = ["angular_margin", "arcface", "cosface", "sphereface"]


def _target_psi(cos_t, m1, m2, m3):
    """``psi(theta) = (-1)^k cos(m1 theta + m2) - 2k - m3`` with ``k = floor((m1 theta + m2) / pi)``."""
    static = all(isinstance(m, numbers.Real) for m in (m1, m2))
    if static and m1 == 1 and m2 == 0:  # CosFace / NormFace: no angle needed
        return cos_t - m3
    eps = jnp.finfo(cos_t.dtype).eps
    theta = jnp.arccos(jnp.clip(cos_t, -1.0 + eps, 1.0 - eps))
    a = m1 * theta + m2
    k = jax.lax.stop_gradient(jnp.floor(a / jnp.pi))
    sign = 1.0 - 2.0 * jnp.mod(k, 2.0)
    return sign * jnp.cos(a) - 2.0 * k - m3


def angular_margin(embeddings, labels, weights, *, scale=64.0, m1=1.0, m2=0.0, m3=0.0, L=None, mask=None,
                   reduction="mean"):
    r"""Softmax cross-entropy with an angular margin on the target class (the combined margin form).

    .. math::

        \ell_i = -\log \frac{e^{\,s\, \psi(\theta_{i, y_i})}}{e^{\,s\, \psi(\theta_{i, y_i})}
        + \sum_{j \ne y_i} e^{\,s \cos\theta_{ij}}},
        \qquad \psi(\theta) = (-1)^k \cos(m_1 \theta + m_2) - 2k - m_3,\
        k = \Big\lfloor \frac{m_1 \theta + m_2}{\pi} \Big\rfloor

    with :math:`\cos\theta_{ij} = \hat x_i^\top \hat w_j` (unit-normalised embedding and class
    weight). :math:`m_1` is SphereFace's multiplicative margin, :math:`m_2` ArcFace's additive angular
    margin, :math:`m_3` CosFace's additive cosine margin (:math:`m_1 = 1, m_2 = m_3 = 0`: the
    normalised softmax). :math:`\psi` is SphereFace's monotone extension of :math:`\cos(m_1\theta + m_2)`
    beyond :math:`\pi` (continuous and decreasing on :math:`[0, \pi]`; for ArcFace it differs from
    :math:`\cos(\theta + m_2)` only where :math:`\theta > \pi - m_2`). ``scale=None`` uses
    :math:`s = \|x_i\|` (SphereFace's unnormalised features). Angles come from ``arccos`` of the cosine
    clipped to :math:`[-1 + \epsilon, 1 - \epsilon]` (finite gradients); :math:`m_1 = 1, m_2 = 0`
    needs no angle.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
        Class indices in ``[0, n_classes)``.
    weights : (n_classes, d) array
        The class weights :math:`w_j` (trainable).
    scale : float or None, default=64.0
    m1, m2, m3 : float, default=1.0, 0.0, 0.0
    L : (k, d) array, optional
        A learned linear map applied to embeddings and class weights.
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"``: the (B,) per-row terms.

    References
    ----------
    J. Deng, J. Guo, N. Xue, S. Zafeiriou. ArcFace: Additive Angular Margin Loss for Deep Face
    Recognition. CVPR 2019 (the combined margin, Section 3).
    """
    check_reduction(reduction)
    if scale is not None:
        check_real("scale", scale, low=0.0)
    # the combined margin's parts: a multiplicative angle m1 >= 1 (SphereFace), an additive angle m2 >= 0
    # (ArcFace) and a cosine margin m3 >= 0 (CosFace)
    check_real("m1", m1, low=1.0, strict=False)
    check_real("m2", m2, low=0.0, strict=False)
    check_real("m3", m3, low=0.0, strict=False)
    Z, y, valid = check_batch(embeddings, labels, mask, encode_labels=False)  # labels index the weights
    W = check_param_matrix(weights, Z.shape[1], "weights")
    check_labels_in_range(y, W.shape[0], "class weights")
    Z, W = apply_map(Z, L), apply_map(W.astype(Z.dtype), L)
    cos = normalize(Z) @ normalize(W).T
    s = safe_norm(Z, axis=1)[:, None] if scale is None else scale
    target = y[:, None] == jnp.arange(W.shape[0])[None, :]
    psi = _target_psi(jnp.take_along_axis(cos, y[:, None], axis=1), m1, m2, m3)
    logits = s * jnp.where(target, psi, cos)
    terms = jax.nn.logsumexp(logits, axis=1) - jnp.sum(jnp.where(target, logits, 0.0), axis=1)
    return reduce(terms, valid.astype(cos.dtype), reduction)


def arcface(embeddings, labels, weights, *, scale=64.0, margin=0.5, L=None, mask=None, reduction="mean"):
    r"""ArcFace: additive angular margin, target logit :math:`s \cos(\theta_{y} + m)`.

    :func:`angular_margin` with ``m2=margin`` (paper: :math:`s = 64`, :math:`m = 0.5`).

    References
    ----------
    J. Deng, J. Guo, N. Xue, S. Zafeiriou. ArcFace: Additive Angular Margin Loss for Deep Face
    Recognition. CVPR 2019.
    """
    check_real("margin", margin, low=0.0, strict=False)
    return angular_margin(embeddings, labels, weights, scale=scale, m2=margin, L=L, mask=mask, reduction=reduction)


def cosface(embeddings, labels, weights, *, scale=64.0, margin=0.35, L=None, mask=None, reduction="mean"):
    r"""CosFace (large margin cosine loss): target logit :math:`s (\cos\theta_{y} - m)`.

    :func:`angular_margin` with ``m3=margin`` (paper: :math:`s = 64`, :math:`m = 0.35`).

    References
    ----------
    H. Wang, Y. Wang, Z. Zhou, X. Ji, D. Gong, J. Zhou, Z. Li, W. Liu. CosFace: Large Margin Cosine
    Loss for Deep Face Recognition. CVPR 2018.
    """
    check_real("margin", margin, low=0.0, strict=False)
    return angular_margin(embeddings, labels, weights, scale=scale, m3=margin, L=L, mask=mask, reduction=reduction)


def sphereface(embeddings, labels, weights, *, margin=4, scale=None, L=None, mask=None, reduction="mean"):
    r"""SphereFace (A-Softmax): multiplicative angular margin, target logit :math:`\|x\| \psi(\theta_y)`.

    :func:`angular_margin` with ``m1=margin`` and, by default, the feature norm as the scale
    (:math:`\psi(\theta) = (-1)^k \cos(m\theta) - 2k`, the paper's Eq. 7, with :math:`m = 4`). The
    paper's annealing towards the plain softmax during training is left to the caller (a weighted
    sum with ``angular_margin(..., m1=1)``).

    References
    ----------
    W. Liu, Y. Wen, Z. Yu, M. Li, B. Raj, L. Song. SphereFace: Deep Hypersphere Embedding for Face
    Recognition. CVPR 2017.
    """
    check_real("margin", margin, low=1.0, strict=False)
    return angular_margin(embeddings, labels, weights, scale=scale, m1=margin, L=L, mask=mask, reduction=reduction)
