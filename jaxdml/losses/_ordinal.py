"""Ordinal metric learning losses: ordinal distance metric learning (ODML) and chain maximising
ordinal metric learning (CMOML), for targets that are ordered integer grades.

Both losses act on an :class:`OrdinalProblem`: the data, their grades and, for every sample (the
*anchor*), a fixed neighbourhood chosen on the host (see :mod:`jaxdml.methods.ordinal._ordinal`).
"""

from __future__ import annotations

from math import comb
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from .. import linalg

__all__ = ["OrdinalProblem", "odml", "cmoml", "ordered_chains"]


class OrdinalProblem(NamedTuple):
    """Data with ordered grades and one neighbourhood per anchor (a JAX pytree).

    Attributes
    ----------
    X : (n, d) float array (rows beyond the real samples are zero padding).
    grades : (n,) float array of integer grades.
    sample_mask : (n,) float, 1 for real samples and 0 for padding.
    neighbours : (n, m) int array, the neighbourhood of each anchor.
    neighbour_mask : (n, m) float, 1 where the slot holds a real neighbour.
    """

    X: jax.Array
    grades: jax.Array
    sample_mask: jax.Array
    neighbours: jax.Array
    neighbour_mask: jax.Array


def _neighbour_sq_dists(Z, problem, rows):
    """``(D, gap)``: squared distances ``|z_i - z_m|^2`` of the anchors ``rows`` to their neighbours
    (block, m) and the signed grade differences ``y_m - y_i``."""
    neighbours = problem.neighbours[rows]
    diff = Z[rows][:, None, :] - Z[neighbours]
    D = jnp.sum(diff * diff, axis=-1)
    gap = problem.grades[neighbours] - problem.grades[rows][:, None]
    return D, gap


def _anchor_blocks(fn, problem, block_elements):
    """``sum_b fn(rows_b, valid_b)`` over blocks of anchors sized so that a block's ``(block, m, m)``
    triplet arrays fit the memory budget (:func:`jaxdml.linalg.sum_over_blocks`; one block of every
    anchor up to ~18 000 anchors of 50 neighbours under the default 1 GiB)."""
    n, m = problem.neighbours.shape
    return linalg.sum_over_blocks(fn, n, linalg.block_size(n, m * m, block_elements))


def odml(L, problem: OrdinalProblem, *, alpha=0.01, margin=1.0, weighted: bool = True,
         block_elements: int | None = None):
    r"""Ordinal distance metric learning: a trace-regularised hinge loss over ordinal triplets.

    For each anchor ``i`` with neighbourhood :math:`N_i` (its nearest same-grade samples and its
    nearest samples of other grades) every pair :math:`j, l \in N_i` whose grade gaps satisfy
    :math:`|y_j - y_i| < |y_l - y_i|` is a triplet: the sample of closer grade must be closer by a
    margin,

    .. math::

        \mathcal{L}(L) = \alpha \operatorname{tr}(L^T L) + \frac{1}{\sum_T w_{ijl}} \sum_{(i,j,l) \in T}
        w_{ijl} \big[\,\text{margin} + \|L(x_i - x_j)\|^2 - \|L(x_i - x_l)\|^2\,\big]_+ ,

    with :math:`w_{ijl} = |y_l - y_i| - |y_j - y_i|` (``weighted=True``: the extra absolute error
    of taking ``l`` for ``j``) or 1.

    With the same-grade neighbours (gap 0) this holds LMNN's target/impostor triplets; among the
    samples of other grades it asks the distances to follow the grade gaps.

    Parameters
    ----------
    L : (n_components, n_features) array
    problem : OrdinalProblem
    alpha : float
        Weight of ``tr(M) = ||L||_F^2``.
    margin : float
    weighted : bool (static)
        Weight each triplet by its grade-gap difference (True) or equally (False).
    block_elements : int, optional (static)
        Triplet entries per block of anchors (default: from the memory budget); memory is
        ``O(block m^2)`` for ``m`` neighbours per anchor, not ``O(n m^2)``.

    Returns
    -------
    scalar

    References
    ----------
    C. Li, Q. Liu, J. Liu, H. Lu. Ordinal distance metric learning for image ranking. IEEE
    Transactions on Neural Networks and Learning Systems, 2015.
    """
    Z = problem.X @ L.T

    def block(rows, real):
        D, gap = _neighbour_sq_dists(Z, problem, rows)
        a = jnp.abs(gap)
        w = problem.neighbour_mask[rows] * (problem.sample_mask[rows] * real)[:, None]
        valid = w[:, :, None] * w[:, None, :] * (a[:, :, None] < a[:, None, :])
        if weighted:
            valid = valid * (a[:, None, :] - a[:, :, None])
        hinge = jax.nn.relu(margin + D[:, :, None] - D[:, None, :])
        return jnp.sum(valid * hinge), jnp.sum(valid)

    total, count = _anchor_blocks(block, problem, block_elements)
    return alpha * jnp.sum(L * L) + total / jnp.maximum(count, 1.0)


def _chain_count(P, member, chain_size):
    """``sum 1^T W^{k-1} 1`` per anchor with ``W[i, m, j] = member_m member_j P_{imj}`` (``P = before * S``,
    shared by the sides: the 0/1 ``member`` masks enter each product instead of a masked copy of ``P``):
    the (soft) number of chains of ``chain_size`` members, each later one farther and not closer in
    grade."""
    c = member
    for _ in range(chain_size - 1):
        c = member * jnp.einsum("imj,ij->im", P, member * c)
    return jnp.sum(c, axis=1)


def cmoml(L, problem: OrdinalProblem, *, chain_size: int = 3, temperature=0.1, block_elements: int | None = None):
    r"""Chain maximising ordinal metric learning: minus the (soft) number of ordered chains.

    In the neighbourhood of anchor ``i``, sorted by distance under ``L``, a *chain* is a set of
    ``chain_size`` neighbours on one side of ``y_i`` (all grades ``>= y_i`` or all ``<= y_i``)
    whose grade gaps :math:`|y_m - y_i|` do not decrease as the distance grows. CMOML maximises the
    number of chains over all anchors. That count is piecewise constant in ``L``; here every
    comparison "``j`` is closer than ``m``" is replaced by
    :math:`\sigma((\tilde d_m - \tilde d_j)/\tau)` with the squared distances
    :math:`\tilde d` divided by their mean over the anchor's neighbourhood (the count, like the
    exact one, is then invariant to the scale of ``L``, and ``temperature`` :math:`\tau` is relative).
    With ``W_{mj} = [g_j \le g_m]\,\sigma((\tilde d_m - \tilde d_j)/\tau)`` over the members of a
    side, the chains of a side number :math:`\mathbf 1^T W^{k-1} \mathbf 1` (exactly so as
    :math:`\tau \to 0`, see :func:`ordered_chains`); chains of equal-grade neighbours count on both
    sides and are subtracted once. The loss is the total divided by ``n * C(m, chain_size)`` (``m``
    neighbours per anchor).

    Parameters
    ----------
    L : (n_components, n_features) array
    problem : OrdinalProblem
    chain_size : int (static)
    temperature : float
    block_elements : int, optional (static)
        As for :func:`odml`.

    Returns
    -------
    scalar in [-1, 0] (approximately: soft comparisons of tied grades add up to one)

    References
    ----------
    J. L. Suárez, S. García, F. Herrera. Ordinal regression with explainable distance metric
    learning based on ordered sequences. Machine Learning 110, 2021.
    """
    Z = problem.X @ L.T
    w = problem.sample_mask

    def block(rows, real):
        D, gap = _neighbour_sq_dists(Z, problem, rows)
        mask = problem.neighbour_mask[rows]
        scale = jnp.sum(D * mask, axis=1, keepdims=True) / jnp.maximum(jnp.sum(mask, axis=1, keepdims=True), 1.0)
        # an anchor whose neighbours are (near-)duplicates has a scale of round-off (1e-15 in a kernel basis):
        # floored at 1e-6 of the block's mean scale, its comparisons are even (sigmoid 1/2) and its gradient
        # stays finite instead of overflowing through 1 / scale^2
        ref = jnp.sum(D * mask) / jnp.maximum(jnp.sum(mask), 1.0)
        scale = jnp.maximum(scale, 1e-6 * ref)
        Dn = D / jnp.where(scale > 0, scale, 1.0)  # padding rows: no neighbours, scale 0
        m = D.shape[1]
        S = jax.nn.sigmoid((Dn[:, :, None] - Dn[:, None, :]) / temperature) * (1.0 - jnp.eye(m, dtype=D.dtype))
        a = jnp.abs(gap)
        before = (a[:, None, :] <= a[:, :, None]).astype(D.dtype)  # [g_j <= g_m]
        up = mask * (gap >= 0)
        down = mask * (gap <= 0)
        flat = mask * (gap == 0)
        P = S * before
        total = _chain_count(P, up, chain_size) + _chain_count(P, down, chain_size) - _chain_count(P, flat, chain_size)
        return jnp.sum(w[rows] * real * total)

    chains = _anchor_blocks(block, problem, block_elements)
    size = jnp.max(jnp.sum(problem.neighbour_mask, axis=1))  # neighbours per anchor (slots beyond n - 1 masked)
    n_sets = jnp.exp(gammaln(size + 1.0) - gammaln(chain_size + 1.0) - gammaln(size - chain_size + 1.0))
    return -chains / (jnp.maximum(jnp.sum(w), 1.0) * jnp.round(n_sets))


def ordered_chains(dists, grade_gaps, chain_size: int) -> int:
    """The exact number of ordered chains of one anchor (NumPy; the quantity CMOML maximises).

    ``dists`` and ``grade_gaps`` (``y_m - y_i``) describe the anchor's neighbours. The neighbours
    are sorted by distance (stable); a chain is a subsequence of ``chain_size`` of them on one side
    of the anchor's grade whose absolute gaps do not decrease. Counted by dynamic programming
    (``count[p][m]``: chains of length ``p`` ending at ``m``); chains of equal-grade neighbours,
    counted on both sides, are subtracted once.
    """
    order = np.argsort(np.asarray(dists), kind="stable")
    g = np.asarray(grade_gaps)[order]

    def count(seq):
        c = np.ones(len(seq))
        for _ in range(chain_size - 1):
            c = np.array([sum(c[j] for j in range(m) if seq[j] <= seq[m]) for m in range(len(seq))])
        return c.sum() if len(seq) else 0.0

    return int(round(count(g[g >= 0]) + count(-g[g <= 0]) - comb(int(np.sum(g == 0)), chain_size)))
