"""NCA and LMNN as losses of a batch ``(embeddings, labels)``.

The same objectives as :func:`jaxdml.losses.nca` and :func:`jaxdml.losses.lmnn` (which take the linear
map and a problem pytree), written on the batch's dense distances so that they compose with the
other deep losses: with the default distance and ``L`` they equal those losses of ``L``.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ... import linalg

from ._base import (apply_map, check_distance, check_indices, check_real, check_reduction, dense, dissimilarity,
                    masked_logsumexp, reduce)
from ._refs import check_ref_batch, label_masks

__all__ = ["nca", "lmnn"]


def nca(embeddings, labels, *, distance="sq_euclidean", L=None, mask=None, reduction="mean", ref_emb=None,
        ref_labels=None, ref_mask=None):
    r"""Negative expected leave-one-out accuracy of the stochastic nearest-neighbour rule (NCA).

    .. math::

        p_{ij} = \frac{e^{-d_{ij}}}{\sum_{k \ne i} e^{-d_{ik}}}, \qquad
        \mathcal{L} = -\frac{1}{m} \sum_{i=1}^{m} \sum_{j \ne i: y_j = y_i} p_{ij}

    over the ``m`` real rows, with :math:`d` the squared Euclidean distance (Goldberger et al.;
    :math:`-d` becomes :math:`s` for a similarity). With ``L`` this is ``jaxdml.losses.nca(L,
    problem)`` of the batch. A row alone in its class contributes 0 (it still counts in ``m``).

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="sq_euclidean"
    L : (k, d) array, optional
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"``: the (B,) per-row terms.
    ref_emb, ref_labels, ref_mask : optional
        References (see :mod:`jaxdml.losses.deep._refs`): each batch row's neighbours are then the
        references (the softmax runs over them, none left out).

    References
    ----------
    J. Goldberger, G. Hinton, S. Roweis, R. Salakhutdinov. Neighbourhood Components Analysis.
    NIPS 2005.
    """
    check_reduction(reduction)
    kind = check_distance(distance)
    b = check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask)
    x = -dissimilarity(_dense(b, L, kind), kind)
    pos, neg = label_masks(b)
    valid = b.valid
    lse_all, ok = masked_logsumexp(x, (pos | neg).astype(x.dtype), axis=1)
    lse_pos, has = masked_logsumexp(x, pos.astype(x.dtype), axis=1)
    p_same = jnp.where(has & ok, jnp.exp(jnp.where(has & ok, lse_pos - lse_all, 0.0)), 0.0)
    return reduce(-p_same, valid.astype(x.dtype), reduction)


def lmnn(embeddings, labels, *, n_neighbors=3, targets=None, target_mask=None, mu=0.5, margin=1.0,
         distance="sq_euclidean", L=None, mask=None, reduction="mean", ref_emb=None, ref_labels=None, ref_mask=None):
    r"""LMNN: pull each row's target neighbours, push differently-labelled rows out of their margin.

    .. math::

        \mathcal{L} = \frac{1}{m} \sum_{i=1}^{m} \Big[(1 - \mu) \sum_{j \rightsquigarrow i} d_{ij}
        + \mu \sum_{j \rightsquigarrow i} \sum_{l: y_l \ne y_i} [\,m_0 + d_{ij} - d_{il}]_+\Big]

    with :math:`d` the squared Euclidean distance (Weinberger & Saul; a similarity enters as
    :math:`-s`) and :math:`j \rightsquigarrow i` the target neighbours of row ``i``: given
    (``targets``, e.g. the input-space neighbours of :func:`jaxdml.make_problem`), or by default the
    ``n_neighbors`` nearest real rows of the same class in the batch under the current distances
    (selected without gradient, :func:`jaxdml.linalg.smallest_k`). A class too small for
    ``n_neighbors`` gives its rows fewer targets. With ``L`` and the problem's targets this is
    ``jaxdml.losses.lmnn(L, problem)``.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
    n_neighbors : int, default=3
        Targets per row when ``targets`` is not given.
    targets : (B, k) int array, optional
        Target neighbour rows of each row.
    target_mask : (B, k) bool array, optional
        False for an unused target slot (default: all used).
    mu : float, default=0.5
    margin : float, default=1.0
        :math:`m_0`.
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="sq_euclidean"
    L : (k, d) array, optional
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"``: the (B,) per-row terms.
    ref_emb, ref_labels, ref_mask : optional
        References (see :mod:`jaxdml.losses.deep._refs`): target neighbours and impostors are then
        references (``targets`` index the references).

    References
    ----------
    K. Q. Weinberger, L. K. Saul. Distance Metric Learning for Large Margin Nearest Neighbor
    Classification. JMLR 10, 2009.
    """
    check_reduction(reduction)
    check_real("mu", mu, low=0.0, strict=False, high=1.0)
    check_real("margin", margin, low=0.0)
    kind = check_distance(distance)
    b = check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask)
    D = dissimilarity(_dense(b, L, kind), kind)
    pos, neg = label_masks(b)
    valid = b.valid
    t, tw = _targets(D, pos, n_neighbors, targets, target_mask)
    dt = jnp.take_along_axis(D, t, axis=1)  # (B, k)
    pull = jnp.sum(tw * dt, axis=1)
    hinge = jax.nn.relu(margin + dt[:, :, None] - D[:, None, :])  # (B, k, B)
    push = jnp.sum(hinge * tw[:, :, None] * neg[:, None, :], axis=(1, 2))
    return reduce((1.0 - mu) * pull + mu * push, valid.astype(D.dtype), reduction)


def _dense(b, L, kind):
    """The (B, R) measure between the batch's rows and its references (the batch itself without), under ``L``."""
    Z = apply_map(b.Z, L)
    if not b.has_ref:
        return dense(Z, Z, kind, b.valid)
    return dense(Z, apply_map(b.R, L), kind, jnp.any(b.rows, axis=0))


def _targets(D, pos, n_neighbors, targets, target_mask):
    """``(targets, weights)`` (B, k): given, or the nearest same-class rows (no gradient)."""
    n, n_ref = D.shape
    if targets is None:
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, numbers.Integral) or n_neighbors < 1:
            raise ValueError(f"n_neighbors must be a positive int; got {n_neighbors!r}.")
        k = min(int(n_neighbors), max(n_ref - 1, 1) if n_ref == n else n_ref)
        masked = jnp.where(pos, jax.lax.stop_gradient(D), jnp.inf)
        vals, t = linalg.smallest_k(masked, k)
        return t, (jnp.isfinite(vals) & jnp.any(pos, axis=1, keepdims=True)).astype(D.dtype)
    t = jnp.asarray(targets)
    if t.ndim != 2 or t.shape[0] != n or not jnp.issubdtype(t.dtype, jnp.integer):
        raise ValueError(f"targets must be a ({n}, k) int array of row indices; got shape {t.shape}, dtype {t.dtype}.")
    tw = jnp.ones(t.shape, D.dtype) if target_mask is None else jnp.asarray(target_mask, D.dtype)
    if tw.shape != t.shape:
        raise ValueError(f"target_mask must have the shape of targets {t.shape}; got {tw.shape}.")
    check_indices("targets", t, n_ref)
    rows = jnp.arange(n)[:, None]
    return t, tw * pos[rows, t].astype(D.dtype)
