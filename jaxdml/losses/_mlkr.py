"""Metric Learning for Kernel Regression (Weinberger and Tesauro, 2007): the pure loss."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .. import linalg
from ._common import masked_softmax_parts, n_anchors, n_valid, other_real_columns, pair_columns, row_block

__all__ = ["RegressionProblem", "mlkr"]


class RegressionProblem(NamedTuple):
    """Data with continuous targets (a JAX pytree).

    Attributes
    ----------
    X : (n, d) float array (rows beyond the real samples are zero padding).
    t : (n,) float targets.
    sample_mask : (n,) float, 1 for real samples and 0 for padding.
    """

    X: jax.Array
    t: jax.Array
    sample_mask: jax.Array


def mlkr(L, problem: RegressionProblem, *, anchors=None, candidates=None, block_elements: int | None = None):
    r"""Mean leave-one-out squared error of Nadaraya-Watson kernel regression under ``L``.

    .. math::

        \frac{1}{n}\sum_i (t_i - \hat t_i)^2, \qquad
        \hat t_i = \frac{\sum_{j \ne i} t_j k_{ij}}{\sum_{j \ne i} k_{ij}}, \qquad
        k_{ij} = \exp(-\|L(x_i - x_j)\|^2)

    The kernel weights are a softmax over ``j != i`` of ``-||L(x_i - x_j)||^2`` (log-sum-exp
    stabilised, so distant points cannot underflow every weight). Padding rows (``sample_mask``
    0) are neither predicted nor used as neighbours; ``anchors`` restricts the predicted rows and
    ``candidates`` the rows they are predicted from (a sampled approximation). Anchors are processed
    in row blocks (``block_elements`` bounds the pairwise entries held at once; blocks are
    rematerialised in the backward pass), so memory is O(block * n), never n x n.
    """
    X, t, mask = problem.X, problem.t, problem.sample_mask
    n = X.shape[0]
    view = linalg.metric_view(L, X, "L", lazy=candidates is not None)
    cols, col_ids = pair_columns(candidates, n)

    def block(rows, valid):
        D = linalg.view_sq_dists(view, rows, candidates)
        w = masked_softmax_parts(-D, other_real_columns(mask, rows, cols, col_ids, n))
        t_hat = (w @ t[cols]) / jnp.maximum(jnp.sum(w, axis=1), jnp.finfo(w.dtype).tiny)
        return jnp.sum(mask[rows] * valid * (t[rows] - t_hat) ** 2)

    m = n_anchors(problem, anchors)
    total = linalg.sum_over_blocks(block, m, row_block(problem, col_ids.shape[0], block_elements, anchors),
                                   rows=anchors)
    return total / n_valid(problem, anchors)
