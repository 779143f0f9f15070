"""Learning with Side Information, LSI / MMC (Xing, Ng, Jordan & Russell, 2003).

Pure ``jnp`` pieces shared by the pair-constrained methods (LSI and DML-eig): squared distances
of the constrained pairs under a metric ``M``, the similarity scatter ``X_S``, the LSI objective
and constraint. The projected-gradient solver is :func:`jaxdml.solvers.lsi_solve`.

Two kinds of problem pytree are accepted:

* :class:`jaxdml.problems.LabeledProblem` - *every* pair ``i < j`` of the (unpadded) rows takes
  part: similar when ``y_i == y_j``, dissimilar otherwise. Pair quantities are ``(n, n)``
  matrices built with one GEMM (``|a|^2 + |b|^2 - 2 a.b``), never ``(n, n, d)`` differences.
* :class:`jaxdml.problems.PairsProblem` - explicit index pairs ``(a_k, b_k)`` with +1/-1 ``labels``
  (weak supervision, or pairs sampled from labels when ``n`` is large), read through the problem's
  0/1 views ``similar`` (``labels > 0``) and ``dissimilar`` (``labels < 0``). Pair quantities are
  ``(p,)`` vectors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..linalg import symmetrize
from ..problems import PairsProblem

__all__ = [
    "pair_sq_dists",
    "pair_weights",
    "similar_scatter",
    "lsi_objective",
    "lsi_constraint",
    "dissimilar_scatter",
]


def pair_weights(problem):
    """``(similar, dissimilar)`` 0/1 weights of the constrained pairs (padding has weight 0).

    For a :class:`~jaxdml.problems.LabeledProblem` these are ``(n, n)`` matrices over the upper
    triangle ``i < j``; for a :class:`~jaxdml.problems.PairsProblem` ``(p,)`` vectors.
    """
    if isinstance(problem, PairsProblem):
        return problem.similar * problem.pair_mask, problem.dissimilar * problem.pair_mask
    n = problem.X.shape[0]
    m = problem.sample_mask
    upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
    valid = upper & (m[:, None] > 0) & (m[None, :] > 0)
    same = problem.y[:, None] == problem.y[None, :]
    dt = problem.X.dtype
    return (valid & same).astype(dt), (valid & ~same).astype(dt)


def pair_sq_dists(M, problem):
    r"""Squared Mahalanobis distances :math:`d_M^2(x_i, x_j) = \langle M, O_{ij}\rangle` of the pairs.

    ``(n, n)`` for a :class:`~jaxdml.problems.LabeledProblem` (all pairs, from one GEMM),
    ``(p,)`` for a :class:`~jaxdml.problems.PairsProblem`. Clipped at 0 (round-off).
    """
    X = problem.X
    left = X @ symmetrize(M)
    s = jnp.sum(left * X, axis=-1)
    if isinstance(problem, PairsProblem):
        a, b = problem.a, problem.b
        d2 = s[a] + s[b] - 2.0 * jnp.sum(left[a] * X[b], axis=-1)
    else:
        d2 = s[:, None] + s[None, :] - 2.0 * left @ X.T
    return jnp.maximum(d2, 0.0)


def similar_scatter(problem):
    r"""The similarity scatter :math:`X_S = \sum_{(i,j)\in S} (x_i - x_j)(x_i - x_j)^T`.

    For labels it comes from class-wise scatter matrices,
    :math:`X_S = \sum_c n_c \sum_{i \in c} x_i x_i^T - s_c s_c^T` with :math:`s_c = \sum_{i\in c}
    x_i` (no pairs enumerated); for explicit pairs from the difference vectors. Then
    :math:`\sum_S d_M^2 = \langle X_S, M \rangle`.
    """
    X = problem.X
    if isinstance(problem, PairsProblem):
        w = problem.similar * problem.pair_mask
        D = X[problem.a] - X[problem.b]
        return D.T @ (D * w[:, None])
    m = problem.sample_mask
    n_classes = problem.class_counts.shape[0]
    Y = jax.nn.one_hot(problem.y, n_classes, dtype=X.dtype) * m[:, None]
    counts = jnp.sum(Y, axis=0)
    sums = Y.T @ X
    w = (Y @ counts) * m
    return symmetrize(X.T @ (X * w[:, None]) - sums.T @ sums)


def _safe_sqrt(d2):
    tiny = jnp.finfo(d2.dtype).tiny ** 0.5
    return jnp.sqrt(jnp.maximum(d2, tiny))


def lsi_objective(M, problem):
    r"""LSI objective: the sum of (non-squared) distances over the dissimilar pairs.

    .. math:: f(M) = \sum_{(i,j) \in D} \|x_i - x_j\|_M = \sum_{(i,j)\in D} \sqrt{\langle M, O_{ij}\rangle}

    ``D`` is every differently-labelled pair ``i < j`` (``LabeledProblem``) or the pairs flagged
    ``labels < 0`` (``PairsProblem``). Concave in ``M``; LSI maximises it subject to
    :func:`lsi_constraint` ``<= 1`` and ``M`` PSD.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp, jaxdml
    >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]); y = np.array([0, 1, 0])
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=None)
    >>> round(float(jaxdml.losses.lsi_objective(jnp.eye(2), prob)), 4)  # |(3,4)| + |(3,3)|
    9.2426
    """
    _, dis = pair_weights(problem)
    return jnp.sum(dis * _safe_sqrt(pair_sq_dists(M, problem)))


def lsi_constraint(M, problem):
    r"""LSI constraint value :math:`g(M) = \sum_{(i,j)\in S} \|x_i - x_j\|_M^2 = \langle X_S, M\rangle`."""
    return jnp.sum(similar_scatter(problem) * symmetrize(M))


def dissimilar_scatter(problem):
    r"""The dissimilarity scatter :math:`X_D = \sum_{(i,j)\in D} (x_i - x_j)(x_i - x_j)^T`.

    For labels, all pairs' scatter :math:`n \sum_i x_i x_i^T - s s^T` minus :func:`similar_scatter`;
    for explicit pairs from the difference vectors of the pairs flagged dissimilar.
    """
    X = problem.X
    if isinstance(problem, PairsProblem):
        w = problem.dissimilar * problem.pair_mask
        D = X[problem.a] - X[problem.b]
        return symmetrize(D.T @ (D * w[:, None]))
    m = problem.sample_mask
    Xm = X * m[:, None]
    s = jnp.sum(Xm, axis=0)
    total = jnp.sum(m) * (Xm.T @ X) - jnp.outer(s, s)
    return symmetrize(total - similar_scatter(problem))
