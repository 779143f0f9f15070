"""Metric Learning for Kernel Regression (Weinberger and Tesauro, 2007): the pure loss."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

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


def mlkr(L, problem: RegressionProblem, *, anchors=None):
    r"""Mean leave-one-out squared error of Nadaraya-Watson kernel regression under ``L``.

    .. math::

        \frac{1}{n}\sum_i (t_i - \hat t_i)^2, \qquad
        \hat t_i = \frac{\sum_{j \ne i} t_j k_{ij}}{\sum_{j \ne i} k_{ij}}, \qquad
        k_{ij} = \exp(-\|L(x_i - x_j)\|^2)

    The kernel weights are a softmax over ``j != i`` of ``-||L(x_i - x_j)||^2`` (log-sum-exp
    stabilised, so distant points cannot underflow every weight). Padding rows (``sample_mask``
    0) are neither predicted nor used as neighbours; ``anchors`` restricts the predicted rows.
    """
    Z = problem.X @ L.T
    mask = problem.sample_mask
    idx = jnp.arange(Z.shape[0]) if anchors is None else anchors
    Za = Z[idx]
    d2 = jnp.sum(Za * Za, axis=1)[:, None] + jnp.sum(Z * Z, axis=1)[None, :] - 2.0 * Za @ Z.T
    valid = (mask[None, :] > 0) & (idx[:, None] != jnp.arange(Z.shape[0])[None, :])
    logits = jnp.where(valid, -jnp.maximum(d2, 0.0), -jnp.inf)
    weights = jax.nn.softmax(logits, axis=1)
    t_hat = weights @ problem.t
    wa = mask[idx]
    return jnp.sum(wa * (problem.t[idx] - t_hat) ** 2) / jnp.maximum(jnp.sum(wa), 1.0)
