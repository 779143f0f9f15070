"""Retrieval and clustering metrics of an embedding: precision@1, R-precision, MAP@R, Recall@K, NMI, AMI.

Each query is compared with every reference row (the other rows of the same set, or a separate
reference set) and its ``K`` nearest references are found on the device, blockwise: query blocks
against reference chunks, a running top-``K`` merged chunk by chunk with
:func:`jaxdml.linalg.smallest_k`. Memory is O(block x (chunk + K)), never queries x references, so
10^6 queries against 10^6 references run on one accelerator. The per-query scores are computed on
the device from the neighbours' labels; only they come back to the host.

Definitions (Musgrave, Belongie, Lim, "A Metric Learning Reality Check", ECCV 2020): for a query
with :math:`R` references of its class (itself excluded) and :math:`h_i = 1` when its ``i``-th
nearest reference shares its class,

* precision@1 :math:`= h_1`;
* R-precision :math:`= \\frac{1}{R} \\sum_{i \\le R} h_i`;
* MAP@R :math:`= \\frac{1}{R} \\sum_{i \\le R} h_i \\, \\frac{1}{i} \\sum_{j \\le i} h_j`;
* Recall@K :math:`= \\max_{i \\le K} h_i` (at least one same-class row among the ``K`` nearest,
  the "Recall@K" of deep metric learning papers, e.g. Oh Song et al., CVPR 2016);
* MAP@K :math:`= \\frac{1}{\\min(K, R)} \\sum_{i \\le K} h_i \\, \\frac{1}{i} \\sum_{j \\le i} h_j` (average
  precision of the first ``K`` neighbours, normalised by the most hits they can hold);
* reciprocal rank :math:`= 1 / \\min\\{i : h_i = 1\\}` (0 when no same-class row is among the neighbours
  searched: as many as the largest :math:`R` and the largest ``K``), averaged: the mean reciprocal rank (MRR).

Each is averaged over the queries that have at least one reference of their class (a query without
one has no defined R-precision and is left out of every average). ``R`` is bounded by ``max_r``
when given (then :math:`R = \\min(R, \\text{max\\_r})` and the scores are "@min(R, max_r)"; the
number of queries so bounded is reported): the search keeps :math:`K = \\max(R)` neighbours per
query, so a data set with classes of 10^5 rows needs the bound. Ties in distance go to the lower
reference index.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import _clustering, linalg
from ._label_match import _count_matches, _equal_codes, _label_rows
from ._runtime._device import to_device
from .compilation import ensure_default_cache

__all__ = ["retrieval_scores", "precision_at_1", "r_precision", "map_at_r", "recall_at_k", "map_at_k",
           "mean_reciprocal_rank", "clustering_scores", "nmi", "ami"]

#: reference rows per chunk of the running top-K merge (a larger reference set is cut into chunks)
REFERENCE_CHUNK = 1 << 14
_MEASURES = ("euclidean", "sq_euclidean", "cosine", "dot")


def _as_rows(name, X):
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-D array (rows, dim); got shape {X.shape}.")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"{name} must hold real numbers; got dtype {X.dtype}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return X


def _as_labels(name, y, n):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array with one label per row ({n}); got shape {y.shape}.")
    return y


def _prepare(queries, query_labels, references, reference_labels, L, distance, label_comparison=None):
    """Host-side checks: rows (mapped by ``L``), the labels' rows and comparison (:func:`_label_rows`), and
    whether the sets are one."""
    if distance not in _MEASURES:
        raise ValueError(f"distance must be one of {', '.join(map(repr, _MEASURES))}; got {distance!r}.")
    Q = _as_rows("queries", queries)
    same = references is None
    if same:
        if reference_labels is not None:
            raise ValueError("reference_labels given without references.")
        R, reference_labels = Q, query_labels
    else:
        R = _as_rows("references", references)
        if R.shape[1] != Q.shape[1]:
            raise ValueError(f"references have {R.shape[1]} columns, queries {Q.shape[1]}.")
        if reference_labels is None:
            raise ValueError("reference_labels are required with references.")
    labels = _label_rows(query_labels, reference_labels, Q.shape[0], R.shape[0], label_comparison)
    if L is not None:
        try:
            L = np.asarray(L, np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"L must be a real (n_components, {Q.shape[1]}) matrix; got {type(L).__name__}.") from None
        if L.ndim != 2 or L.shape[1] != Q.shape[1] or L.shape[0] < 1:
            raise ValueError(f"L must have shape (n_components, {Q.shape[1]}); got shape {L.shape}.")
        if not np.all(np.isfinite(L)):
            raise ValueError("L contains NaN or infinite values.")
        Q = Q @ L.T
        R = Q if same else R @ L.T
    Q, R = _ranking_rows(np.asarray(Q, np.float64), None if same else np.asarray(R, np.float64), distance)
    return Q, Q if same else R, labels, same


def _ranking_rows(Q, R, distance):
    """Rows (float64, on the host) with the same ranking as ``Q``, ``R`` under ``distance`` that keep it
    in float32: Euclidean rows translated by the references' mean and scaled by their largest entry
    (distances far from the origin, tiny and huge ones, rank as in float64), cosine rows normalised
    (each scaled by its largest entry first, so that its square neither underflows nor overflows), dot
    products scaled by the largest entry (a positive factor ranks alike). ``R`` None: the queries are
    the references."""
    if distance == "cosine":
        def unit(X):
            X = X / np.maximum(np.max(np.abs(X), axis=1, keepdims=True), np.finfo(np.float64).tiny)
            n = np.sqrt(np.sum(X * X, axis=1, keepdims=True))
            return X / np.where(n > 0, n, 1.0)
        return unit(Q), None if R is None else unit(R)
    if distance in ("euclidean", "sq_euclidean"):
        c = (Q if R is None else R).mean(axis=0)
        Q = Q - c
        R = None if R is None else R - c
    scale = max(np.max(np.abs(Q)), 0.0 if R is None else np.max(np.abs(R)))
    scale = scale if scale > 0 else 1.0
    return Q / scale, None if R is None else R / scale


@functools.partial(jax.jit, static_argnames=("K", "ks", "q_block", "r_chunk", "kind", "same", "match"))
def _scores(Q, R, qc, rc, n_same, r_valid, self_index, *, K, ks, q_block, r_chunk, kind, same, match):
    """Per-query (precision@1, R-precision, MAP@R, Recall@k for each k, MAP@k for each k, reciprocal rank):
    (n_q, 4 + 2 len(ks)). ``same``: a query never sees the reference row ``self_index`` (itself). ``qc``, ``rc``:
    label rows, ``match`` their comparison."""
    if kind == "cosine":
        Q, R = _unit_rows(Q), _unit_rows(R)
    sr = jnp.sum(R * R, axis=1)
    n_chunks = R.shape[0] // r_chunk
    big = jnp.asarray(jnp.inf, Q.dtype)
    pos = jnp.arange(1, K + 1, dtype=Q.dtype)

    def chunk_dists(q, qids, start):
        Rc = jax.lax.dynamic_slice_in_dim(R, start, r_chunk)
        if kind in ("euclidean", "sq_euclidean"):  # same ranking: squared distances
            sc = jax.lax.dynamic_slice_in_dim(sr, start, r_chunk)
            d = jnp.sum(q * q, axis=1)[:, None] + sc[None, :] - 2.0 * q @ Rc.T
        else:
            d = -(q @ Rc.T)
        ok = jax.lax.dynamic_slice_in_dim(r_valid, start, r_chunk)[None, :]
        if same:  # a query is not its own neighbour
            ok = ok & (start + jnp.arange(r_chunk, dtype=jnp.int32)[None, :] != self_index[qids][:, None])
        return jnp.where(ok, d, big)

    def one_block(rows):
        q = Q[rows]

        def merge(carry, c):
            best_d, best_i = carry
            start = c * r_chunk
            vals, pick = linalg.smallest_k(jnp.concatenate([best_d, chunk_dists(q, rows, start)], axis=1), K)
            # a pick below K keeps a neighbour found before; above it, it is row start + pick - K of this chunk
            kept = jnp.take_along_axis(best_i, jnp.minimum(pick, K - 1), axis=1)
            return (vals, jnp.where(pick < K, kept, start + pick - K)), None

        init = (jnp.full((rows.shape[0], K), big), jnp.zeros((rows.shape[0], K), jnp.int32))
        (best_d, best_i), _ = jax.lax.scan(merge, init, jnp.arange(n_chunks, dtype=jnp.int32))
        hits = (match(qc[rows][:, None], rc[best_i]) & jnp.isfinite(best_d)).astype(Q.dtype)
        r = n_same[rows].astype(Q.dtype)[:, None]
        within = (pos[None, :] <= r).astype(Q.dtype)
        rsafe = jnp.maximum(r[:, 0], 1.0)
        r_prec = jnp.sum(hits * within, axis=1) / rsafe
        prec_i = jnp.cumsum(hits, axis=1) / pos[None, :]
        map_r = jnp.sum(hits * within * prec_i, axis=1) / rsafe
        recall = [jnp.max(hits[:, :k], axis=1) for k in ks]
        ap = hits * prec_i
        map_k = [jnp.sum(ap[:, :k], axis=1) / jnp.maximum(jnp.minimum(r[:, 0], k), 1.0) for k in ks]
        rr = jnp.max(hits / pos[None, :], axis=1)
        return jnp.stack([hits[:, 0], r_prec, map_r, *recall, *map_k, rr], axis=1)

    n_q = Q.shape[0]
    blocks = jnp.arange(n_q, dtype=jnp.int32).reshape(-1, q_block)
    return jax.lax.map(one_block, blocks).reshape(n_q, 4 + 2 * len(ks))


def _unit_rows(X):
    """Rows scaled to unit length (a zero row stays zero)."""
    n = jnp.sqrt(jnp.sum(X * X, axis=1, keepdims=True))
    return X / jnp.where(n > 0, n, 1.0)


def _check_ks(k):
    ks = (k,) if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else tuple(k)
    if not ks or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in ks):
        raise ValueError(f"k must be a positive int or a sequence of them; got {k!r}.")
    return tuple(int(v) for v in ks)


def retrieval_scores(queries, query_labels, references=None, reference_labels=None, *, k=(1,), max_r=None, L=None,
                     distance="euclidean", per_query=False, block_elements=None, average="queries",
                     query_indices=None, label_comparison=None) -> dict:
    """Precision@1, R-precision, MAP@R, Recall@K, MAP@K and MRR of an embedding, from one blockwise search.

    Parameters
    ----------
    queries : (n_q, d) array
    query_labels : (n_q,) array
    references : (n_r, d) array, optional
        Default: the queries themselves (each query then excludes itself).
    reference_labels : (n_r,) array, optional
        Required with ``references``.
    k : int or sequence of int, default=(1,)
        The ``K`` of Recall@K (one entry ``recall_at_K`` each).
    max_r : int, optional
        Bound on ``R`` (see the module docstring). Default: none (``K`` = the largest class).
    L : (k, d) array, optional
        A linear map applied to queries and references first.
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="euclidean"
        The ranking: nearest by distance, or most similar (``cosine``, ``dot``).
    per_query : bool, default=False
        Also return the per-query scores (``NaN`` for a query without a reference of its class).
    block_elements : int, optional
        Distances held per query block (default: from :func:`jaxdml.config.set_memory_budget`).
    average : {"queries", "classes"}, default="queries"
        Each score averaged over the queries, or over the classes of the queries (the mean of each class's
        mean: every class counts alike, whatever its number of queries).
    query_indices : (n_q,) int array, optional
        With ``references``: the row of ``references`` that each query is (a reference set that contains the
        queries, e.g. a whole data set queried by a part of it). A query never retrieves its own row, and
        its ``R`` leaves it out.
    label_comparison : None, "multilabel" or callable, optional
        When a reference is relevant to a query. None: equal labels. ``"multilabel"``: the labels are 0/1
        matrices (n, n_labels) and a query and a reference match when they share a label. A function
        ``f(query_labels, reference_labels) -> bool`` of two jax arrays of numeric labels (1-D labels: arrays of
        labels; 2-D: arrays of label rows, the last axis the row) that broadcast against each other, traceable
        by ``jax.jit``, e.g. ``lambda a, b: a // 10 == b // 10``. Every score then counts matches instead of
        equal labels (``R``: the references that match the query). Per-class results need 1-D labels.

    Returns
    -------
    dict
        ``precision_at_1``, ``r_precision``, ``map_at_r``, ``recall_at_K`` and ``map_at_K`` for each ``K``,
        ``mrr`` (floats), ``n_queries`` (queries scored), ``n_bounded`` (queries whose ``R`` was bounded by
        ``max_r``), ``per_class`` (class label -> dict of that class's mean scores), and with ``per_query`` the
        arrays under ``per_query``.

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.r_[np.zeros((3, 2)), np.ones((3, 2))] + 0.01 * np.arange(6)[:, None]
    >>> s = jaxdml.retrieval.retrieval_scores(X, [0, 0, 0, 1, 1, 1], k=(1, 2))
    >>> s["precision_at_1"], s["map_at_r"], s["recall_at_2"]
    (1.0, 1.0, 1.0)
    """
    ks = _check_ks(k)
    if max_r is not None and (isinstance(max_r, bool) or not isinstance(max_r, (int, np.integer)) or max_r < 1):
        raise ValueError(f"max_r must be a positive int or None; got {max_r!r}.")
    if average not in ("queries", "classes"):
        raise ValueError(f"average must be 'queries' or 'classes'; got {average!r}.")
    Q, R, (qlab, rlab, match, qc, rc), same = _prepare(queries, query_labels, references, reference_labels, L,
                                                       distance, label_comparison)
    if same and query_indices is not None:
        raise ValueError("query_indices are rows of references; without references every query is its own row.")
    if qc is None and average == "classes":
        raise ValueError("average='classes' needs 1-D labels (classes); label rows of several columns have none.")
    self_index = np.arange(Q.shape[0], dtype=np.int32) if same else _query_rows(query_indices, Q, R, qlab, rlab)
    excluded = same or self_index is not None
    ensure_default_cache()
    if match is _equal_codes:
        n_same = np.bincount(rc, minlength=int(max(qc.max(), rc.max())) + 1)[qc] - (1 if excluded else 0)
    else:
        n_same = _run_counts(qlab, rlab, self_index, match, block_elements)
    bounded = n_same if max_r is None else np.minimum(n_same, max_r)
    # K neighbours per query: the largest (bounded) R and every k, at most the references a query can see
    K = min(max(int(bounded.max()), max(ks)), max(R.shape[0] - (1 if excluded else 0), 1))
    scores = _run(Q, R, qlab, rlab, bounded, K, ks, distance, self_index, block_elements, match)
    used = n_same > 0
    names = ["precision_at_1", "r_precision", "map_at_r", *[f"recall_at_{kk}" for kk in ks],
             *[f"map_at_{kk}" for kk in ks], "mrr"]
    if qc is None:  # label rows of several columns: no classes
        out = {name: _mean(scores[used, j]) for j, name in enumerate(names)}
        out.update(n_queries=int(used.sum()), n_bounded=int(np.sum(n_same > bounded)), per_class={})
        if per_query:
            scores[~used] = np.nan
            out["per_query"] = {name: scores[:, j] for j, name in enumerate(names)}
        return out
    # per-class means in one pass per score (no mask per class)
    counts = np.bincount(qc[used], minlength=int(qc.max()) + 1)
    classes = np.flatnonzero(counts)
    means = np.stack([np.bincount(qc[used], weights=scores[used, j], minlength=counts.size)[classes]
                      / counts[classes] for j in range(len(names))], axis=1)
    first = np.full(counts.size, -1)
    first[qc[::-1]] = np.arange(qc.size)[::-1]  # a query of each code (its first)
    labels = np.asarray(query_labels)
    per_class = {labels[first[c]].item(): dict(zip(names, map(float, row))) for c, row in zip(classes, means)}
    if average == "queries":
        out = {name: _mean(scores[used, j]) for j, name in enumerate(names)}
    else:
        out = {name: _mean(means[:, j]) for j, name in enumerate(names)}
    out.update(n_queries=int(used.sum()), n_bounded=int(np.sum(n_same > bounded)), per_class=per_class)
    if per_query:
        scores[~used] = np.nan
        out["per_query"] = {name: scores[:, j] for j, name in enumerate(names)}
    return out


def _query_rows(query_indices, Q, R, qc, rc):
    """The reference row of each query (``query_indices``), checked: in range, distinct, the same label and the
    same row; None without them."""
    if query_indices is None:
        return None
    idx = np.asarray(query_indices)
    if idx.shape != (Q.shape[0],) or idx.dtype.kind not in "iu":
        raise ValueError(f"query_indices must be {Q.shape[0]} integer row indices of references (one per query); "
                         f"got shape {idx.shape}, dtype {idx.dtype}.")
    if np.any(idx < 0) or np.any(idx >= R.shape[0]) or np.unique(idx).size != idx.size:
        raise ValueError(f"query_indices must be distinct rows of references, in [0, {R.shape[0]}).")
    if np.any(rc[idx] != qc):  # label rows
        raise ValueError("query_indices: a query's label differs from its reference row's label.")
    if not np.allclose(R[idx], Q, rtol=1e-5, atol=1e-6):  # rows on one scale (_ranking_rows): max |entry| 1
        raise ValueError("query_indices: a query differs from its reference row (are they the same rows?).")
    return idx.astype(np.int32)


def _mean(x):
    return float(np.mean(x)) if x.size else float("nan")


def _padded(a, n, fill=0):
    """``a`` with rows of ``fill`` appended up to ``n`` rows."""
    return np.concatenate([a, np.full((n - a.shape[0],) + a.shape[1:], fill, a.dtype)])


def _chunks(n_r):
    """``(r_chunk, padded reference count)``: equal chunks of at most REFERENCE_CHUNK rows (little padding)."""
    n_chunks = -(-n_r // REFERENCE_CHUNK)
    r_chunk = -(-n_r // n_chunks)
    return r_chunk, n_chunks * r_chunk


def _run_counts(qc, rc, self_index, match, block_elements):
    """Per query, the references that match it (itself excluded), from :func:`_count_matches`."""
    n_q, n_r = qc.shape[0], rc.shape[0]
    r_chunk, n_r_pad = _chunks(n_r)
    q_block = linalg.block_size(n_q, r_chunk * qc.shape[1], block_elements)
    n_q_pad = -(-n_q // q_block) * q_block
    same = self_index is not None
    counts = _count_matches(to_device(_padded(qc, n_q_pad)), to_device(_padded(rc, n_r_pad)),
                            to_device(np.arange(n_r_pad) < n_r),
                            to_device(_padded(np.zeros(n_q, np.int32) if not same else self_index, n_q_pad, -1)),
                            q_block=q_block, r_chunk=r_chunk, same=same, match=match)
    return np.asarray(counts)[:n_q].astype(np.int64)


def _run(Q, R, qc, rc, bounded, K, ks, distance, self_index, block_elements, match):
    """Pad queries to whole blocks and references to whole chunks, then run :func:`_scores`."""
    n_q, n_r = Q.shape[0], R.shape[0]
    dtype = jnp.result_type(float)
    r_chunk, n_r_pad = _chunks(n_r)
    q_block = linalg.block_size(n_q, r_chunk + K, block_elements)
    if jax.default_backend() == "cpu":  # blocks that stay in the CPU caches; an accelerator wants large ones
        q_block = linalg.tile_rows(q_block, r_chunk + K)
    n_q_pad = -(-n_q // q_block) * q_block
    Rp = np.zeros((n_r_pad, R.shape[1]), R.dtype)
    Rp[:n_r] = R
    Qp = np.zeros((n_q_pad, Q.shape[1]), Q.dtype)
    Qp[:n_q] = Q
    pad_q = n_q_pad - n_q
    scores = _scores(to_device(Qp, dtype), to_device(Rp, dtype), to_device(_padded(qc, n_q_pad)),
                     to_device(_padded(rc, n_r_pad, -1)),
                     to_device(np.r_[bounded, np.zeros(pad_q, bounded.dtype)], np.int32),
                     to_device(np.arange(n_r_pad) < n_r),
                     to_device(np.r_[np.zeros(n_q, np.int32) if self_index is None else self_index,
                                     np.full(pad_q, -1, np.int32)]),
                     K=K, ks=ks, q_block=q_block, r_chunk=r_chunk, kind=distance, same=self_index is not None,
                     match=match)
    return np.array(scores, dtype=np.float64)[:n_q]


def precision_at_1(queries, query_labels, references=None, reference_labels=None, **kwargs) -> float:
    """Precision@1 (see :func:`retrieval_scores` and the module docstring)."""
    return retrieval_scores(queries, query_labels, references, reference_labels, **kwargs)["precision_at_1"]


def r_precision(queries, query_labels, references=None, reference_labels=None, **kwargs) -> float:
    """R-precision (see :func:`retrieval_scores` and the module docstring)."""
    return retrieval_scores(queries, query_labels, references, reference_labels, **kwargs)["r_precision"]


def map_at_r(queries, query_labels, references=None, reference_labels=None, **kwargs) -> float:
    """MAP@R, mean average precision at R (see :func:`retrieval_scores` and the module docstring)."""
    return retrieval_scores(queries, query_labels, references, reference_labels, **kwargs)["map_at_r"]


def recall_at_k(queries, query_labels, references=None, reference_labels=None, *, k=1, **kwargs) -> float:
    """Recall@K: the fraction of queries with a same-class row among their ``k`` nearest references."""
    return retrieval_scores(queries, query_labels, references, reference_labels, k=k, **kwargs)[f"recall_at_{int(k)}"]


def map_at_k(queries, query_labels, references=None, reference_labels=None, *, k=10, **kwargs) -> float:
    """MAP@K: average precision of the ``k`` nearest references, normalised by ``min(k, R)`` (module docstring)."""
    return retrieval_scores(queries, query_labels, references, reference_labels, k=k, **kwargs)[f"map_at_{int(k)}"]


def mean_reciprocal_rank(queries, query_labels, references=None, reference_labels=None, **kwargs) -> float:
    """Mean reciprocal rank of the first same-class reference (module docstring)."""
    return retrieval_scores(queries, query_labels, references, reference_labels, **kwargs)["mrr"]


def clustering_scores(embeddings, labels, *, n_clusters=None, L=None, random_state=0, n_init=10, max_iter=300) -> dict:
    """NMI and AMI between the labels and a k-means clustering of the embedding (on the device).

    Parameters
    ----------
    embeddings : (n, d) array
    labels : (n,) array
    n_clusters : int, optional
        Default: the number of classes.
    L : (k, d) array, optional
        A linear map applied first.
    random_state : int, default=0
        Seed of k-means.
    n_init, max_iter : int, default=10, 300
        k-means++ restarts (the best inertia wins) and Lloyd iterations per restart.

    Returns
    -------
    dict
        ``nmi`` (normalised mutual information, arithmetic mean normalisation) and ``ami`` (adjusted
        for chance), as :func:`sklearn.metrics.normalized_mutual_info_score` and
        :func:`sklearn.metrics.adjusted_mutual_info_score` compute them, of the clustering of
        :func:`jaxdml._clustering.kmeans` (k-means++ seeding and Lloyd's iterations in one ``jax.jit``
        program, no scikit-learn).
    """
    X = _as_rows("embeddings", embeddings)
    y = _as_labels("labels", labels, X.shape[0])
    if L is not None:
        X = X @ np.asarray(L, np.float64).T
    c = len(np.unique(y)) if n_clusters is None else n_clusters
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= c <= X.shape[0]:
        raise ValueError(f"n_clusters must be between 1 and the number of rows ({X.shape[0]}); got {c!r}.")
    pred, _ = _clustering.kmeans(X, int(c), n_init=n_init, max_iter=max_iter, random_state=random_state)
    return _clustering.mutual_info_scores(y, pred)


def nmi(embeddings, labels, **kwargs) -> float:
    """Normalised mutual information of a k-means clustering (see :func:`clustering_scores`)."""
    return clustering_scores(embeddings, labels, **kwargs)["nmi"]


def ami(embeddings, labels, **kwargs) -> float:
    """Adjusted mutual information of a k-means clustering (see :func:`clustering_scores`)."""
    return clustering_scores(embeddings, labels, **kwargs)["ami"]
