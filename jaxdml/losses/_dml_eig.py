"""Distance Metric Learning with Eigenvalue Optimization, DML-eig (Ying & Li, 2012).

Pure ``jnp`` pieces: the max-min objective and its entropy-smoothed version; the Frank-Wolfe solver
over the spectrahedron is :func:`jaxdml.solvers.dml_eig_solve`. Pair handling (labels -> all
pairs as ``(n, n)`` matrices, or explicit index pairs) is shared with LSI
(:func:`jaxdml.losses.pair_sq_dists`, :func:`jaxdml.losses.pair_weights`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._lsi import pair_sq_dists, pair_weights

__all__ = ["dml_eig_objective", "dml_eig_smoothed"]


def dml_eig_objective(M, problem):
    r"""DML-eig objective: the smallest squared distance over the dissimilar pairs.

    .. math:: f(M) = \min_{\tau \in D} \langle X_\tau, M \rangle = \min_{(i,j)\in D} \|x_i - x_j\|_M^2

    DML-eig maximises it subject to :math:`\langle X_S, M\rangle \le 1` (see
    :func:`jaxdml.losses.lsi_constraint`) and ``M`` PSD (seed, Eq. dmleig:2).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp, jaxdml
    >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]); y = np.array([0, 1, 0])
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=None)
    >>> float(jaxdml.losses.dml_eig_objective(jnp.eye(2), prob))  # |(3,3)|^2
    18.0
    """
    _, dis = pair_weights(problem)
    d2 = pair_sq_dists(M, problem)
    return jnp.min(jnp.where(dis > 0, d2, jnp.inf))


def smoothed_from_values(a, dis, mu):
    """:func:`dml_eig_smoothed` from the squared distances ``a`` of the pairs and their dissimilar weights ``dis``."""
    logits = jnp.where(dis > 0, -a / mu, -jnp.inf)
    count = jnp.maximum(jnp.sum(dis), 1.0)
    return -mu * (jax.nn.logsumexp(logits) - jnp.log(count))


def dml_eig_smoothed(M, problem, *, mu=0.01):
    r"""Entropy-smoothed DML-eig objective (a soft minimum over the dissimilar pairs).

    .. math::

        f_\mu(M) = \min_{u \in \Delta} \sum_{\tau\in D} u_\tau \langle X_\tau, M\rangle
        + \mu \sum_\tau u_\tau \log(|D|\,u_\tau)
        = -\mu \log \frac{1}{|D|} \sum_{\tau \in D} e^{-\langle X_\tau, M\rangle / \mu}

    (``mu`` = :math:`\mu`). It is concave, ``min <= f_mu <= min + mu log|D|``, and its gradient
    :math:`\sum_\tau u_\tau(M) X_\tau` weighs each dissimilar pair by a softmax of its negative
    distance. The entropy is taken relative to the uniform distribution (the ``log|D|`` shift of
    Ying & Li's smoothing), which changes the value by a constant only.
    """
    _, dis = pair_weights(problem)
    return smoothed_from_values(pair_sq_dists(M, problem), dis, mu)
