"""Maximally Collapsing Metric Learning (Globerson & Roweis, 2006)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import linalg
from ._common import n_anchors, n_valid, other_real_columns, pair_columns, row_block
from ._ncm import _masked_logsumexp

__all__ = ["mcml"]


def mcml(M, problem, *, anchors=None, candidates=None, block_elements: int | None = None):
    r"""MCML: mean KL divergence from the "collapsed classes" distribution to the metric's one.

    .. math::

        p^M(j \mid i) = \frac{\exp(-\|x_i - x_j\|_M^2)}{\sum_{k \ne i} \exp(-\|x_i - x_k\|_M^2)},
        \qquad
        p_0(j \mid i) = \frac{[y_j = y_i,\ j \ne i]}{|C_i| - 1},

    .. math::

        \mathrm{mcml}(M) = \frac1N \sum_{i=1}^N \mathrm{KL}\big[p_0(\cdot|i) \,\|\, p^M(\cdot|i)\big]
        = \frac1N \sum_i \Big( \sum_{j} p_0(j|i) \|x_i - x_j\|_M^2
          + \log \sum_{k \ne i} e^{-\|x_i - x_k\|_M^2} - \log(|C_i| - 1) \Big)

    ``M`` is the (symmetric, PSD) metric; data from ``problem`` (``X``, ``y``, padding masked by
    ``sample_mask``). :math:`p_0` is normalised as the seed's ":math:`p_0(j|i) \propto 1` for
    :math:`y_j = y_i`" requires, so the value is a true KL divergence (>= 0; samples alone in
    their class have no :math:`p_0` and are skipped). It is convex in ``M``; its gradient is
    :math:`\frac1N \sum_{i,j} (p_0(j|i) - p^M(j|i)) (x_i - x_j)(x_i - x_j)^T`, the seed's
    :math:`\nabla f(M)` with :math:`p_0` normalised. Minimise it over the PSD cone
    (``jaxdml.fit(..., loss="mcml")`` projects after every step). Anchors are processed in row
    blocks (``block_elements`` bounds a block of pairwise work); the log-sum-exp subtracts the max.

    Parameters
    ----------
    M : (n_features, n_features) array
    problem : LabeledProblem
    anchors : int array, optional
        Evaluate the mean only over these rows (a minibatch), each still against every sample.
        Default: all rows.
    candidates : int array, optional
        Restrict :math:`p^M(\cdot|i)` and :math:`p_0(\cdot|i)` to these rows (a sampled candidate
        set for very large data): a stochastic approximation. Default: every sample (exact).
    block_elements : int, optional
        Largest number of pairwise entries held at once (static).

    Returns
    -------
    scalar

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(30, 4)); y = np.arange(30) % 3
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=None)
    >>> float(jaxdml.losses.mcml(np.eye(4, dtype=np.float32), prob)) >= 0
    True

    References
    ----------
    A. Globerson, S. Roweis. Metric Learning by Collapsing Classes. NIPS 2006.
    """
    X, y, mask = problem.X, problem.y, problem.sample_mask
    n = X.shape[0]
    view = linalg.metric_view(M, X, "M")
    cols, col_ids = pair_columns(candidates, n)

    def block(rows, valid):
        D = linalg.view_sq_dists(view, rows, candidates)
        allowed = other_real_columns(mask, rows, cols, col_ids, n)
        same = allowed & (y[rows][:, None] == y[cols][None, :])
        n_same = jnp.sum(same, axis=1).astype(D.dtype)
        pull = jnp.sum(jnp.where(same, D, 0.0), axis=1) / jnp.maximum(n_same, 1.0)
        kl = pull + _masked_logsumexp(-D, allowed) - jnp.log(jnp.maximum(n_same, 1.0))
        weight = mask[rows] * valid * (n_same > 0)
        return jnp.sum(jnp.where(weight > 0, weight * kl, 0.0))

    m = n_anchors(problem, anchors)
    block_rows = row_block(problem, col_ids.shape[0], block_elements, anchors)
    total = linalg.sum_over_blocks(block, m, block_rows, rows=anchors)
    return total / n_valid(problem, anchors)
