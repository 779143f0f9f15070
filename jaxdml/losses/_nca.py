"""Neighbourhood Components Analysis (Goldberger et al., 2005)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import linalg
from ._common import masked_softmax_parts, n_anchors, n_valid, other_real_columns, pair_columns, row_block


def nca(L, problem, *, reg=0.0, logdet=0.0, anchors=None, candidates=None, block_elements: int | None = None):
    r"""Negative expected leave-one-out accuracy of the stochastic nearest-neighbour rule.

    .. math::

        p_{ij} = \frac{\exp(-\|L x_i - L x_j\|^2)}{\sum_{k \ne i} \exp(-\|L x_i - L x_k\|^2)},
        \qquad
        \mathcal{L}(L) = -\frac{1}{N} \sum_i \sum_{j : y_j = y_i} p_{ij} + \lambda \sum_f r_f^2 \|L_{:, f}\|^2

    ``L`` is the linear map (n_components, n_features) and the data come from ``problem``
    (``problem.X``, ``problem.y``, ``problem.sample_mask``). The seed's objective
    :math:`f(L) = \sum_i p_i` equals ``-N * nca(L, problem)``. Softmaxes are computed with the
    max subtracted; anchors are processed in row blocks (``block_elements`` bounds the size of a
    block of pairwise work), so memory is O(block * N), never an (N, N, d) tensor.

    Parameters
    ----------
    L : (n_components, n_features) array
    problem : LabeledProblem
    reg : float, default=0.0
        Weight :math:`\lambda` of a Frobenius penalty on ``L`` measured in units of the feature
        ranges :math:`r_f` (max - min over the samples; on data min-max scaled to [0, 1] it is
        :math:`\lambda \|L\|_F^2`, and it does not depend on how each feature is scaled).
        0: the paper's objective. The k-NN rule does not see the scale of ``L`` but the
        objective does: unpenalised, it grows ``L`` until each training point's softmax
        neighbourhood holds one or two points, which overfits small, noisy data.
    logdet : float or None, default=0.0
        Weight :math:`\mu` of a log-determinant term :math:`-\mu \log\det(\tilde L \tilde L^T)` on the
        map in range units (:math:`\tilde L = L\,\mathrm{diag}(r)`). With ``logdet = reg`` the two
        terms are :math:`\lambda\,(\operatorname{tr} \tilde M - \log\det \tilde M)`, the LogDet
        divergence to the Euclidean metric of the range-scaled data (up to a constant, at full
        dimension): a direction the NCA term does not use stays at unit length instead of being
        shrunk to zero, so the penalty never collapses the metric's rank. None or a Python 0 leaves the
        term out of the program (a traced weight of 0 still evaluates it, and a map of numerically lower
        rank makes it ``0 * inf``).
    anchors : int array, optional
        Evaluate the objective only for these rows (a minibatch), each still exactly against every
        sample; the mean is then over the valid anchors. Default: all rows.
    candidates : int array, optional
        Restrict the softmax to these rows (a sampled candidate set, for very large data): a
        stochastic approximation of the exact objective. Default: every sample (exact).
    block_elements : int, optional
        Largest number of pairwise entries held at once (static).

    Returns
    -------
    scalar

    Examples
    --------
    >>> import jax, numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(30, 4)); y = np.arange(30) % 3
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=None)
    >>> g = jax.grad(jaxdml.losses.nca)(np.eye(4, dtype=np.float32), prob)
    >>> g.shape
    (4, 4)

    References
    ----------
    J. Goldberger, G. Hinton, S. Roweis, R. Salakhutdinov. Neighbourhood Components Analysis.
    NIPS 2005.
    """
    X, y, mask = problem.X, problem.y, problem.sample_mask
    n = X.shape[0]
    view = linalg.metric_view(L, X, "L", lazy=candidates is not None)
    cols, col_ids = pair_columns(candidates, n)
    ncols = col_ids.shape[0]

    def block(rows, valid):
        D = linalg.view_sq_dists(view, rows, candidates)
        allowed = other_real_columns(mask, rows, cols, col_ids, n)
        w = masked_softmax_parts(-D, allowed)
        same = y[rows][:, None] == y[cols][None, :]
        num = jnp.sum(jnp.where(same, w, 0.0), axis=1)
        den = jnp.maximum(jnp.sum(w, axis=1), jnp.finfo(w.dtype).tiny)
        weight = mask[rows] * valid
        return jnp.sum(weight * num / den)

    m = n_anchors(problem, anchors)
    total = linalg.sum_over_blocks(block, m, row_block(problem, ncols, block_elements, anchors), rows=anchors)
    value = -total / n_valid(problem, anchors) + reg * range_penalty(L, problem)
    if logdet is None or (isinstance(logdet, (int, float)) and logdet == 0):  # off: not even 0 * log det
        return value
    return value - logdet * range_logdet(L, problem)


def _ranges(problem):
    """``r_f``: the range of each feature over the real samples."""
    real = problem.sample_mask[:, None] > 0
    hi = jnp.max(jnp.where(real, problem.X, -jnp.inf), axis=0)
    lo = jnp.min(jnp.where(real, problem.X, jnp.inf), axis=0)
    return hi - lo


def range_penalty(L, problem):
    """``sum_f r_f^2 ||L[:, f]||^2`` with ``r_f`` the range of feature ``f`` over the real samples."""
    return jnp.sum(L * L * (_ranges(problem) ** 2)[None, :])


def range_logdet(L, problem):
    """``log det(L~ L~^T)`` of the map in range units, ``L~ = L diag(r)`` (a ridge of 1e-8 of the mean
    eigenvalue keeps it finite for a map of lower rank, e.g. an LDA start with zero rows)."""
    Lr = L * _ranges(problem)[None, :]
    G = Lr @ Lr.T
    k = G.shape[0]
    eps = 1e-8 * jnp.trace(G) / k + jnp.finfo(G.dtype).tiny
    return jnp.linalg.slogdet(G + eps * jnp.eye(k, dtype=G.dtype))[1]
