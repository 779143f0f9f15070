"""jaxdml.retrieval against a brute-force NumPy reference (full distance matrix, stable sort, the
definitions as written): the blockwise search in one block and in many blocks and chunks, a separate
reference set, every ranking, a learned map, the max_r bound, ties; NMI/AMI against scikit-learn."""

import numpy as np
import pytest

import jaxdml
from jaxdml import retrieval

from . import _deep_reference as R

KS = (1, 2, 4)
NAMES = ["precision_at_1", "r_precision", "map_at_r"] + [f"recall_at_{k}" for k in KS]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = np.r_[np.repeat([0, 1, 2], [9, 6, 4]), [3]]  # class 3: one row (no reference of its class)
    X = rng.normal(size=(len(y), 3)) + 0.8 * y[:, None]
    return X, y


def _check(got, want):
    np.testing.assert_allclose([got[n] for n in NAMES], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("distance", ["euclidean"] + [pytest.param(d, marks=pytest.mark.slow)
                                      for d in ("sq_euclidean", "cosine", "dot")])
def test_same_set_matches_brute_force(data, distance, x64):
    X, y = data
    got = retrieval.retrieval_scores(X, y, k=KS, distance=distance)
    _check(got, R.retrieval(X, y, X, y, True, distance, KS))
    assert got["n_queries"] == len(y) - 1 and got["n_bounded"] == 0  # the singleton class is left out


def test_many_blocks_and_reference_chunks(data, monkeypatch, x64):
    """Query blocks of a few rows and reference chunks of 7 rows (a running top-K merged over 3 chunks,
    the last one padded) give the single-block result."""
    X, y = data
    monkeypatch.setattr(retrieval, "REFERENCE_CHUNK", 7)
    got = retrieval.retrieval_scores(X, y, k=KS, block_elements=40)
    _check(got, R.retrieval(X, y, X, y, True, "euclidean", KS))


def test_separate_references_and_learned_map(data, x64):
    X, y = data
    rng = np.random.default_rng(1)
    Q, yq = rng.normal(size=(7, 3)) + 0.8 * np.array([0, 1, 2, 0, 1, 2, 5])[:, None], np.array([0, 1, 2, 0, 1, 2, 5])
    got = retrieval.retrieval_scores(Q, yq, X, y, k=KS)
    _check(got, R.retrieval(Q, yq, X, y, False, "euclidean", KS))
    assert got["n_queries"] == 6  # label 5 has no reference
    L = np.array([[1.0, 0.0, 2.0], [0.5, 1.0, 0.0]])
    _check(retrieval.retrieval_scores(X, y, k=KS, L=L), R.retrieval(X @ L.T, y, X @ L.T, y, True, "euclidean", KS))


def test_max_r_bound(data, x64):
    X, y = data
    got = retrieval.retrieval_scores(X, y, k=KS, max_r=3)
    _check(got, R.retrieval(X, y, X, y, True, "euclidean", KS, max_r=3))
    assert got["n_bounded"] == 9 + 6  # the rows of the classes with more than 3 other rows


def test_ties_go_to_the_lower_reference_index(x64):
    """Duplicate rows at equal distance: the lower index is ranked first, as in the stable-sort reference."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [5.0, 5.0], [1.0, 0.0]])
    y = np.array([0, 1, 0, 1, 1, 0])
    _check(retrieval.retrieval_scores(X, y, k=KS), R.retrieval(X, y, X, y, True, "euclidean", KS))


def test_single_metric_functions_and_per_query(data, x64):
    X, y = data
    allm = retrieval.retrieval_scores(X, y, k=(1, 4), per_query=True)
    assert retrieval.precision_at_1(X, y, k=(1, 4)) == allm["precision_at_1"]
    assert retrieval.r_precision(X, y, k=(1, 4)) == allm["r_precision"]
    assert retrieval.map_at_r(X, y, k=(1, 4)) == allm["map_at_r"]
    assert retrieval.recall_at_k(X, y, k=4) == allm["recall_at_4"]
    per = allm["per_query"]["map_at_r"]
    assert np.isnan(per[-1]) and np.isclose(np.nanmean(per), allm["map_at_r"])
    assert jaxdml.retrieval is retrieval


def test_clustering_scores_match_scikit_learn(data):
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

    X, y = data
    pred = KMeans(4, n_init=10, random_state=0).fit_predict(X)
    got = retrieval.clustering_scores(X, y)  # jaxdml's own k-means finds scikit-learn's partition here
    want = [normalized_mutual_info_score(y, pred), adjusted_mutual_info_score(y, pred)]
    np.testing.assert_allclose([got["nmi"], got["ami"]], want, rtol=1e-12)
    assert retrieval.nmi(X, y) == got["nmi"] and retrieval.ami(X, y) == got["ami"]
    perfect = np.repeat(np.eye(3) * 10.0, 5, axis=0)
    assert retrieval.nmi(perfect, np.repeat([0, 1, 2], 5)) == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(queries=np.ones(5), query_labels=[0] * 5), ValueError, "2-D"),
    (dict(query_labels=[0, 1]), ValueError, "one label per row"),
    (dict(distance="l1"), ValueError, "distance must be one of"),
    (dict(k=0), ValueError, "k must be a positive int"),
    (dict(max_r=0), ValueError, "max_r must be a positive int"),
    (dict(references=np.ones((4, 3))), ValueError, "reference_labels are required"),
    (dict(references=np.ones((4, 2)), reference_labels=[0] * 4), ValueError, "columns"),
    (dict(queries=np.full((5, 3), np.nan)), ValueError, "NaN"),
    (dict(L=np.ones((2, 4))), ValueError, "L must have shape"),
])
def test_bad_input(kwargs, error, match):
    args = dict(queries=np.ones((5, 3)), query_labels=[0, 0, 1, 1, 1])
    args.update(kwargs)
    with pytest.raises(error, match=match):
        retrieval.retrieval_scores(**args)


def _loop_scores(Q, yq, Rf, yr, self_rows, k):
    """Per-query MAP@k and reciprocal rank by plain loops (float64, stable ranking: ties to the lower index).
    ``self_rows[i]``: the reference row query ``i`` may not retrieve (-1: none)."""
    out = []
    for i in range(len(Q)):
        d = np.sum((Rf - Q[i]) ** 2, axis=1)
        order = [j for j in np.argsort(d, kind="stable") if j != self_rows[i]]
        hits = [float(yr[j] == yq[i]) for j in order]
        R = sum(float(yr[j] == yq[i]) for j in range(len(yr)) if j != self_rows[i])
        if R == 0:
            continue
        prec = np.cumsum(hits) / np.arange(1, len(hits) + 1)
        ap_k = sum(h * p for h, p in zip(hits[:k], prec[:k])) / min(k, R)
        first = next(n for n, h in enumerate(hits, 1) if h)
        out.append((yq[i], ap_k, 1.0 / first, hits[0]))
    return out


@pytest.mark.parametrize("average", ["queries", "classes"])
def test_map_at_k_mrr_and_class_averages_match_loops(data, x64, average):
    """MAP@k, MRR and their per-class means against plain loops; "classes" is the mean of the class means."""
    X, y = data
    k = 4
    got = retrieval.retrieval_scores(X, y, k=(1, k), average=average)
    rows = _loop_scores(X, y, X, y, np.arange(len(y)), k)
    labels = np.array([r[0] for r in rows])
    cols = np.array([r[1:] for r in rows])  # MAP@k, reciprocal rank, precision@1
    if average == "queries":
        want = cols.mean(0)
    else:
        want = np.mean([cols[labels == c].mean(0) for c in np.unique(labels)], axis=0)
    np.testing.assert_allclose([got[f"map_at_{k}"], got["mrr"], got["precision_at_1"]], want, rtol=1e-12)
    for c in np.unique(labels):
        np.testing.assert_allclose(got["per_class"][c]["mrr"], cols[labels == c, 1].mean(), rtol=1e-12)
    assert retrieval.map_at_k(X, y, k=k, average=average) == got[f"map_at_{k}"]
    assert retrieval.mean_reciprocal_rank(X, y, average=average) == got["mrr"]


def test_a_reference_set_that_contains_the_queries(data, x64):
    """``query_indices``: queries that are rows of the references never retrieve themselves, and score as the
    same set does; a wrong index is an error."""
    X, y = data
    rows = np.arange(0, len(y), 3)
    got = retrieval.retrieval_scores(X[rows], y[rows], X, y, k=(1, 3), query_indices=rows)
    want = _loop_scores(X[rows], y[rows], X, y, rows, 3)
    np.testing.assert_allclose(got["mrr"], np.mean([r[2] for r in want]), rtol=1e-12)
    np.testing.assert_allclose(got["map_at_3"], np.mean([r[1] for r in want]), rtol=1e-12)
    whole = retrieval.retrieval_scores(X, y, k=(1, 3), per_query=True)
    np.testing.assert_allclose(got["map_at_r"], np.nanmean(whole["per_query"]["map_at_r"][rows]), rtol=1e-12)
    with pytest.raises(ValueError, match="differs from its reference row"):
        retrieval.retrieval_scores(X[rows], y[rows], X, y, query_indices=rows[::-1])
    with pytest.raises(ValueError, match="distinct rows"):
        retrieval.retrieval_scores(X[:2], y[:2], X, y, query_indices=[0, 0])
    with pytest.raises(ValueError, match="without references"):
        retrieval.retrieval_scores(X, y, query_indices=np.arange(len(y)))
