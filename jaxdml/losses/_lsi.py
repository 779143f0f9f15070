"""Learning with Side Information, LSI / MMC (Xing, Ng, Jordan & Russell, 2003).

Pure ``jnp`` pieces shared by the pair-constrained methods (LSI and DML-eig): squared distances
of the constrained pairs under a metric ``M``, the similarity scatter ``X_S``, the LSI objective
and constraint, and the jitted projected-gradient solver :func:`lsi_solve`.

Two kinds of problem pytree are accepted:

* :class:`jaxdml.problems.LabeledProblem` - *every* pair ``i < j`` of the (unpadded) rows takes
  part: similar when ``y_i == y_j``, dissimilar otherwise. Pair quantities are ``(n, n)``
  matrices built with one GEMM (``|a|^2 + |b|^2 - 2 a.b``), never ``(n, n, d)`` differences.
* :class:`jaxdml.problems.PairsProblem` - explicit index pairs ``(a_k, b_k)`` with 0/1 ``similar``
  flags (weak supervision, or pairs sampled from labels when ``n`` is large). Pair quantities are
  ``(p,)`` vectors.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..linalg import symmetrize
from ..problems import PairsProblem
from ..projections import projection_halfspace, projection_intersection, projection_psd

__all__ = [
    "pair_sq_dists",
    "pair_weights",
    "similar_scatter",
    "lsi_objective",
    "lsi_constraint",
    "lsi_solve",
    "LSIState",
]


def pair_weights(problem):
    """``(similar, dissimilar)`` 0/1 weights of the constrained pairs (padding has weight 0).

    For a :class:`~jaxdml.problems.LabeledProblem` these are ``(n, n)`` matrices over the upper
    triangle ``i < j``; for a :class:`~jaxdml.problems.PairsProblem` ``(p,)`` vectors.
    """
    if isinstance(problem, PairsProblem):
        return problem.similar * problem.pair_mask, (1.0 - problem.similar) * problem.pair_mask
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
    ``similar == 0`` (``PairsProblem``). Concave in ``M``; LSI maximises it subject to
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


class LSIState(NamedTuple):
    """Result of :func:`lsi_solve`.

    Attributes
    ----------
    M : (d, d) best feasible iterate (after the iterated projections).
    objective : its objective value.
    n_iter : gradient steps tried.
    converged : True when the relative improvement of an accepted step, or the relative step
        size, fell below ``tol``.
    history : (max_iter + 1,) objective of the current iterate after each step (NaN after).
    """

    M: jax.Array
    objective: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    history: jax.Array


@functools.partial(jax.jit, static_argnames=("max_iter", "proj_iter"))
def lsi_solve(M0, problem, A, *, max_iter: int = 100, tol=1e-5, learning_rate=0.02,
              proj_iter: int = 50, proj_tol=1e-7):
    r"""LSI by projected gradient ascent with iterated projections (jitted ``lax.while_loop``).

    Solves (seed, Eq. lsi:equiv)

    .. math::

        \max_{M} \sum_{(i,j)\in D} \|x_i - x_j\|_M \quad \text{s.t.}\quad
        \langle A, M\rangle = \sum_{(i,j)\in S}\|x_i - x_j\|_M^2 \le 1,\quad M \succeq 0

    (``A`` = :math:`X_S` from :func:`similar_scatter`). Each step moves along the gradient
    (``jax.grad`` of :func:`lsi_objective`, rescaled to the norm of ``M``) by the relative step
    ``eta`` and projects back onto :math:`\{\langle A, M\rangle \le 1\} \cap S_d^+` with Dykstra's
    iterated projections (:func:`~jaxdml.projections.projection_intersection` of
    :func:`~jaxdml.projections.projection_halfspace` and :func:`~jaxdml.projections.projection_psd`).
    A step that improves the objective is accepted and ``eta`` grows by 1.2; otherwise ``eta``
    is halved and the step retried from the last accepted point. Stops when an accepted step
    improves the objective by less than ``tol`` (relative) or ``eta < tol``.

    Parameters
    ----------
    M0 : (d, d) feasible starting metric (e.g. the identity scaled to ``<A, I> = 1``).
    problem : LabeledProblem or PairsProblem.
    A : (d, d) similarity scatter :math:`X_S`.
    max_iter, proj_iter : static iteration budgets (gradient steps; Dykstra sweeps per step).
    tol, learning_rate, proj_tol : traced floats (initial relative step ``learning_rate``).

    Returns
    -------
    LSIState

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning with application to
    clustering with side-information. NIPS 2002.
    """
    dtype = problem.X.dtype
    A = symmetrize(jnp.asarray(A, dtype))
    # Work with Mt = c M and At = A / c, c = tr(A) / d, so that the boundary point I/d has norm
    # O(1) whatever the data scale (Dykstra's stopping test is relative to 1 + |M|).
    c = jnp.maximum(jnp.trace(A) / A.shape[0], jnp.finfo(dtype).tiny)
    At = A / c
    Mt0 = symmetrize(jnp.asarray(M0, dtype)) * c
    tol = jnp.asarray(tol, dtype)
    proj_tol = jnp.asarray(proj_tol, dtype)
    eta0 = jnp.asarray(learning_rate, dtype)
    root_c = jnp.sqrt(c)

    def half(M):
        return projection_halfspace(M, -At, -1.0)

    def project(M):
        M = projection_intersection(M, (half, projection_psd), max_iter=proj_iter, tol=proj_tol)
        # Dykstra stops after finitely many sweeps: land exactly inside both sets (PSD cone,
        # then a shrink onto the half-space, which keeps PSD) so every iterate is feasible.
        M = projection_psd(M)
        return M / jnp.maximum(jnp.sum(At * M), 1.0)

    vg = jax.value_and_grad(lsi_objective)

    def direction(M, G):
        G = symmetrize(G)
        return G * (jnp.linalg.norm(M) / jnp.maximum(jnp.linalg.norm(G), jnp.finfo(dtype).tiny))

    def body(state):
        # The first pass evaluates the start point itself (eta = 0 direction, f = -inf), so the
        # projection and the gradient appear once in the compiled loop.
        M, f, D, eta, it, _, hist = state
        cand = project(M + eta * D)
        fc, gc = vg(cand, problem)
        accept = jnp.isfinite(fc) & (fc > f)
        improvement = (fc - f) / jnp.maximum(jnp.abs(f), jnp.finfo(dtype).tiny)
        M1 = jnp.where(accept, cand, M)
        f1 = jnp.where(accept, fc, f)
        D1 = jnp.where(accept, direction(cand, gc), D)
        eta1 = jnp.where(accept, jnp.where(jnp.isfinite(f), eta * 1.2, eta0), eta * 0.5)
        done = (accept & (improvement < tol)) | (eta1 < tol) | ~jnp.isfinite(f1)
        hist = hist.at[it].set(f1 / root_c)
        return M1, f1, D1, eta1, it + 1, done, hist

    def cond(state):
        return (state[4] <= max_iter) & ~state[5]

    hist = jnp.full((max_iter + 1,), jnp.nan, dtype)
    neg_inf = jnp.asarray(-jnp.inf, dtype)
    init = (Mt0, neg_inf, jnp.zeros_like(Mt0), eta0, jnp.asarray(0), jnp.asarray(False), hist)
    Mt, f, _, _, it, done, hist = jax.lax.while_loop(cond, body, init)
    return LSIState(Mt / c, f / root_c, it - 1, done, hist)
