r"""Sparse Compositional Metric Learning (Shi, Bellet, Sha, AAAI 2014): the objective.

The metric is a non-negative combination of rank-one bases, :math:`M = \sum_i w_i b_i b_i^\top`,
learned from triplets ``(a, p, n)`` (``a`` closer to ``p`` than to ``n``) with a margin hinge and
an L1 penalty that makes ``w`` sparse:

.. math::

    \min_{w \ge 0}\ \frac{1}{|T|} \sum_{t} \big[1 + d_w(a_t, p_t) - d_w(a_t, n_t)\big]_+
    + \beta \|w\|_1, \qquad d_w(u, v) = \sum_i w_i \big(b_i^\top (u - v)\big)^2 .

Row ``t`` of the (implicit) matrix ``D`` is ``P[ab_t] - P[an_t]`` where ``P[k, i] =
(b_i^T (u_k - v_k))^2`` over the distinct pairs ``k``; the hinge is ``[1 + D w]_+``.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["scml_objective", "scml_streamed_objective"]


def scml_objective(w, P, iab, ian, beta, mask=None):
    """The SCML objective of the weights ``w`` (``P``, ``iab``, ``ian``: see the module docstring;
    ``mask``: 1 for real triplets, 0 for padding)."""
    Pw = P @ w
    hinge = jnp.maximum(1.0 + Pw[iab] - Pw[ian], 0.0)
    if mask is None:
        return jnp.mean(hinge) + beta * jnp.sum(w)
    return jnp.sum(mask * hinge) / jnp.maximum(jnp.sum(mask), 1.0) + beta * jnp.sum(w)


def scml_streamed_objective(w, V, B, iab, ian, beta, mask):
    """:func:`scml_objective` without ``P``: ``P w`` is the squared distance of each pair under
    ``M = B^T diag(w) B``, the row sums of ``(V M) * V`` (memory linear in the number of pairs)."""
    M = (B.T * w) @ B
    Pw = jnp.sum((V @ M) * V, axis=1)
    hinge = jnp.maximum(1.0 + Pw[iab] - Pw[ian], 0.0)
    return jnp.sum(mask * hinge) / jnp.maximum(jnp.sum(mask), 1.0) + beta * jnp.sum(w)
