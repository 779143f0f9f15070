"""jaxdml.retrieval with a custom label comparison (multi-label rows, a function) against brute-force loops,
and its k-means / mutual information (no scikit-learn) against scikit-learn's."""

import numpy as np
import pytest

from jaxdml import _clustering, retrieval

KS = (1, 3)


def _loops(Q, Rf, match, self_rows, ks=KS):
    """Mean precision@1, R-precision, MAP@R, Recall@k, MAP@k, MRR over the queries with a match, by loops
    (squared Euclidean ranking, ties to the lower index). ``match(i, j)``: query i and reference j match."""
    ranked = []
    for i in range(len(Q)):
        order = [j for j in np.argsort(np.sum((Rf - Q[i]) ** 2, axis=1), kind="stable") if j != self_rows[i]]
        ranked.append([float(match(i, j)) for j in order])
    # the reciprocal rank counts a first match among the neighbours searched: max(R, k) of them
    searched = max(max(int(sum(h)) for h in ranked), max(ks))
    per = []
    for hits in ranked:
        r = int(sum(hits))
        if r == 0:
            continue
        prec = np.cumsum(hits) / np.arange(1, len(hits) + 1)
        row = [hits[0], sum(hits[:r]) / r, sum(h * p for h, p in zip(hits[:r], prec[:r])) / r]
        row += [max(hits[:k]) for k in ks]
        row += [sum(h * p for h, p in zip(hits[:k], prec[:k])) / min(k, r) for k in ks]
        first = 1 + hits.index(1.0)
        row.append(1.0 / first if first <= searched else 0.0)
        per.append(row)
    return np.mean(per, axis=0), len(per)


def _names(ks=KS):
    return (["precision_at_1", "r_precision", "map_at_r"] + [f"recall_at_{k}" for k in ks]
            + [f"map_at_{k}" for k in ks] + ["mrr"])


@pytest.fixture(scope="module")
def multilabel():
    rng = np.random.default_rng(0)
    Y = (rng.random((30, 4)) < 0.3).astype(int)
    Y[5] = 0  # a query with no label matches nothing
    X = rng.normal(size=(30, 3)) + Y @ rng.normal(size=(4, 3))
    return X, Y


def test_multilabel_matches_loops(multilabel, x64):
    X, Y = multilabel
    got = retrieval.retrieval_scores(X, Y, k=KS, label_comparison="multilabel")
    want, n = _loops(X, X, lambda i, j: np.any(Y[i] & Y[j]), np.arange(len(X)))
    np.testing.assert_allclose([got[k] for k in _names()], want, rtol=1e-12)
    assert got["n_queries"] == n < len(X) and got["per_class"] == {}
    # separate references (a split of the set), and references that contain the queries
    q, r = np.arange(0, 30, 2), np.arange(1, 30, 2)
    got = retrieval.retrieval_scores(X[q], Y[q], X[r], Y[r], k=KS, label_comparison="multilabel")
    want, _ = _loops(X[q], X[r], lambda i, j: np.any(Y[q][i] & Y[r][j]), -np.ones(len(q), int))
    np.testing.assert_allclose([got[k] for k in _names()], want, rtol=1e-12)
    got = retrieval.retrieval_scores(X[q], Y[q], X, Y, k=KS, label_comparison="multilabel", query_indices=q)
    want, _ = _loops(X[q], X, lambda i, j: np.any(Y[q][i] & Y[j]), q)
    np.testing.assert_allclose([got[k] for k in _names()], want, rtol=1e-12)


def test_a_comparison_function_on_1d_labels(x64):
    """Labels match when they fall in the same decade: against loops; per-class means exist (1-D labels)."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 40, size=40)
    X = rng.normal(size=(40, 2)) + (y // 10)[:, None]
    got = retrieval.retrieval_scores(X, y, k=KS, label_comparison=lambda a, b: a // 10 == b // 10, max_r=6)
    want, n = _loops(X, X, lambda i, j: y[i] // 10 == y[j] // 10, np.arange(40))
    assert got["n_queries"] == n
    # max_r bounds R: compare the unbounded scores, and the bounded run's R-independent ones
    full = retrieval.retrieval_scores(X, y, k=KS, label_comparison=lambda a, b: a // 10 == b // 10)
    np.testing.assert_allclose([full[k] for k in _names()], want, rtol=1e-12)
    for k in ("precision_at_1", "recall_at_1", "recall_at_3", "map_at_3"):
        np.testing.assert_allclose(got[k], full[k], rtol=1e-12)
    assert got["n_bounded"] > 0
    assert set(got["per_class"]) == set(np.unique(y).tolist())
    # a function of equal labels is the default comparison
    same = retrieval.retrieval_scores(X, y, k=KS, label_comparison=lambda a, b: a == b)
    default = retrieval.retrieval_scores(X, y, k=KS)
    np.testing.assert_allclose([same[k] for k in _names()], [default[k] for k in _names()], rtol=1e-12)


def test_a_comparison_function_on_label_rows(multilabel, x64):
    """A function of 2-D label rows (here: at least two labels in common)."""
    X, Y = multilabel
    got = retrieval.retrieval_scores(X, Y, k=KS, label_comparison=lambda a, b: (a * b).sum(-1) >= 2)
    want, _ = _loops(X, X, lambda i, j: np.sum(Y[i] * Y[j]) >= 2, np.arange(len(X)))
    np.testing.assert_allclose([got[k] for k in _names()], want, rtol=1e-12)


def test_label_comparison_errors(multilabel):
    X, Y = multilabel
    with pytest.raises(ValueError, match="label_comparison must be None"):
        retrieval.retrieval_scores(X, Y[:, 0], label_comparison="hamming")
    with pytest.raises(ValueError, match="must be a 0/1 matrix"):
        retrieval.retrieval_scores(X, Y[:, 0], label_comparison="multilabel")
    with pytest.raises(ValueError, match="same columns"):
        retrieval.retrieval_scores(X, Y, X, Y[:, :2], label_comparison="multilabel")
    with pytest.raises(ValueError, match="average='classes' needs 1-D labels"):
        retrieval.retrieval_scores(X, Y, label_comparison="multilabel", average="classes")
    with pytest.raises(TypeError, match="must return a boolean array"):
        retrieval.retrieval_scores(X, Y[:, 0], label_comparison=lambda a, b: a + b)
    with pytest.raises(TypeError, match="label_comparison failed"):
        retrieval.retrieval_scores(X, Y[:, 0], label_comparison=lambda a: a)


def test_mutual_information_matches_scikit_learn():
    from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

    rng = np.random.default_rng(2)
    cases = [(rng.integers(0, 5, n), rng.integers(0, 7, n)) for n in (6, 40, 300)]
    cases += [([0, 0, 1, 1], [0, 0, 0, 0]), ([0, 1, 2, 3], [0, 0, 1, 1]), ([0, 0, 1, 1], [1, 1, 0, 0]),
              ([3, 3, 3], [1, 1, 1]), ([0, 1, 2], [5, 6, 7])]
    for t, p in cases:
        got = _clustering.mutual_info_scores(t, p)
        np.testing.assert_allclose([got["nmi"], got["ami"]],
                                   [normalized_mutual_info_score(t, p), adjusted_mutual_info_score(t, p)],
                                   rtol=1e-10, atol=1e-12)


def test_kmeans_matches_scikit_learn_on_separable_data():
    """On separated clusters jaxdml's k-means finds scikit-learn's partition and inertia (NMI 1)."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score

    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(5), 40)
    X = rng.normal(size=(200, 6)) + 6.0 * rng.normal(size=(5, 6))[y]
    labels, inertia = _clustering.kmeans(X, 5, random_state=1)
    km = KMeans(5, n_init=10, random_state=0).fit(X)
    assert normalized_mutual_info_score(km.labels_, labels) == pytest.approx(1.0)
    np.testing.assert_allclose(inertia, km.inertia_, rtol=1e-4)
    got = retrieval.clustering_scores(X, y)
    np.testing.assert_allclose(got["nmi"], normalized_mutual_info_score(y, km.labels_), rtol=1e-12)
    # k-means++ seeding with fewer distinct rows than clusters: a zero inertia, no NaN
    labels, inertia = _clustering.kmeans(np.repeat(np.eye(2), 5, axis=0), 3)
    assert inertia == pytest.approx(0.0, abs=1e-6) and len(np.unique(labels)) >= 2
    with pytest.raises(ValueError, match="n_clusters must be a positive int"):
        _clustering.kmeans(X, 0)
    with pytest.raises(ValueError, match="n_clusters must be between 1"):
        retrieval.clustering_scores(X, y, n_clusters=201)
