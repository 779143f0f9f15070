r"""Sparse Determinant Metric Learning (Qi, Tang, Zha, Chua, Zhang, ICML 2009): the objective.

Its solver, a graphical lasso by ADMM in ``jnp``, is :func:`jaxdml.solvers.sdml_admm`.

SDML learns ``M`` close to a prior ``M0`` in the LogDet sense, sparse off its diagonal, and with
small distances on similar pairs and large ones on dissimilar pairs:

.. math::

    \min_{M \succ 0}\ \operatorname{tr}(M M_0^{-1}) - \log\det M + \eta \sum_{(i,j)} y_{ij}\,
    d_M^2(x_i, x_j) + \lambda \sum_{k \ne l} |M_{kl}|
    = \operatorname{tr}(M S) - \log\det M + \lambda \|M\|_{1,\mathrm{off}},

with :math:`S = M_0^{-1} + \eta \sum y_{ij} (x_i - x_j)(x_i - x_j)^\top` (``y = +1`` similar,
``-1`` dissimilar): a graphical lasso with "empirical covariance" ``S``.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["sdml_objective"]


def sdml_objective(M, S, sparsity):
    r"""``tr(M S) - log det M + sparsity * sum_{k != l} |M_kl|`` (``inf`` when ``M`` is not PD)."""
    sign, logdet = jnp.linalg.slogdet(M)
    off = jnp.sum(jnp.abs(M)) - jnp.sum(jnp.abs(jnp.diag(M)))
    val = jnp.sum(M * S) - logdet + sparsity * off
    return jnp.where(sign > 0, val, jnp.inf)
