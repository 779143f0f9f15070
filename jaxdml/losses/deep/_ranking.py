"""Ranking losses: differentiable approximations of average precision (FastAP, Smooth-AP).

Each anchor ranks the other real rows of the batch by their distance (FastAP) or similarity
(Smooth-AP); its term is ``1 - AP`` of that ranking, and the loss is the mean over the anchors with
at least one positive (the others have no term).
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ._base import apply_map, check_batch, check_real, check_reduction, dense, label_pairs, normalize, reduce

__all__ = ["fast_ap", "smooth_ap"]


def fast_ap(embeddings, labels, *, num_bins=10, L=None, mask=None, reduction="mean"):
    r"""FastAP: average precision from soft histograms of the distances to each anchor.

    Rows are unit-normalised (after ``L``), so that the squared Euclidean distances :math:`d` lie in
    :math:`[0, 4]`. With ``num_bins`` = :math:`Z`, bin centres :math:`c_z = 4z/Z` (:math:`z = 0 .. Z`) and
    the triangular kernel :math:`\delta(d, z) = [1 - |d - c_z| Z / 4]_+`,

    .. math::

        h^+_z = \sum_{j \in \mathcal{P}_a} \delta(d_{aj}, z), \quad
        h_z = \sum_{j \ne a} \delta(d_{aj}, z), \quad H^{(+)}_z = \sum_{z' \le z} h^{(+)}_{z'},
        \qquad \mathrm{FastAP}_a = \frac{1}{|\mathcal{P}_a|} \sum_z \frac{h^+_z H^+_z}{H_z}

    (terms with :math:`h^+_z H^+_z = 0` are 0), and :math:`\ell_a = 1 - \mathrm{FastAP}_a`
    (PML's ``FastAPLoss`` conventions: :math:`Z + 1` centres from 0 to 4).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    num_bins : int, default=10
    L : (k, d) array, optional
    mask : (B,) bool array, optional
        False for padded rows.
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"
        ``"none"``: the (B,) per-anchor terms (0 for an anchor without positives).

    References
    ----------
    F. Cakir, K. He, X. Xia, B. Kulis, S. Sclaroff. Deep Metric Learning to Rank. CVPR 2019.
    """
    check_reduction(reduction)
    if isinstance(num_bins, bool) or not isinstance(num_bins, numbers.Integral) or num_bins < 1:
        raise ValueError(f"num_bins must be a positive int; got {num_bins!r}.")
    Z, y, valid = check_batch(embeddings, labels, mask)
    X = normalize(apply_map(Z, L))
    D = dense(X, X, "sq_euclidean", valid)
    pos, neg = label_pairs(y, valid)
    delta = 4.0 / num_bins
    centres = jnp.arange(num_bins + 1, dtype=D.dtype) * delta
    pulse = jax.nn.relu(1.0 - jnp.abs(D[:, :, None] - centres) / delta)  # (B, B, Z + 1)
    h_pos = jnp.sum(pulse * pos[:, :, None], axis=1)
    h_all = h_pos + jnp.sum(pulse * neg[:, :, None], axis=1)
    H_pos, H_all = jnp.cumsum(h_pos, axis=1), jnp.cumsum(h_all, axis=1)
    num = h_pos * H_pos
    ok = (num > 0) & (H_all > 0)
    ap_sum = jnp.sum(jnp.where(ok, num / jnp.where(ok, H_all, 1.0), 0.0), axis=1)
    n_pos = jnp.sum(pos, axis=1).astype(D.dtype)
    has = n_pos > 0
    terms = jnp.where(has, 1.0 - ap_sum / jnp.where(has, n_pos, 1.0), 0.0)
    return reduce(terms, has.astype(D.dtype), reduction)


def smooth_ap(embeddings, labels, *, temperature=0.01, include_anchor=False, L=None, mask=None, reduction="mean"):
    r"""Smooth-AP: average precision with each rank's indicator replaced by a sigmoid.

    With :math:`s` the cosine similarity, :math:`\mathcal{P}_a` the anchor's positives and
    :math:`\Omega_a` every other real row,

    .. math::

        \mathrm{AP}_a = \frac{1}{|\mathcal{P}_a|} \sum_{p \in \mathcal{P}_a}
        \frac{1 + \sum_{k \in \mathcal{P}_a, k \ne p} \sigma\big((s_{ak} - s_{ap}) / \tau\big)}
             {1 + \sum_{k \in \Omega_a, k \ne p} \sigma\big((s_{ak} - s_{ap}) / \tau\big)},
        \qquad \ell_a = 1 - \mathrm{AP}_a

    (the paper's Eq. 11, with :math:`\sigma` the logistic function and :math:`\tau` the temperature;
    as :math:`\tau \to 0` it is the exact AP of the ranking). With ``include_anchor`` the anchor is one of
    its own positives and of the ranked rows (:math:`\mathcal{P}_a \cup \{a\}`, :math:`\Omega_a \cup
    \{a\}`; every real row then has a term), the convention of the authors' released code and of PML's
    ``SmoothAPLoss`` (which also needs class-balanced batches sorted by class). Memory O(B^3).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    temperature : float, default=0.01
    include_anchor : bool, default=False
    L : (k, d) array, optional
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"} or a reducer, default="mean"
        ``"none"``: the (B,) per-anchor terms (0 for an anchor without positives).

    References
    ----------
    A. Brown, W. Xie, V. Kalogeiton, A. Zisserman. Smooth-AP: Smoothing the Path Towards Large-Scale
    Image Retrieval. ECCV 2020.
    """
    check_reduction(reduction)
    check_real("temperature", temperature, low=0.0)
    if not isinstance(include_anchor, bool):
        raise TypeError(f"include_anchor must be True or False; got {include_anchor!r}.")
    Z, y, valid = check_batch(embeddings, labels, mask)
    Zm = apply_map(Z, L)
    S = dense(Zm, Zm, "cosine")
    pos, neg = label_pairs(y, valid)
    if include_anchor:
        pos = pos | (jnp.eye(S.shape[0], dtype=bool) & valid[:, None])
    others = pos | neg  # every other real row of the anchor (and the anchor itself with include_anchor)
    sig = jax.nn.sigmoid((S[:, None, :] - S[:, :, None]) / temperature)  # [a, p, k]
    not_p = ~jnp.eye(S.shape[0], dtype=bool)[None, :, :]  # k != p
    rank_pos = 1.0 + jnp.sum(jnp.where(pos[:, None, :] & not_p, sig, 0.0), axis=2)
    rank_all = 1.0 + jnp.sum(jnp.where(others[:, None, :] & not_p, sig, 0.0), axis=2)
    n_pos = jnp.sum(pos, axis=1).astype(S.dtype)
    has = n_pos > 0
    ap = jnp.sum(jnp.where(pos, rank_pos / rank_all, 0.0), axis=1) / jnp.where(has, n_pos, 1.0)
    return reduce(jnp.where(has, 1.0 - ap, 0.0), has.astype(S.dtype), reduction)
