"""Regularizers: penalties on a batch's embeddings or on a loss's class weights, added to a loss by weight.

Each returns a scalar with ``reduction="mean"`` (the mean over the rows: embeddings, or one row per
class), ``"sum"``, ``"none"`` (the per-row terms) or a reducer; they are pure, jittable and
differentiable, and compose with the losses: ``loss + 0.1 * lp_regularizer(Z)``.

* :func:`lp_regularizer` - the p-norm of each embedding (to a power);
* :func:`zero_mean` - the absolute sum of each row's components;
* :func:`center_invariant` - the spread of the class weights' squared norms;
* :func:`regular_face` - each class weight's largest cosine to another class weight.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._base import check_batch, check_param_matrix, check_real, check_reduction, normalize, reduce, safe_norm

__all__ = ["lp_regularizer", "zero_mean", "center_invariant", "regular_face"]


def _rows(embeddings, mask):
    Z, _, valid = check_batch(embeddings, None, mask, labels_required=False)
    return Z, valid.astype(Z.dtype)


def lp_regularizer(embeddings, *, p=2.0, power=1.0, mask=None, reduction="mean"):
    r"""The p-norm of each embedding, to a power: :math:`r_i = \|x_i\|_p^{\,q}`.

    .. math::

        \mathcal{R} = \frac{1}{m} \sum_{i=1}^m \Big(\sum_k |x_{ik}|^p\Big)^{q / p}

    over the ``m`` real rows (``p=2, power=2`` is the usual weight decay on embeddings, as the N-pair
    loss's :math:`\ell_2` term). The gradient at a zero row is 0.

    Parameters
    ----------
    embeddings : (B, d) array
    p : float, default=2.0
        The norm's order, >= 1.
    power : float, default=1.0
        The power :math:`q` of the norm, > 0.
    mask : (B,) bool array, optional
        False for padded rows.
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"
        ``"none"``: the (B,) per-row terms.
    """
    check_reduction(reduction)
    check_real("p", p, low=1.0, strict=False)
    check_real("power", power, low=0.0)
    Z, w = _rows(embeddings, mask)
    if p == 2:
        norm = safe_norm(Z, axis=1)
    else:
        s = jnp.sum(jnp.abs(Z) ** p, axis=1)
        pos = s > 0
        norm = jnp.where(pos, jnp.where(pos, s, 1.0) ** (1.0 / p), 0.0)
    terms = norm if power == 1 else jnp.where(norm > 0, jnp.where(norm > 0, norm, 1.0) ** power, 0.0)
    return reduce(terms, w, reduction)


def zero_mean(embeddings, *, mask=None, reduction="mean"):
    r"""The absolute sum of each row's components, :math:`r_i = |\sum_k x_{ik}|`: pushes every row's
    components to a zero mean (the regularizer of Yuan et al.'s signal-to-noise-ratio loss). Works on
    embeddings or on class weights (any (rows, d) array).

    Parameters
    ----------
    embeddings : (B, d) array
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"
        ``"none"``: the (B,) per-row terms.

    References
    ----------
    T. Yuan, W. Deng, J. Tang, Y. Tang, B. Chen. Signal-to-Noise Ratio: A Robust Distance Metric for Deep
    Metric Learning. CVPR 2019.
    """
    check_reduction(reduction)
    Z, w = _rows(embeddings, mask)
    return reduce(jnp.abs(jnp.sum(Z, axis=1)), w, reduction)


def _weights(weights, name="weights"):
    W = jnp.asarray(weights)
    if W.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_classes, d); got shape {W.shape}.")
    return check_param_matrix(W, W.shape[1], name)


def center_invariant(weights, *, reduction="mean"):
    r"""Centre invariance: the class weights' squared norms kept equal.

    .. math::

        r_j = \tfrac14 \Big(\|w_j\|^2 - \frac1C \sum_{k=1}^C \|w_k\|^2\Big)^2

    per class :math:`j` of the ``C`` rows of ``weights``; ``reduction="sum"`` is the paper's
    :math:`\mathcal{L}_{ci}`, ``"mean"`` (PML's default) its mean over the classes.

    Parameters
    ----------
    weights : (C, d) array
        Class weights or centres (trainable).
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"

    References
    ----------
    Y. Wu, H. Liu, J. Li, Y. Fu. Deep Face Recognition with Center Invariant Loss. ACM MM Workshops 2017.
    """
    check_reduction(reduction)
    W = _weights(weights)
    sq = jnp.sum(W * W, axis=1)
    terms = 0.25 * (sq - jnp.mean(sq)) ** 2
    return reduce(terms, jnp.ones_like(terms), reduction)


def regular_face(weights, *, reduction="mean"):
    r"""RegularFace's exclusive regularization: each class weight's largest cosine to another one.

    .. math::

        r_j = \max_{k \ne j} \frac{w_j^\top w_k}{\|w_j\| \|w_k\|}

    The nearest other class is chosen on the current weights (held constant: the gradient flows
    through the chosen cosine, as the paper's); ties go to the lower index. ``"mean"`` is the
    paper's :math:`\frac1C \sum_j r_j`.

    Parameters
    ----------
    weights : (C, d) array
        Class weights (C >= 2, trainable).
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"

    References
    ----------
    K. Zhao, J. Xu, M.-M. Cheng. RegularFace: Deep Face Recognition via Exclusive Regularization.
    CVPR 2019.
    """
    check_reduction(reduction)
    W = _weights(weights)
    C = W.shape[0]
    if C < 2:
        raise ValueError(f"regular_face needs at least 2 class weights (each against the others); got {C}.")
    Wn = normalize(W)
    cos = Wn @ Wn.T
    others = jnp.where(jnp.eye(C, dtype=bool), -jnp.inf, jax.lax.stop_gradient(cos))
    nearest = jnp.argmax(others, axis=1)
    terms = jnp.take_along_axis(cos, nearest[:, None], axis=1)[:, 0]
    return reduce(terms, jnp.ones_like(terms), reduction)

