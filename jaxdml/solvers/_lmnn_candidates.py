"""Certified candidate lists of LMNN impostors: the exact O(N^2) search runs rarely, and a cheap
test on ``d x d`` matrices proves when the candidates it found still hold every impostor.

The reference rows are split into chunks. Searching chunk ``t`` at the map ``L_t`` keeps every
differently-labelled pair with

    |L_t (x_i - x_l)|^2 < R_i = f_i(L_t) + margin * (1 + cand_slack),

``f_i(L) = max_j |L (x_i - x_j)|^2`` over the target neighbours of ``i``. At a later ``L`` let
``lam`` and ``Lam`` be the extreme generalised eigenvalues of ``(M, M_t)``, ``M = L^T L``,
``M_t = L_t^T L_t`` (``M_t`` positive definite). For a pair not kept, ``|L d|^2 >= lam |L_t d|^2
>= lam R_i``, and ``f_i(L_t) >= f_i(L) / Lam`` (the targets are fixed pairs), so

    |L (x_i - x_l)|^2 >= lam * (f_i(L) / Lam + margin * (1 + cand_slack)).

When that bound is at least the active-set radius ``f_i(L) + margin * (1 + slack)`` for every
anchor, no pair outside the candidates can enter the active set: filtering the candidates at
``L`` gives exactly what a full search would (up to float rounding of the distances, covered by
a relative safety factor). Otherwise that anchor's row is searched again at ``L`` (the whole
chunk when more than half of the anchors fail). Memory: the candidate pairs (int32), an int32
search epoch per anchor and chunk, and one ``d x d`` matrix per search; no N x N array.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._runtime._device import as_device, to_device
from ..neighbors import impostors_within

__all__ = ["CandidateIndex", "generalized_extremes"]

#: relative safety factor of the certificate (float32 rounding of squared distances)
_SAFETY = 1e-4


def generalized_extremes(M, M0):
    """Smallest and largest ``v^T M v / v^T M0 v`` (``(0, inf)`` when ``M0`` is not positive definite)."""
    M, M0 = np.asarray(M, np.float64), np.asarray(M0, np.float64)
    try:
        C = np.linalg.cholesky(M0)
    except np.linalg.LinAlgError:
        return 0.0, np.inf
    W = np.linalg.solve(C, np.eye(C.shape[0]))
    ev = np.linalg.eigvalsh(W @ M @ W.T)
    if not np.all(np.isfinite(ev)) or ev[0] <= 0:
        return 0.0, np.inf
    return float(ev[0]), float(ev[-1])


@functools.partial(jax.jit, static_argnames=("piece",))
def _pair_sq_dists(L, X, a, l, *, piece):
    """``|L (x_a - x_l)|^2`` for padded index arrays, ``piece`` pairs at a time."""
    def one(idx):
        return jnp.sum(((X[a[idx]] - X[l[idx]]) @ L.T) ** 2, axis=1)

    return jax.lax.map(one, jnp.arange(a.shape[0], dtype=jnp.int32).reshape(-1, piece)).reshape(-1)


def pair_sq_dists(L, X, a, l, piece: int = 1 << 16):
    """:func:`_pair_sq_dists` on host arrays, padded to a power-of-two number of pieces."""
    p = a.size
    if p == 0:
        return np.zeros(0)
    n_pieces = 1 << int(np.ceil(np.log2(-(-p // piece))))
    size = n_pieces * piece
    pad = np.zeros(size - p, np.int32)
    out = _pair_sq_dists(L, X, to_device(np.concatenate([a, pad])), to_device(np.concatenate([l, pad])),
                         piece=piece)
    return np.asarray(out)[:p]


class CandidateIndex:
    """Candidate impostor lists per reference chunk, each with the map it was searched at.

    Parameters
    ----------
    n : number of rows. codes, valid : class codes and validity of the rows.
    margin, slack : the active-set radius ``f_i + margin * (1 + slack)``.
    cand_slack : the candidate radius ``f_i + margin * (1 + cand_slack)`` (``>= slack``).
    first_cand_slack : the candidate radius of the first search (default ``cand_slack``; between ``slack`` and
        ``cand_slack``): the active-set solver's first phase, from its starting map, moves the metric the
        furthest, so the first candidates are rarely certified after it and a wide first radius only costs.
    chunk_rows : reference rows per chunk (default: all rows, one chunk).
    block_elements : memory budget of one search block.
    """

    def __init__(self, n, codes, valid, *, margin, slack, cand_slack, first_cand_slack=None, chunk_rows=None,
                 block_elements=None):
        first_cand_slack = cand_slack if first_cand_slack is None else first_cand_slack
        if not slack <= first_cand_slack <= cand_slack:
            raise ValueError(f"the candidate slacks must satisfy slack ({slack}) <= first_cand_slack "
                             f"({first_cand_slack}) <= cand_slack ({cand_slack}).")
        self.n, self.codes, self.valid = n, np.asarray(codes), np.asarray(valid, bool)
        self.margin, self.slack, self.cand_slack = float(margin), float(slack), float(cand_slack)
        self.first_cand_slack = float(first_cand_slack)
        step = n if chunk_rows is None else max(8, int(chunk_rows))
        self.chunks = [(r0, min(n, r0 + step)) for r0 in range(0, n, step)]
        self.metrics = []  # the metrics M_e = L_e^T L_e the searches ran at
        self.epoch_slack = []  # and the candidate slack of each search epoch e
        self.anchor_epoch = [np.full(n, -1, np.int32) for _ in self.chunks]  # per chunk, per anchor: e
        self.pairs = [(np.zeros(0, np.int32), np.zeros(0, np.int32))] * len(self.chunks)
        self.block_elements = block_elements
        self.searches = 0  # chunk searches so far (partial or whole)
        self.partial_searches = 0  # of which only for the anchors whose certificate failed
        self.rows_searched = 0  # anchor x reference rows searched so far, in units of n

    def certified(self, t, M, far):
        """Per anchor, whether chunk ``t``'s candidates hold every active pair of that anchor at the
        map with metric ``M`` (anchors without targets, ``far = -inf``, always)."""
        ok = ~np.isfinite(far)
        epochs = self.anchor_epoch[t]
        for e in np.unique(epochs[~ok]):
            if e < 0:
                continue
            lam, Lam = generalized_extremes(M, self.metrics[e])
            if lam <= 0 or not np.isfinite(Lam):
                continue
            rows = np.flatnonzero((epochs == e) & ~ok)
            f = far[rows]
            bound = lam * (f / Lam + self.margin * (1.0 + self.epoch_slack[e])) * (1.0 - _SAFETY)
            ok[rows] = f + self.margin * (1.0 + self.slack) <= bound
        return ok

    def _search(self, t, Z, radius, rows, epoch):
        """Search chunk ``t`` again for the anchors ``rows`` and merge with the other anchors' pairs."""
        a, l = impostors_within(Z, self.codes, self.valid, radius, ref_range=self.chunks[t],
                                   anchors=None if rows.size == self.n else rows, block_elements=self.block_elements)
        if rows.size < self.n:
            self.partial_searches += 1
            old_a, old_l = self.pairs[t]
            stay = ~np.isin(old_a, rows)
            a, l = np.concatenate([old_a[stay], a]), np.concatenate([old_l[stay], l])
            order = np.argsort(a, kind="stable")
            a, l = a[order], l[order]
        self.pairs[t] = (a, l)
        self.anchor_epoch[t][rows] = epoch
        self.searches += 1
        self.rows_searched += rows.size * (self.chunks[t][1] - self.chunks[t][0]) / self.n

    def refresh(self, L, X, Z, far, max_chunks=None):
        """Search again the anchors whose certificate fails, in at most ``max_chunks`` chunks (oldest
        first), and return ``(anchor, impostor, dist, all_certified)``: every candidate pair with
        its squared distance at ``L``."""
        Lh = np.asarray(L, np.float64)
        M = Lh.T @ Lh
        far = np.asarray(far, np.float64)
        stale = []
        for t in range(len(self.chunks)):
            bad = np.flatnonzero(~self.certified(t, M, far))
            if bad.size:
                stale.append((t, bad))
        # the chunk searched longest ago first (never searched: epoch -1)
        stale.sort(key=lambda tb: int(self.anchor_epoch[tb[0]].min()))
        budget = len(stale) if max_chunks is None else max_chunks
        cand_slack = self.first_cand_slack if not self.metrics else self.cand_slack
        radius = to_device(far + self.margin * (1.0 + cand_slack), Z.dtype)
        if stale[:budget]:
            self.metrics.append(M)
            self.epoch_slack.append(cand_slack)
        for t, bad in stale[:budget]:
            rows = np.arange(self.n, dtype=np.int32) if bad.size > self.n // 2 else bad.astype(np.int32)
            self._search(t, Z, radius, rows, len(self.metrics) - 1)
        a = np.concatenate([p[0] for p in self.pairs])
        l = np.concatenate([p[1] for p in self.pairs])
        if len(self.pairs) > 1:  # anchor-major order (better locality of the pair blocks)
            order = np.argsort(a, kind="stable")
            a, l = a[order], l[order]
        dist = pair_sq_dists(as_device(L), X, a, l)
        return a, l, dist, len(stale) <= budget
