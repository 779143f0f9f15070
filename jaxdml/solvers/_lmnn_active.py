"""LMNN on large data with an active set of impostors (Weinberger & Saul, JMLR 2009, Section 5).

The push term of LMNN sums a hinge over every (anchor, target, impostor) triplet, but at any ``L``
only the few impostors inside the margin of an anchor's targets contribute. The solver alternates

1. a *refresh*: the active set, every differently-labelled pair ``(i, l)`` with
   ``|L(x_i - x_l)|^2 < max_j |L(x_i - x_j)|^2 + margin * (1 + slack)`` under the current ``L``,
   kept as padded index arrays whose capacity doubles when exceeded (so compiled shapes are
   bucketed). It is taken from certified candidate lists
   (:class:`~jaxdml.solvers._lmnn_candidates.CandidateIndex`): an exact blockwise O(N^2) search
   (:func:`jaxdml.neighbors.impostors_within`, O(block) memory, never N x N) keeps the pairs
   within ``margin * (1 + cand_slack)``; later refreshes only filter those, and search again
   when a bound on the change of the metric (generalised eigenvalues of ``(L^T L, L_t^T L_t)``)
   no longer proves that no other pair can be in the active set;
2. up to ``refresh_every`` full-batch L-BFGS steps (:func:`jaxdml.minimize`, the whole loop in
   one jitted ``while_loop``) on :func:`jaxdml.losses.lmnn_pairs`, the objective with the hinge
   restricted to that set (pull term over every target);
3. a trust region: when the exact objective at the end of a phase is above its value at the
   start (the phase left the region where its active set held every impostor, e.g. it shrank a
   direction that only pairs outside the set would have resisted), the step is halved along the
   segment from the start, up to four times. Both values are the refreshed set's objective computed on
   the host from the distances the refresh has just found (:func:`set_value`), so the check compiles
   no program of its own.

At a refresh point the active-set objective equals the exact one (every pair whose hinge can be
non-zero is in the set). The fit has converged only when the inner stopping test was met *and*
the following refresh finds no violating impostor outside the set the inner solver used, i.e.
the stopping test held for the exact objective. With ``chunks_per_refresh`` (very large data)
a refresh searches only that many stale reference chunks: between chunk searches the active set
can miss impostors of the other chunks, and the fit is converged only once every chunk is
certified at the final ``L``.

Before the first refresh ``L`` is rescaled by the factor that minimises the LMNN objective along
the ray ``a L`` (estimated on a sample of anchors and candidates): on min-max scaled data with
margin 1 nearly half of all pairs are inside the margin at ``L = I``; at the best scale only a
thin shell is. LMNN is convex in ``M = L^T L``, so a rescaled start changes the path, not the
optimum.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._runtime._device import brief_programs, to_device
from .._validation import seed_from
from ..losses import lmnn_pairs
from ._driver import make_optimizer, minimize
from ._lmnn_candidates import CandidateIndex

__all__ = ["ActiveSetResult", "minimize_active_set", "ACTIVE_SET_DEFAULTS"]

#: defaults of the active-set solver when ``jaxdml.fit`` routes ``loss="lmnn"`` to it (the routing policy
#: itself is LMNN's record: ``jaxdml.methods.gradient._lmnn.ACTIVE_SET_ROUTE``)
#: (``max_n``: above it each refresh's exact O(N^2 d) search is too slow on a CPU, and the active set
#: runs on a class-stratified subsample of ``subsample`` rows instead, drawn by the method layer)
#: (``first_cand_slack``: the first search keeps candidates within that many margins only: the first phase, from the
#: rescaled start, moves the metric so far that wider first candidates are searched again anyway (the 18 000-row
#: stand-in: 4.1 M candidates at 2.0, 1.0 M at 0.75, the same fit); a quarter margin above ``slack`` keeps the
#: active sets the same as the wide search's, float rounding of the search's distances included)
#: (``chunked_above``: above it each refresh searches one chunk of ``chunk_rows`` reference rows
#: with candidates within ``chunk_cand_slack`` margins, instead of every stale chunk)
ACTIVE_SET_DEFAULTS = dict(max_iter=500, refresh_every=50, slack=0.5, cand_slack=2.0, first_cand_slack=0.75,
                           max_n=100_000, subsample=50_000, chunked_above=100_000, chunk_rows=25_000,
                           chunk_cand_slack=1.0)


class ActiveSetResult(NamedTuple):
    """Like :class:`jaxdml.solvers.SolverResult`, plus ``info`` (refreshes, active-set sizes)."""

    params: Any
    loss: float
    n_iter: int
    converged: bool
    loss_history: np.ndarray
    failed: bool
    info: dict


@jax.jit
def _radii(L, X, targets, target_mask, sample_mask, margin, slack):
    """``Z = X L^T``, per anchor ``max_j d_ij + margin`` and ``... + margin * (1 + slack)``, and the
    squared target distances ``d_ij`` ((n, k))."""
    Z = X @ L.T
    dt = jnp.sum((Z[:, None, :] - Z[targets]) ** 2, axis=-1)
    tw = target_mask * sample_mask[:, None]
    far = jnp.max(jnp.where(tw > 0, dt, -jnp.inf), axis=1)
    return Z, far + margin, far + margin * (1.0 + slack), dt


def set_value(dt, tw, anchor, dist, *, mu, margin, n_rows, piece: int = 1 << 20) -> float:
    """The LMNN objective restricted to the pairs ``(anchor[p], l_p)`` at squared distances ``dist[p]``,
    in float64 on the host: ``((1 - mu) sum_ij tw_ij d_ij + mu sum_p sum_j tw_aj [margin + d_aj -
    dist_p]_+) / n_rows`` (``dt``: squared target distances, ``tw``: target weights of valid rows,
    ``n_rows``: the number of valid rows); :func:`jaxdml.losses.lmnn_pairs` on that set, and
    :func:`jaxdml.losses.lmnn` when the set holds every pair with a non-zero hinge."""
    dt, tw = np.asarray(dt, np.float64), np.asarray(tw, np.float64)
    dist = np.asarray(dist, np.float64)
    hinge = 0.0
    for s in range(0, anchor.size, piece):  # O(piece * k) memory
        a = anchor[s: s + piece]
        h = margin + dt[a] - dist[s: s + piece, None]
        hinge += float(np.sum(np.where(h > 0, h * tw[a], 0.0)))
    return ((1.0 - mu) * float(np.sum(tw * dt)) + mu * hinge) / max(float(n_rows), 1.0)


def initial_scale(Z, codes, valid, targets, target_mask, *, mu, margin, random_state=None,
                  n_anchors: int = 256, n_candidates: int = 4096) -> float:
    """The factor ``a`` minimising ``f(a) = (1-mu) a T + mu sum relu(margin - a v)`` (LMNN along the
    ray ``sqrt(a) L``), where ``T`` is the pull term and ``v = d_il - d_ij`` over triplets.

    ``T`` is exact; the push sum is estimated on ``n_anchors`` anchors against ``n_candidates``
    uniformly drawn rows (rescaled). ``f`` is convex and piecewise linear in ``a``; its minimiser
    is found by bisection on the sign of ``f'`` in log space, within ``[1e-3, 1e4]`` widened by the data's
    scale: by ``1 / t`` where ``t`` is the mean squared distance to a target neighbour (data that live in a
    tiny range, e.g. min-max scaled rows with a few extreme outliers, need a factor far above 1e4).
    """
    Z = np.asarray(Z, np.float64)
    valid = np.asarray(valid, bool)
    tw = np.asarray(target_mask, np.float64) * valid[:, None]
    dt = ((Z[:, None, :] - Z[np.asarray(targets)]) ** 2).sum(-1)
    pull = float(np.sum(tw * dt))
    rows = np.flatnonzero(valid & (tw.sum(1) > 0))
    if pull <= 0 or rows.size == 0:
        return 1.0
    rng = np.random.default_rng(None if random_state is None else seed_from(random_state))  # int: as before
    anchors = rng.choice(rows, min(n_anchors, rows.size), replace=False)
    pool = np.flatnonzero(valid)
    cand = rng.choice(pool, min(n_candidates, pool.size), replace=False)
    sq = np.sum(Z * Z, axis=1)
    dl = np.maximum(sq[anchors][:, None] + sq[cand][None, :] - 2.0 * Z[anchors] @ Z[cand].T, 0.0)  # (S, C)
    other = codes[anchors][:, None] != codes[cand][None, :]
    v = dl[:, None, :] - dt[anchors][:, :, None]  # (S, k, C)
    sel = other[:, None, :] & (tw[anchors][:, :, None] > 0)
    v = v[sel]
    weight = (rows.size / anchors.size) * (pool.size / cand.size)

    def slope(a):
        return (1.0 - mu) * pull - mu * weight * float(np.sum(v[a * v < margin]))

    t = pull / max(float(tw.sum()), 1.0)
    lo, hi = 1e-3 * min(1.0, 1.0 / t), 1e4 * max(1.0, 1.0 / t)
    if slope(lo) >= 0:
        return lo
    if slope(hi) <= 0:
        return hi
    for _ in range(50):
        mid = np.sqrt(lo * hi)
        lo, hi = (lo, mid) if slope(mid) > 0 else (mid, hi)
    return float(np.sqrt(lo * hi))


def _set_value_fn(problem, mu, margin):
    """``value(dt, anchor, dist)``: :func:`set_value` for ``problem``'s target weights and valid rows."""
    mask = np.asarray(problem.sample_mask, np.float64)
    tw = np.asarray(problem.target_mask, np.float64) * mask[:, None]
    return lambda dt, anchor, dist: set_value(dt, tw, anchor, dist, mu=float(mu), margin=float(margin),
                                              n_rows=float(mask.sum()))


def _refresh(index, L, X, radii, margin, max_chunks, value):
    """The active set at ``L``: candidate pairs (searched again where not certified) inside the
    radius, which of them are inside the hinge (``strict``), and the objective restricted to the set
    (``value(dt, anchor, dist)``: :func:`set_value`)."""
    Z, inner, outer, dt = radii(L)
    inner, outer = np.asarray(inner, np.float64), np.asarray(outer, np.float64)
    a, l, dist, certified = index.refresh(L, X, Z, inner - margin, max_chunks=max_chunks)
    keep = dist < outer[a]
    a, l, dist = a[keep], l[keep], dist[keep]
    return a, l, dist < inner[a], certified, value(dt, a, dist)


@jax.jit
def _differences(X, a, l):
    return X[a] - X[l]


def _start_scale(L, problem, codes, valid, mu, margin, random_state):
    """:func:`initial_scale` at ``L``."""
    Z0 = np.asarray(problem.X, np.float64) @ np.asarray(L, np.float64).T
    return initial_scale(Z0, codes, valid, problem.targets, problem.target_mask, mu=float(mu), margin=float(margin),
                         random_state=random_state)


def _capacity(size, minimum):
    """The smallest power-of-two multiple of ``minimum`` holding ``size`` pairs."""
    capacity = minimum
    while capacity < size:
        capacity *= 2
    return capacity


def _pair_diff(X, a, l, max_elements=1 << 26):
    """``X[a] - X[l]`` when it fits ``max_elements`` (256 MiB in float32), else None (gathered per block)."""
    return _differences(X, a, l) if a.shape[0] * X.shape[1] <= max_elements else None


def _phase(L, problem, anchor, impostor, capacity, steps, *, tol, mu, margin, block_elements):
    """Up to ``steps`` full-batch L-BFGS steps on :func:`jaxdml.losses.lmnn_pairs` restricted to the pairs
    (padded to ``capacity``), compiled with XLA's quicker options on a CPU
    (:func:`jaxdml._runtime._device.brief_programs`: for this program they compile faster and run no slower)."""
    pa, pl, pm = _padded(anchor, impostor, capacity, problem.X.dtype)
    with brief_programs():
        return minimize(lmnn_pairs, L, problem, optimizer=make_optimizer("lbfgs"), max_iter=steps, tol=tol,
                        hyper=dict(pair_anchor=pa, pair_impostor=pl, pair_mask=pm, mu=mu, margin=margin,
                                   pair_diff=_pair_diff(problem.X, pa, pl), block_elements=block_elements))


def _padded(anchor, impostor, capacity, dtype):
    p = anchor.size
    pad = capacity - p
    return (to_device(np.concatenate([anchor, np.zeros(pad, np.int32)])),
            to_device(np.concatenate([impostor, np.zeros(pad, np.int32)])),
            to_device(np.concatenate([np.ones(p), np.zeros(pad)]), dtype))


def minimize_active_set(params0, problem, *, mu=0.5, margin=1.0, max_iter: int = 500, tol: float = 1e-5,
                        refresh_every: int = 50, slack: float = 0.5, rescale: bool = True,
                        min_capacity: int = 1024, block_elements: int | None = None,
                        cand_slack: float = 2.0, first_cand_slack: float | None = None, chunk_rows: int | None = None,
                        chunks_per_refresh: int | None = None,
                        random_state=None, verbose: int = 0) -> ActiveSetResult:
    """Minimise the LMNN objective (:func:`jaxdml.losses.lmnn`) in ``L`` with an active set of
    impostors (see the module docstring).

    Parameters
    ----------
    params0 : (d', d) initial linear map.
    problem : LabeledProblem with target neighbours (rows may be padded).
    mu, margin : LMNN hyper-parameters.
    max_iter : total L-BFGS steps over all refreshes.
    tol : the inner stopping test of :func:`jaxdml.minimize` (relative improvement).
    refresh_every : L-BFGS steps between two refreshes of the active set.
    slack : the search radius is ``max_j d_ij + margin * (1 + slack)``: pairs up to ``slack``
        margins outside the hinge are kept, so that moderate moves of ``L`` between refreshes do
        not miss impostors.
    rescale : start from ``sqrt(a) * params0`` with ``a`` from :func:`initial_scale`.
    cand_slack : the exact O(N^2) search keeps the candidates within ``max_j d_ij + margin * (1 +
        cand_slack)``; later refreshes filter them, and search again only when the certificate of
        :class:`~jaxdml.solvers._lmnn_candidates.CandidateIndex` fails (a pair outside the
        candidates could have entered the active set).
    first_cand_slack : the same for the first search only (default ``cand_slack``).
    chunk_rows : reference rows per search chunk (default: one chunk of all rows).
    chunks_per_refresh : at most this many stale chunks are searched per refresh (default: all,
        so every refresh is exact); with fewer, the active set between refreshes can miss
        impostors of stale chunks, and the fit is converged only once every chunk is certified.
    min_capacity : smallest capacity of the padded pair arrays (it doubles when exceeded).
    block_elements : memory budget of one block of pairwise work (default: library budget).
    random_state : seeds the samples of :func:`initial_scale`.
    verbose : print one line per refresh when > 0.

    Returns
    -------
    ActiveSetResult
        ``loss`` is the exact objective at ``params`` (evaluated on a fresh active set);
        ``converged`` is True only when the inner stopping test held and the last refresh found
        no violating impostor outside the set it was met on.
    """
    if refresh_every < 1:
        raise ValueError(f"refresh_every must be a positive int; got {refresh_every}.")
    dtype = problem.X.dtype
    L = np.asarray(params0, dtype=np.dtype(dtype))  # on the host until the start is rescaled
    mu_, margin_ = to_device(mu, dtype), to_device(margin, dtype)
    n = int(problem.X.shape[0])
    codes = np.asarray(problem.y)
    valid = np.asarray(problem.sample_mask) > 0
    radii = functools.partial(_radii, X=problem.X, targets=problem.targets, target_mask=problem.target_mask,
                              sample_mask=problem.sample_mask, margin=margin_, slack=to_device(slack, dtype))
    scale = _start_scale(L, problem, codes, valid, mu, margin, random_state) if rescale else 1.0
    # (the product on the host in the device's dtype: the same rounding, and no eager program compiled for it)
    L = to_device(L * np.asarray(np.sqrt(scale), dtype=L.dtype))
    index = CandidateIndex(n, codes, valid, margin=float(margin), slack=float(slack), cand_slack=float(cand_slack),
                           first_cand_slack=first_cand_slack,
                           chunk_rows=chunk_rows, block_elements=block_elements)
    hist, sizes = [], []
    it, capacity, refreshes, backtracks = 0, 0, 0, 0
    prev_keys, inner_done, converged, failed = None, False, False, False
    phase = None  # (L at the start of the last phase, its exact value, L at its end, step fraction)
    value_of = _set_value_fn(problem, mu, margin)  # the objective of each refreshed set, on the host
    while True:
        # chunked mode, step budget spent: only filter the candidates (a search cannot change the returned L)
        budget = 0 if chunks_per_refresh is not None and (it >= max_iter or failed) else chunks_per_refresh
        anchor, impostor, strict, certified, value = _refresh(index, L, problem.X, radii, float(margin), budget,
                                                              value_of)
        refreshes += 1
        if phase is not None and certified and phase[3] > 1.0 / 16:
            # a phase that raised the exact objective left the region where its active set held every
            # impostor: halve the step along the segment from its start (a trust region)
            if value > phase[1]:
                frac = phase[3] / 2
                L = phase[0] + frac * (phase[2] - phase[0])
                phase, inner_done, backtracks = (phase[0], phase[1], phase[2], frac), False, backtracks + 1
                continue
        keys = anchor.astype(np.int64) * n + impostor
        new = 0 if prev_keys is None else int(np.count_nonzero(~np.isin(keys[strict], prev_keys, assume_unique=True)))
        if verbose:
            print(f"  refresh {refreshes:3d}  iter {it:5d}  active pairs {keys.size:9d}  "
                  f"violating {int(strict.sum()):9d}  new {new:7d}  chunk searches {index.searches:4d}"
                  f"{'' if certified else '  (not certified)'}", file=sys.stderr, flush=True)
        if inner_done and new == 0 and certified:
            converged = True
            break
        if it >= max_iter or failed:
            break
        capacity = max(capacity, _capacity(keys.size, min_capacity))
        sizes.append(int(keys.size))
        res = _phase(L, problem, anchor, impostor, capacity, int(min(refresh_every, max_iter - it)), tol=tol,
                     mu=mu_, margin=margin_, block_elements=block_elements)
        steps = int(res.n_iter)
        h = np.asarray(res.loss_history, np.float64)[: steps + 1]
        hist.append(h[np.isfinite(h)] if hist == [] else h[1:][np.isfinite(h[1:])])
        it += steps
        failed = bool(res.failed)
        phase = None if steps == 0 else (L, value, res.params, 1.0)
        L = res.params if steps > 0 else L
        inner_done = bool(res.converged)
        prev_keys = keys
    if converged:
        # the set the inner solver used holds every violating pair at L: its value is exact
        value = float(res.loss)
    history = np.concatenate(hist) if hist else np.zeros(0)
    info = dict(solver="active_set", refreshes=refreshes, init_scale=scale, active_pairs=sizes,
                backtracks=backtracks, pair_capacity=capacity, refresh_every=refresh_every, slack=slack,
                cand_slack=cand_slack, first_cand_slack=index.first_cand_slack,
                chunk_searches=index.searches, partial_searches=index.partial_searches,
                full_searches=index.rows_searched / max(n, 1),
                candidate_pairs=int(sum(p[0].size for p in index.pairs)))
    return ActiveSetResult(L, value, it, converged, history, failed, info)
