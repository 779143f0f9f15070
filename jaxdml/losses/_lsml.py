r"""Least Squares Metric Learning (Liu, Mu, Chen, Shu, Li, 2012): the pure loss on relative comparisons.

Quadruplet ``(a, b, c, d)`` asks ``d_M(a, b) < d_M(c, d)``. With :math:`d_M(u, v) = \|L(u - v)\|`
(not squared) and :math:`M = L^\top L`:

.. math::

    \sum_q w_q \big[d_M(a_q, b_q) - d_M(c_q, d_q)\big]_+^2
    + \operatorname{tr}(M M_0^{-1}) - \log\det M

(a squared hinge on the comparisons plus the LogDet divergence to the prior ``M0`` up to
constants), smooth in ``L`` wherever the distances are positive.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["QuadrupletProblem", "lsml"]


class QuadrupletProblem(NamedTuple):
    """Relative comparisons as difference vectors (a JAX pytree).

    Attributes
    ----------
    X : (n, 2, d) float, the differences ``x_a - x_b`` and ``x_c - x_d`` (zero rows pad).
    weights : (n,) float, the comparison weights (0 on padding rows).
    prior_inv : (d, d) float, ``M0^{-1}``.
    """

    X: jax.Array
    weights: jax.Array
    prior_inv: jax.Array


def _norm(V):
    d2 = jnp.sum(V * V, axis=1)
    pos = d2 > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, d2, 1.0)), 0.0)


def lsml(L, problem: QuadrupletProblem):
    r"""LSML's objective at ``M = L^T L`` (see the module docstring); ``L`` square."""
    dab = _norm(problem.X[:, 0] @ L.T)
    dcd = _norm(problem.X[:, 1] @ L.T)
    hinge = jnp.maximum(dab - dcd, 0.0)
    comparisons = jnp.sum(problem.weights * hinge * hinge)
    M = L.T @ L
    _, logabsdet = jnp.linalg.slogdet(L)
    return comparisons + jnp.sum(M * problem.prior_inv) - 2.0 * logabsdet
