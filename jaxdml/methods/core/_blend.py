"""The Euclidean blend: on large data, a learned metric is shrunk towards the Euclidean one as far as
leave-one-out k-NN on the training rows asks.

Why (``benchmarks/PROTOCOL.md``, round 17): a global metric learned from an objective that is not k-NN
accuracy (pairs under a margin, class means, a divergence between neighbourhoods) can lose to the
Euclidean metric for k-NN on large data, where Euclidean k-NN keeps improving with every row: on all
13 482 training rows of a recording whose random split puts each test row's neighbours in time among
the training rows, LSI and MMC fall from 10 points above Euclidean (2 000 rows) to 3 below it. The
training rows show it before any test row does: leave-one-out 3-NN on them ranks the metrics as the
test rows do (there: Euclidean 0.838, LSI 0.797 on 2 000 left-out rows; test 0.815 and 0.785).

The rule: the blends ``M_t = (1 - t) (tr M / d) I + t M`` for ``t`` in :data:`WEIGHTS` (same trace,
so ``t`` weighs the two shapes, and k-NN does not see the scale; a metric that collapsed to zero blends
with the unit identity), each scored by leave-one-out 3-NN
(majority vote, a tie to the nearest of the tied labels) of up to :data:`QUERIES` training rows drawn
with the fit's seed against all training rows; the largest ``t`` of the best score is returned. The
method's own metric (``t = 1``) is returned unchanged whenever no blend scores above it.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._warnings import warn
from ...neighbors import knn_search

__all__ = ["BLEND_ABOVE", "WEIGHTS", "QUERIES", "K", "blend_applies", "apply_blend", "choose_blend",
           "blended_map", "loo_accuracy", "vote_nearest_tie"]

#: "auto" blends fits on more training rows than this (the large-data threshold of the gradient methods)
BLEND_ABOVE = 4096
#: the weights of the learned metric that are scored (0: the Euclidean metric, 1: the method's own)
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: left-out training rows scored per weight (all rows when there are fewer)
QUERIES = 2000
#: neighbours of the leave-one-out vote
K = 3


def blend_applies(value, *, learns: str, labels: bool, codes, n_classes: int, shape) -> bool:
    """Whether a fit is blended: a linear metric of full dimension (``shape``, the map's ``(n_components,
    n_features)``) learned from class labels, and ``value`` a weight, or ``"auto"`` on more than
    :data:`BLEND_ABOVE` rows."""
    if isinstance(value, str) and value == "off":
        return False
    if learns not in ("L", "M") or not labels or codes is None or n_classes < 2:
        return False
    if len(shape) != 2 or shape[0] != shape[1]:  # a reduced output dimension keeps its meaning
        return False
    return not isinstance(value, str) or len(codes) > BLEND_ABOVE


def blended_map(M, t: float) -> np.ndarray:
    """A square ``L`` with ``L^T L = (1 - t) (tr M / d) I + t M`` (float64; rows by decreasing eigenvalue); a
    zero ``M`` (a collapsed fit) blends with the unit identity."""
    M = np.asarray(M, np.float64)
    M = 0.5 * (M + M.T)
    d = M.shape[0]
    scale = np.trace(M) / d
    B = (1.0 - t) * (scale if scale > 0 else 1.0) * np.eye(d) + t * M
    w, V = np.linalg.eigh(B)
    w, V = np.clip(w[::-1], 0.0, None), V[:, ::-1]
    return np.sqrt(w)[:, None] * V.T


def loo_accuracy(Z, codes, queries, k: int = K) -> float:
    """Leave-one-out k-NN accuracy of the rows ``queries`` of ``Z`` against all other rows (majority
    vote; a tied vote goes to the nearest of the tied labels)."""
    Z = np.asarray(Z, np.float32)
    codes = np.asarray(codes)
    idx, _ = knn_search(Z[queries], k + 1, Y=Z)
    idx = np.asarray(idx)
    own = idx == queries[:, None]
    # drop the row itself (or, when duplicates push it out of the k + 1, the farthest slot)
    drop = np.where(own.any(1), own.argmax(1), k)
    keep = np.ones_like(idx, bool)
    keep[np.arange(len(idx)), drop] = False
    pred = vote_nearest_tie(codes[idx[keep].reshape(len(idx), k)], int(codes.max()) + 1)
    return float(np.mean(pred == codes[queries]))


def vote_nearest_tie(votes, n_classes: int) -> np.ndarray:
    """The k-NN prediction of each row of ``votes`` ((n, k) label codes, nearest neighbour first): the
    majority label, a tie going to the nearest of the tied labels."""
    votes = np.asarray(votes)
    counts = np.zeros((len(votes), n_classes), int)
    np.add.at(counts, (np.arange(len(votes))[:, None], votes), 1)
    tied = counts[np.arange(len(votes))[:, None], votes] == counts.max(1, keepdims=True)
    return votes[np.arange(len(votes)), tied.argmax(1)]


def apply_blend(result, value, X, codes, random_state) -> None:
    """Blend ``result`` (a :class:`~jaxdml.solvers.FittedMetric`) in place: ``value`` a weight, or the
    weight :func:`choose_blend` picks for ``"auto"``. ``info["euclidean_blend"]`` records the weight (with
    the scores of ``"auto"``) and, when it is below 1, the method's own map as ``"own_L"``; a weight below 1
    that ``"auto"`` chose is reported by a ``UserWarning``."""
    M = result.L.T @ result.L if result.metric_ is None else np.asarray(result.metric_, np.float64)
    if not np.all(np.isfinite(M)):  # a failed fit says so itself
        return
    chosen = dict(weight=float(value)) if not isinstance(value, str) else choose_blend(X, codes, M, random_state)
    result.info["euclidean_blend"] = chosen
    t = chosen["weight"]
    if t == 1.0:
        return
    chosen["own_L"] = result.L
    result.L = blended_map(M, t)
    if result.metric_ is not None:
        result.metric_ = result.L.T @ result.L
    if isinstance(value, str):
        scores = dict(zip(chosen["weights"], chosen["loo_accuracy"]))
        what = ("the Euclidean metric's" if t == 0.0 else
                f"its blend with the Euclidean metric at weight {t:g} (Euclidean alone {scores[0.0]:.4f})")
        returned = "the Euclidean metric" if t == 0.0 else "the blend"
        warn(f"{result.method}: on these {len(codes)} training rows the learned metric's leave-one-out {K}-NN "
             f"accuracy ({scores[1.0]:.4f} on {chosen['queries']} of them) is below {what}: {scores[t]:.4f}; the "
             f"fit returns {returned}, info['euclidean_blend'] the scores and the method's own map ('own_L'). "
             "euclidean_blend='off' keeps the method's own metric.")


def choose_blend(X, codes, M, random_state) -> dict:
    """Score the blends of ``M`` on the training rows; ``{"weight", "weights", "loo_accuracy", "queries",
    "k"}`` with the largest weight of the best leave-one-out accuracy."""
    X = np.asarray(X, np.float64)
    X = X - X.mean(axis=0)  # distances do not see a shift; float32 coordinates far from the origin lose digits
    n = X.shape[0]
    queries = np.sort(check_random_state(random_state).choice(n, min(QUERIES, n), replace=False))
    scores = [loo_accuracy(X @ blended_map(M, t).T, codes, queries) for t in WEIGHTS]
    best = max(scores)
    weight = max(t for t, s in zip(WEIGHTS, scores) if s == best)
    return dict(weight=weight, weights=list(WEIGHTS), loo_accuracy=scores, queries=len(queries), k=K)
