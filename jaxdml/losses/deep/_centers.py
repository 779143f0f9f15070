"""Softmax losses with several centres per class (Sub-center ArcFace, SoftTriple) and the large-margin
softmax (L-Softmax) on unnormalised logits.

Class parameters are ordinary array arguments (trainable): ``(n_classes, K, d)`` centres, or
``(n_classes, d)`` weights. Labels are class indices into them. ``L`` maps embeddings and class
parameters first.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ._base import (apply_map, check_batch, check_labels_in_range, check_param_matrix, check_real, check_reduction,
                    normalize, reduce, safe_norm)
from ._softmax import _target_psi

__all__ = ["subcenter_arcface", "soft_triple", "large_margin_softmax"]


def _centres(embeddings, labels, centres, L, mask, name):
    """Validated ``(Z, C, y, valid)``: embeddings (B, k) and centres (n_classes, K, k) under ``L``."""
    Z, y, valid = check_batch(embeddings, labels, mask, encode_labels=False)  # labels index the classes
    C = jnp.asarray(centres)
    if C.ndim != 3 or C.shape[2] != Z.shape[1] or C.shape[0] < 1 or C.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_classes, n_centres, {Z.shape[1]}) to match the embeddings; "
                         f"got shape {C.shape}.")
    if not jnp.issubdtype(C.dtype, jnp.floating):
        raise TypeError(f"{name} must be a float array; got dtype {C.dtype}.")
    check_labels_in_range(y, C.shape[0], name)
    Zm = apply_map(Z, L)
    Cm = apply_map(C.reshape(-1, C.shape[2]).astype(Z.dtype), L).reshape(C.shape[0], C.shape[1], -1)
    return Zm, Cm, y, valid


def _cross_entropy(logits, y, valid, reduction):
    terms = jax.nn.logsumexp(logits, axis=1) - jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    return reduce(terms, valid.astype(logits.dtype), reduction)


def subcenter_arcface(embeddings, labels, centres, *, scale=64.0, margin=0.5, L=None, mask=None, reduction="mean"):
    r"""Sub-center ArcFace: ArcFace on each class's closest of ``K`` sub-centres.

    .. math::

        \cos\theta_{ij} = \max_{k} \hat x_i^\top \hat w_{jk}, \qquad
        \ell_i = -\log \frac{e^{\,s\, \psi(\theta_{i y_i})}}{e^{\,s\, \psi(\theta_{i y_i})}
        + \sum_{j \ne y_i} e^{\,s \cos\theta_{ij}}}

    with :math:`\psi(\theta) = \cos(\theta + m)`, extended monotonically beyond :math:`\pi - m` as in
    :func:`arcface` (``K = 1`` is :func:`arcface`). The default margin is the paper's 0.5 rad; PML's
    ``SubCenterArcFaceLoss`` takes it in degrees, default 28.6 (``margin=math.radians(28.6)``, 0.4992 rad).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
        Class indices in ``[0, n_classes)``.
    centres : (n_classes, K, d) array
        The sub-centres :math:`w_{jk}` (trainable); the paper uses ``K = 3``.
    scale : float, default=64.0
    margin : float, default=0.5
        The additive angular margin :math:`m` in radians.
    L, mask
        As in :func:`arcface`.
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"
        ``"none"``: the (B,) per-row terms.

    References
    ----------
    J. Deng, J. Guo, T. Liu, M. Gong, S. Zafeiriou. Sub-center ArcFace: Boosting Face Recognition by
    Large-Scale Noisy Web Faces. ECCV 2020.
    """
    check_reduction(reduction)
    check_real("scale", scale, low=0.0)
    check_real("margin", margin, low=0.0, strict=False)
    Z, C, y, valid = _centres(embeddings, labels, centres, L, mask, "centres")
    cos = jnp.max(jnp.einsum("bd,ckd->bck", normalize(Z), normalize(C)), axis=2)  # (B, n_classes)
    target = y[:, None] == jnp.arange(C.shape[0])[None, :]
    psi = _target_psi(jnp.take_along_axis(cos, y[:, None], axis=1), 1.0, margin, 0.0)
    return _cross_entropy(scale * jnp.where(target, psi, cos), y, valid, reduction)


def _soft_triple_reg(Cn):
    """The paper's centre regulariser: sum over each class's centre pairs t < s of ||w_t - w_s|| / (C K (K-1))."""
    n_classes, K, _ = Cn.shape
    diff = Cn[:, :, None, :] - Cn[:, None, :, :]
    upper = jnp.triu(jnp.ones((K, K), bool), k=1)
    dist = jnp.where(upper, safe_norm(diff, axis=3), 0.0)
    return jnp.sum(dist) / (n_classes * K * (K - 1))


def soft_triple(embeddings, labels, centres, *, la=20.0, gamma=0.1, margin=0.01, reg_weight=0.0, L=None, mask=None,
                reduction="mean"):
    r"""SoftTriple loss: a softmax over classes whose similarity is a soft maximum over ``K`` centres.

    .. math::

        \mathcal{S}_{ic} = \sum_k \frac{e^{\,s_{ick} / \gamma}}{\sum_{k'} e^{\,s_{ick'} / \gamma}}\, s_{ick},
        \qquad \ell_i = -\log \frac{e^{\,\lambda (\mathcal{S}_{i y_i} - \delta)}}
        {e^{\,\lambda (\mathcal{S}_{i y_i} - \delta)} + \sum_{c \ne y_i} e^{\,\lambda \mathcal{S}_{ic}}}

    with :math:`s_{ick} = \hat x_i^\top \hat w_{ck}` (unit-normalised rows and centres). With
    ``reg_weight`` :math:`\tau > 0` the mean gains the paper's regulariser
    :math:`\tau \sum_c \sum_{t < s} \|\hat w_{ct} - \hat w_{cs}\| / (C K (K - 1))` (which merges
    redundant centres; PML's default has none, the paper uses 0.2); ``reduction="none"`` returns the
    per-row terms without it, ``"sum"`` their sum plus it.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
        Class indices in ``[0, n_classes)``.
    centres : (n_classes, K, d) array
        The centres (trainable); the paper uses ``K = 10``.
    la : float, default=20.0
        :math:`\lambda`, the scale of the logits.
    gamma : float, default=0.1
        :math:`\gamma`, the temperature of the soft maximum over a class's centres.
    margin : float, default=0.01
        :math:`\delta`.
    reg_weight : float, default=0.0
        :math:`\tau`.
    L, mask, reduction
        As in :func:`arcface`.

    References
    ----------
    Q. Qian, L. Shang, B. Sun, J. Hu, H. Li, R. Jin. SoftTriple Loss: Deep Metric Learning Without Triplet
    Sampling. ICCV 2019.
    """
    check_reduction(reduction)
    check_real("la", la, low=0.0)
    check_real("gamma", gamma, low=0.0)
    check_real("margin", margin, low=0.0, strict=False)
    check_real("reg_weight", reg_weight, low=0.0, strict=False)
    Z, C, y, valid = _centres(embeddings, labels, centres, L, mask, "centres")
    Cn = normalize(C)
    s = jnp.einsum("bd,ckd->bck", normalize(Z), Cn)
    S = jnp.sum(jax.nn.softmax(s / gamma, axis=2) * s, axis=2)  # (B, n_classes)
    target = y[:, None] == jnp.arange(C.shape[0])[None, :]
    loss = _cross_entropy(la * (S - margin * target), y, valid, reduction)
    if reduction == "none" or isinstance(reg_weight, numbers.Real) and reg_weight == 0 or C.shape[1] < 2:
        return loss
    return loss + reg_weight * _soft_triple_reg(Cn)


def large_margin_softmax(embeddings, labels, weights, *, margin=4, scale=1.0, L=None, mask=None, reduction="mean"):
    r"""Large-margin softmax (L-Softmax): the target's angle multiplied by ``margin`` in an unnormalised
    logit.

    .. math::

        \ell_i = -\log \frac{e^{\,s \|w_{y_i}\| \|x_i\| \psi(\theta_{i y_i})}}
        {e^{\,s \|w_{y_i}\| \|x_i\| \psi(\theta_{i y_i})} + \sum_{j \ne y_i} e^{\,s \|w_j\| \|x_i\| \cos\theta_{ij}}},
        \qquad \psi(\theta) = (-1)^k \cos(m\theta) - 2k,\ k = \lfloor m\theta / \pi \rfloor

    (the paper's Eqs. 4-6; :math:`s` is an extra scale, 1 in the paper and in PML's
    ``LargeMarginSoftmaxLoss``). Unlike :func:`sphereface`, neither the embeddings nor the weights
    are normalised. Angles come from ``arccos`` of the cosine clipped to
    :math:`[-1 + \epsilon, 1 - \epsilon]`.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
        Class indices in ``[0, n_classes)``.
    weights : (n_classes, d) array
        The class weights :math:`w_j` (trainable).
    margin : int, default=4
        The multiplicative angular margin :math:`m` (a positive integer).
    scale : float, default=1.0
    L, mask, reduction
        As in :func:`arcface`. ``reduction="none"``: the (B,) per-row terms.

    References
    ----------
    W. Liu, Y. Wen, Z. Yu, M. Yang. Large-Margin Softmax Loss for Convolutional Neural Networks. ICML 2016.
    """
    check_reduction(reduction)
    if isinstance(margin, bool) or not isinstance(margin, numbers.Integral) or margin < 1:
        raise ValueError(f"margin must be a positive int (the angle's multiplier); got {margin!r}.")
    check_real("scale", scale, low=0.0)
    Z, y, valid = check_batch(embeddings, labels, mask, encode_labels=False)
    W = check_param_matrix(weights, Z.shape[1], "weights")
    check_labels_in_range(y, W.shape[0], "class weights")
    Z, W = apply_map(Z, L), apply_map(W.astype(Z.dtype), L)
    cos = normalize(Z) @ normalize(W).T
    norms = safe_norm(Z, axis=1)[:, None] * safe_norm(W, axis=1)[None, :]
    target = y[:, None] == jnp.arange(W.shape[0])[None, :]
    psi = _target_psi(jnp.take_along_axis(cos, y[:, None], axis=1), float(margin), 0.0, 0.0)
    return _cross_entropy(scale * norms * jnp.where(target, psi, cos), y, valid, reduction)
