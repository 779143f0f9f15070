"""MultiDML_kNN: k-NN under several learners, checked against scikit-learn per learner and a naive LOO loop."""

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import minmax_scale

import jaxdml


@pytest.fixture(scope="module")
def split():
    X, y = load_wine(return_X_y=True)
    X = minmax_scale(X)
    p = np.random.default_rng(0).permutation(len(y))
    X, y = X[p], np.array(["a", "b", "c"])[y[p]]  # string labels: predictions come back as labels
    return X[:120], y[:120], X[120:], y[120:]


def _transform(d):
    return (lambda A: A) if d is None else d.transform


@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_matches_sklearn_per_learner(split, weights):
    Xtr, ytr, Xte, yte = split
    dmls = [None, jaxdml.LDA(n_components=2), "pca"]
    multi = jaxdml.MultiDML_kNN(5, dmls=dmls, weights=weights).fit(Xtr, ytr)
    assert multi.dmls_string() == ["Euclidean", "LDA", "pca"]
    preds, probas, scores = multi.predict_all(Xte), multi.predict_proba_all(Xte), multi.score_all(Xte, yte)
    assert len(preds) == len(probas) == len(scores) == len(dmls)
    for d, pred, proba, score in zip(multi.dmls_, preds, probas, scores):
        tf = _transform(d)
        ref = KNeighborsClassifier(5, weights=weights).fit(tf(Xtr), ytr)
        np.testing.assert_array_equal(pred, ref.predict(tf(Xte)))
        np.testing.assert_allclose(proba, ref.predict_proba(tf(Xte)), atol=1e-12)
        assert score == ref.score(tf(Xte), yte)


def test_leave_one_out_against_naive_loop(split):
    Xtr, ytr = split[0][:70], split[1][:70]
    multi = jaxdml.MultiDML_kNN(3, dmls=[None, jaxdml.LDA(n_components=2)]).fit(Xtr, ytr)
    loo, loo_scores = multi.predict_loo_all(), multi.score_loo_all()
    for d, pred, score in zip(multi.dmls_, loo, loo_scores):
        Z = _transform(d)(Xtr)
        naive = []
        for i in range(len(Z)):
            keep = np.arange(len(Z)) != i
            naive.append(KNeighborsClassifier(3).fit(Z[keep], ytr[keep]).predict(Z[i:i + 1])[0])
        np.testing.assert_array_equal(pred, naive)
        assert score == pytest.approx(np.mean(np.asarray(naive) == ytr))
    assert len(multi.predict_proba_loo_all()) == 2


def test_defaults_and_errors(split):
    Xtr, ytr, Xte, yte = split
    multi = jaxdml.MultiDML_kNN(1).fit(Xtr, ytr)  # Euclidean only
    assert multi.names() == ["Euclidean"]
    assert multi.score_loo_all()[0] <= 1.0
    with pytest.raises(ValueError, match="dmls is empty"):
        jaxdml.MultiDML_kNN(3, dmls=[]).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="fit/transform"):
        jaxdml.MultiDML_kNN(3, dmls=[42]).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="n_neighbors"):
        jaxdml.MultiDML_kNN(200).fit(Xtr, ytr).score_loo_all()
    with pytest.raises(ValueError, match="features"):
        multi.predict_all(Xte[:, :5])


@pytest.mark.parametrize("weights", ["uniform", pytest.param("distance", marks=pytest.mark.slow)])
def test_batched_knn_host_and_device_paths_agree(monkeypatch, weights):
    """Small problems run in NumPy, large ones in one compiled program: the same votes, ties included
    (integer coordinates: many equal distances, broken by training-row order on both paths)."""
    from jaxdml.classifiers import _multidml

    rng = np.random.default_rng(0)
    # eight cases: every number of metrics m, dimension p and k of 1 to 3 (k = 2: tied votes), twice,
    # with random sizes and rows; the device path compiles one program per (m, p, k) (its rows are
    # padded to one bucket), not one per case
    for m, p, k in 2 * ((1, 1, 2), (2, 3, 1), (3, 2, 3), (2, 1, 3)):
        nq, nt = rng.integers(1, 30), rng.integers(4, 50)
        Zt = rng.integers(0, 3, size=(m, nt, p)).astype(float)
        Zq = rng.integers(0, 3, size=(m, nq, p)).astype(float)
        codes = rng.integers(0, 3, nt)
        out = {}
        for path, limit in (("device", 0), ("host", 1 << 30)):
            monkeypatch.setattr(_multidml, "_HOST_ELEMENTS", limit)
            out[path] = (_multidml.knn_batched(Zq, Zt, codes, 3, k, weights=weights),
                         _multidml.knn_batched(Zt, Zt, codes, 3, k, weights=weights, exclude_self=True))
        for a, b in zip(out["device"], out["host"]):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="leave-one-out"):
        _multidml.knn_batched(Zt, Zt, codes, 3, nt, exclude_self=True)
