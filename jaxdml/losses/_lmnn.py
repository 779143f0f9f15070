"""Large Margin Nearest Neighbours (Weinberger & Saul, 2009)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import linalg
from ._common import n_anchors, n_valid, row_block


def _lmnn(params, problem, param, mu, margin, block_elements, anchors=None, candidates=None):
    if problem.targets is None:
        raise ValueError("lmnn needs target neighbours: build the problem with n_neighbors=k.")
    X, y, mask = problem.X, problem.y, problem.sample_mask
    n = X.shape[0]
    k = problem.targets.shape[1]
    sampled = candidates is not None
    view = linalg.metric_view(params, X, param, lazy=sampled)
    dim = linalg.view_dim(view)
    exact = problem.impostors is None and not sampled
    if exact:
        per_row = n * (k + 1)
    elif sampled:
        per_row = candidates.shape[0] * (k + 1) + k * dim
    else:
        per_row = problem.impostors.shape[1] * (k + dim)

    def gathered(rows, idx):
        li, _, si = linalg.view_rows(view, rows)
        _, rj, sj = linalg.view_rows(view, idx)
        return jnp.maximum(si[:, None] + sj - 2 * jnp.einsum("bd,bkd->bk", li, rj), 0.0)

    def block(rows, valid):
        t = problem.targets[rows]
        tw = problem.target_mask[rows] * (mask[rows] * valid)[:, None]
        if exact:
            D = linalg.view_sq_dists(view, rows)
            dt = jnp.take_along_axis(D, t, axis=1)
            dl, lw = D, ((y[rows][:, None] != y[None, :]) & (mask[None, :] > 0)).astype(D.dtype)
        elif sampled:
            # uniform sample of the rows: an unbiased estimate of the sum over all impostors
            dt = gathered(rows, t)
            dl = linalg.view_sq_dists(view, rows, candidates)
            lw = ((y[rows][:, None] != y[candidates][None, :]) & (mask[candidates][None, :] > 0)).astype(dl.dtype)
            lw = lw * (n / candidates.shape[0])
        else:
            dt = gathered(rows, t)
            imp = problem.impostors[rows]
            dl = gathered(rows, imp)
            lw = problem.impostor_mask[rows] * mask[imp]
        pull = jnp.sum(tw * dt)
        hinge = jax.nn.relu(margin + dt[:, :, None] - dl[:, None, :])
        push = jnp.sum(hinge * tw[:, :, None] * lw[:, None, :])
        return (1.0 - mu) * pull + mu * push

    m = n_anchors(problem, anchors)
    total = linalg.sum_over_blocks(block, m, row_block(problem, per_row, block_elements, anchors), rows=anchors)
    return total / n_valid(problem, anchors)


def lmnn(L, problem, *, mu=0.5, margin=1.0, anchors=None, candidates=None,
         block_elements: int | None = None):
    r"""LMNN objective in the linear map ``L`` (non-convex; allows ``n_components < n_features``).

    .. math::

        \varepsilon(L) = \frac{1}{N}\Big[(1-\mu) \sum_i \sum_{j \rightsquigarrow i} \|L(x_i - x_j)\|^2
        + \mu \sum_i \sum_{j \rightsquigarrow i} \sum_{l : y_l \ne y_i}
        [\,m + \|L(x_i - x_j)\|^2 - \|L(x_i - x_l)\|^2\,]_+\Big]

    ``j ⇝ i`` ranges over the fixed target neighbours ``problem.targets`` (same class, Euclidean
    nearest); ``l`` over every differently-labelled sample (exact, when ``problem.impostors`` is
    None) or over the candidate index array ``problem.impostors``. ``mu`` weighs push against
    pull and ``m`` (``margin``) is the safety margin. Normalised by the number of samples N
    (or, with ``anchors``, restricted to those rows - a minibatch - and normalised by their count).
    With ``candidates`` (a uniform sample of row indices, for very large data) the push term is
    the unbiased estimate ``(N / S) sum_{l in sample}``; targets stay exact.

    Examples
    --------
    >>> import jax, numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(30, 4)); y = np.arange(30) % 3
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=3)
    >>> float(jaxdml.losses.lmnn(np.eye(4, dtype=np.float32), prob)) > 0
    True

    References
    ----------
    K. Q. Weinberger, L. K. Saul. Distance Metric Learning for Large Margin Nearest Neighbor
    Classification. JMLR 10, 2009.
    """
    return _lmnn(L, problem, "L", mu, margin, block_elements, anchors, candidates)


def lmnn_metric(M, problem, *, mu=0.5, margin=1.0, anchors=None, candidates=None,
                block_elements: int | None = None):
    r"""LMNN objective in the metric ``M`` (convex in ``M``; minimise over the PSD cone).

    Same value as :func:`lmnn` at ``M = L^T L``:

    .. math::

        \varepsilon(M) = \frac{1}{N}\Big[(1-\mu) \sum_{i, j \rightsquigarrow i} \|x_i - x_j\|_M^2
        + \mu \sum_{i, j \rightsquigarrow i, l} (1 - y_{il})
        [\,m + \|x_i - x_j\|_M^2 - \|x_i - x_l\|_M^2\,]_+\Big]

    Its gradient is the seed's sub-gradient ``G = (1-mu) sum O_ij + mu sum_{(i,j,l) active}
    (O_ij - O_il)`` divided by N. Pair it with :func:`jaxdml.projections.projection_psd` after
    every step (``jaxdml.fit(..., loss="lmnn_metric")`` does).
    """
    return _lmnn(M, problem, "M", mu, margin, block_elements, anchors, candidates)


def lmnn_pairs(L, problem, *, pair_anchor, pair_impostor, pair_mask, mu=0.5, margin=1.0,
               pair_diff=None, block_elements: int | None = None):
    r"""LMNN objective in ``L`` with the push term restricted to explicit impostor pairs.

    .. math::

        \varepsilon_A(L) = \frac{1}{N}\Big[(1-\mu) \sum_i \sum_{j \rightsquigarrow i} \|L(x_i - x_j)\|^2
        + \mu \sum_{(i, l) \in A} \sum_{j \rightsquigarrow i}
        [\,m + \|L(x_i - x_j)\|^2 - \|L(x_i - x_l)\|^2\,]_+\Big]

    The pull term runs over every target neighbour; the hinge over the active set ``A`` of
    (anchor, impostor) pairs given as padded index arrays ``pair_anchor``, ``pair_impostor`` with
    ``pair_mask`` (0 on padding). When ``A`` holds every differently-labelled pair with
    ``|L(x_i - x_l)|^2 < max_j |L(x_i - x_j)|^2 + m`` (what :func:`jaxdml.neighbors.active_impostors`
    returns), every non-zero hinge is in ``A`` and the value equals :func:`lmnn` exactly; between
    refreshes of ``A`` it is the active-set objective of Weinberger & Saul (2009, Section 5).
    ``pair_diff`` (optional, ``X[pair_anchor] - X[pair_impostor]``) saves the row gathers when the
    same set is evaluated many times.
    Memory is O(N k + ``|A|``), processed in blocks of pairs; no N x N array is formed. The gradient
    is the closed form ``2 L G`` (``G``: the weighted scatter of target and active-impostor
    differences), carried by a surrogate term, so the function supports ``jax.grad`` /
    ``value_and_grad`` (first order only, not ``jax.hessian``).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(30, 4)); y = np.arange(30) % 3
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=3)
    >>> i, l = np.nonzero(y[:, None] != y[None, :])  # every pair: the exact objective
    >>> v = jaxdml.losses.lmnn_pairs(jnp.eye(4), prob, pair_anchor=i, pair_impostor=l,
    ...                              pair_mask=np.ones(i.size))
    >>> bool(abs(v - jaxdml.losses.lmnn(jnp.eye(4), prob)) < 1e-4 * v)
    True
    """
    if problem.targets is None:
        raise ValueError("lmnn_pairs needs target neighbours: build the problem with n_neighbors=k.")
    X, mask = problem.X, problem.sample_mask
    n, k = problem.targets.shape
    Lc = jax.lax.stop_gradient(L)
    tw = problem.target_mask * mask[:, None]
    Dt = X[:, None, :] - X[problem.targets]  # (n, k, d) target differences
    dt = jnp.sum(jnp.einsum("nkd,ed->nke", Dt, Lc) ** 2, axis=-1)
    pa = jnp.asarray(pair_anchor, jnp.int32)
    pl = jnp.asarray(pair_impostor, jnp.int32)
    pm = jnp.asarray(pair_mask, X.dtype)

    d = X.shape[1]
    n_pairs = pa.shape[0]
    per_pair = 4 * (d + L.shape[0] + 2 * k)
    bs = linalg.block_size(max(n_pairs, 1), per_pair, block_elements)
    bs = 1 << (bs.bit_length() - 1)  # a power of two: it divides the solver's doubling capacities
    n_blocks = -(-n_pairs // bs)
    if n_pairs % bs:  # pad to whole blocks (mask 0)
        extra = n_blocks * bs - n_pairs
        pa, pl, pm = (jnp.concatenate([a, jnp.zeros(extra, a.dtype)]) for a in (pa, pl, pm))
        if pair_diff is not None:
            pair_diff = jnp.concatenate([pair_diff, jnp.zeros((extra, d), pair_diff.dtype)])

    def block(b, carry):
        i = jax.lax.dynamic_slice_in_dim(pa, b * bs, bs)
        l = jax.lax.dynamic_slice_in_dim(pl, b * bs, bs)
        w = jax.lax.dynamic_slice_in_dim(pm, b * bs, bs) * mask[l]
        D = X[i] - X[l] if pair_diff is None else jax.lax.dynamic_slice_in_dim(pair_diff, b * bs, bs)
        h = margin + dt[i] - jnp.sum((D @ Lc.T) ** 2, axis=1)[:, None]
        act = jnp.where(h > 0, tw[i] * w[:, None], 0.0)  # weight of each active hinge
        G = (D * jnp.sum(act, axis=1)[:, None]).T @ D
        return carry[0] + jnp.sum(h * act), carry[1] + G, carry[2].at[i].add(act)

    # only the blocks up to the last unmasked pair are visited (padding capacity costs nothing)
    last = jnp.max(jnp.where(pm > 0, jnp.arange(pm.shape[0]), -1)) + 1
    zero = (jnp.zeros((), X.dtype), jnp.zeros((d, d), X.dtype), jnp.zeros((n, k), X.dtype))
    push, G_push, C = jax.lax.fori_loop(0, (last + bs - 1) // bs, block, zero) if n_pairs else zero
    nv = n_valid(problem)
    value = ((1.0 - mu) * jnp.sum(tw * dt) + mu * push) / nv
    # d value / dL = 2 L G with G = sum_ij c_ij O_ij - mu sum_(i,l) (active hinges) O_il (O: outer
    # products of differences); the surrogate tr(L G L^T) - its constant value carries it, so no
    # gathered row has to be differentiated (a scatter-add per pair on CPU).
    c = (1.0 - mu) * tw + mu * C
    G = jax.lax.stop_gradient((jnp.einsum("nk,nkd,nke->de", c, Dt, Dt) - mu * G_push) / nv)
    surrogate = jnp.sum((L @ G) * L)
    return value + surrogate - jax.lax.stop_gradient(surrogate)
