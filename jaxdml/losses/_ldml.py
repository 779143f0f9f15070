"""Logistic Discriminant Metric Learning (Guillaumin, Verbeek & Schmid, 2009)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import linalg
from ._common import n_anchors, n_valid, other_real_columns, pair_columns, row_block

__all__ = ["ldml"]


def ldml(M, problem, *, b=1.0, anchors=None, candidates=None, block_elements: int | None = None):
    r"""LDML: mean negative log-likelihood of the logistic same-class model over all pairs.

    .. math::

        p_{ij} = \sigma(b - \|x_i - x_j\|_M^2), \qquad
        \mathcal{L}(M) = \sum_{i \ne j} y_{ij} \log p_{ij} + (1 - y_{ij}) \log(1 - p_{ij}),

    .. math::

        \mathrm{ldml}(M) = -\frac{\mathcal{L}(M)}{N (N - 1)}
        = \frac1N \sum_i \frac{1}{N-1} \sum_{j \ne i} -\log P(y_{ij} \mid x_i, x_j)

    ``M`` is the metric, ``b`` the logistic threshold (``b``), :math:`y_{ij} = [y_i = y_j]` from
    ``problem.y``; padding rows are masked by ``problem.sample_mask``. The normalisation by the
    number of ordered pairs makes the value an average per pair (the seed's sum also includes
    :math:`i = j`, which only adds the constant :math:`-N \log(1 + e^{-b})`). It is computed
    stably as :math:`-\log p = \mathrm{softplus}(d - b)`, :math:`-\log(1 - p) =
    \mathrm{softplus}(b - d)`, in row blocks (``block_elements``), never with an N x N x d tensor.
    Convex in ``M``: :math:`\nabla \mathcal{L}(M) = \sum_{ij} (p_{ij} - y_{ij}) (x_i - x_j)(x_i -
    x_j)^T` (seed), so ``jax.grad(ldml) = -\nabla\mathcal{L} / (N(N-1))``. Minimise over the PSD
    cone (``jaxdml.fit(..., loss="ldml")`` projects after every step).

    Parameters
    ----------
    M : (n_features, n_features) array
    problem : LabeledProblem
    b : float, default=1.0
        Threshold on the squared distance: pairs closer than ``b`` are more likely similar.
        Traced (changing it does not recompile).
    anchors : int array, optional
        Evaluate the mean only over the pairs of these rows (a minibatch) with every sample.
        Default: all rows.
    candidates : int array, optional
        Pair the anchors only with these rows (a sampled candidate set for very large data): an
        unbiased estimate of each anchor's mean over its pairs. Default: every sample (exact).
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
    >>> float(jaxdml.losses.ldml(np.eye(4, dtype=np.float32), prob, b=2.0)) > 0
    True

    References
    ----------
    M. Guillaumin, J. Verbeek, C. Schmid. Is that you? Metric Learning Approaches for Face
    Identification. ICCV 2009.
    """
    X, y, mask = problem.X, problem.y, problem.sample_mask
    n = X.shape[0]
    view = linalg.metric_view(M, X, "M")
    cols, col_ids = pair_columns(candidates, n)

    def block(rows, valid):
        D = linalg.view_sq_dists(view, rows, candidates)
        allowed = other_real_columns(mask, rows, cols, col_ids, n)
        same = y[rows][:, None] == y[cols][None, :]
        z = b - D
        nll = jnp.where(same, jax.nn.softplus(-z), jax.nn.softplus(z))
        w = (mask[rows] * valid)[:, None] * allowed
        per_pair = jnp.sum(jnp.where(w > 0, w * nll, 0.0), axis=1)
        return jnp.sum(per_pair / jnp.maximum(jnp.sum(allowed, axis=1), 1))  # mean over each anchor's pairs

    m = n_anchors(problem, anchors)
    block_rows = row_block(problem, col_ids.shape[0], block_elements, anchors)
    total = linalg.sum_over_blocks(block, m, block_rows, rows=anchors)
    return total / n_valid(problem, anchors)


def ldml_pairs(M, problem, *, b=1.0):
    r"""LDML on given pairs: the mean negative log-likelihood of the logistic model over the pairs.

    .. math::

        \frac{1}{|P|} \sum_{(i, j) \in P} s_{ij}\,\mathrm{softplus}(d_{ij} - b)
        + (1 - s_{ij})\,\mathrm{softplus}(b - d_{ij}), \qquad d_{ij} = \|x_i - x_j\|_M^2,

    the same per-pair term as :func:`ldml` with :math:`s_{ij} = [\ell_{ij} > 0]` (the pair's label
    :math:`\ell_{ij}` is +1 similar, -1 dissimilar) instead of :math:`[y_i = y_j]`. ``problem`` is a
    :class:`jaxdml.PairsProblem` (padding pairs masked by ``pair_mask``). Convex in ``M``.
    """
    diff = problem.X[problem.a] - problem.X[problem.b]
    D = jnp.einsum("pi,ij,pj->p", diff, M, diff)
    z = b - D
    nll = jnp.where(problem.labels > 0, jax.nn.softplus(-z), jax.nn.softplus(z))
    w = problem.pair_mask
    return jnp.sum(w * nll) / jnp.maximum(jnp.sum(w), 1.0)
