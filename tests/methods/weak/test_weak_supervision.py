"""Weak supervision as metric-learn accepts it, the Mahalanobis API on every learner, n_components on the
full-metric learners, class-label targets and random states everywhere.

Ported in spirit from metric-learn's test_mahalanobis_mixin.py (the metric function agrees with
pair_distance and transform, squared option, get_mahalanobis_matrix = L^T L), test_base_metric.py /
test_utils.py (tuple inputs: shapes, arity, preprocessor as array or callable, the same fit either way)
and test_sklearn_compat.py (weakly supervised learners fitted on tuples; the scikit-learn estimator
checks themselves run in tests/methods/test_estimators.py). Differences by design: one class takes labels or
tuples (metric-learn has ``X`` / ``X_Supervised`` pairs of classes; the ``*_Supervised`` names exist as
thin subclasses); pair labels are +1 / -1, 1 / 0 or booleans, converted once to +1 / -1, and any other
value is an error (metric-learn ignores other values silently; tests/methods/weak/test_pair_labels.py); the
tuple-classifier methods exist only once they apply (``hasattr`` is False otherwise).
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris

import jaxdml
from jaxdml.methods.weak._pairs import factor_result
from jaxdml.methods.core._tuples import prepare_tuples

# end to end on the two fit paths (PairsMetricLearner's record call; LDML's own solve step); the
# other pair learners share the first, and the canonical form is tested on its own below
PAIR_LEARNERS = [
    lambda **k: jaxdml.ITML(random_state=0, max_iter=100, **k),
    lambda **k: jaxdml.LDML(b=0.5, max_iter=50, **k),
]


@pytest.fixture(scope="module")
def data():
    X, y = load_iris(return_X_y=True)
    X = X / X.max(0)
    rng = np.random.RandomState(0)
    a, b = rng.randint(0, 150, 160), rng.randint(0, 150, 160)
    keep = a != b
    idx = np.stack([a[keep], b[keep]], 1)
    return X, y, idx, np.where(y[idx[:, 0]] == y[idx[:, 1]], 1, -1)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("make", PAIR_LEARNERS, ids=["ITML", "LDML"])
def test_formed_and_index_pairs_give_the_same_fit(make, data):
    X, y, idx, yp = data
    formed = make().fit(X[idx], yp)
    perm = np.random.RandomState(1).permutation(150)  # rows in another order, a duplicated row
    rows = np.concatenate([X[perm], X[perm[:1]]])
    where = np.argsort(perm)
    fits = [make(preprocessor=X).fit(idx, yp), make(preprocessor=lambda i: X[i]).fit(idx, yp),
            make(preprocessor=rows).fit(where[idx], yp)]
    for other in fits:
        np.testing.assert_array_equal(other.components_, formed.components_)
    assert formed.n_features_in_ == 4 and formed.transform(X).shape[0] == 150
    assert formed.score(X[idx], yp) > 0.85  # ROC AUC of the training pairs
    np.testing.assert_array_equal(fits[0].predict(idx), formed.predict(X[idx]))


def test_tuples_canonical_form():
    X = np.arange(12.0).reshape(6, 2)
    T = np.stack([X[[3, 1, 3]], X[[1, 5, 0]]], 1)
    d = prepare_tuples(T, [1, -1, 1], arities=(2,))
    np.testing.assert_array_equal(d.X, X[[0, 1, 3, 5]])  # the distinct rows used, sorted
    np.testing.assert_array_equal(d.X[d.idx], T)
    np.testing.assert_array_equal(d.y, [1, -1, 1])
    idx = np.array([[3, 1], [1, 5], [3, 0]])
    perm = np.array([5, 2, 0, 4, 1, 3])
    rows = np.concatenate([X[perm], X[:1]])  # other order, a duplicated row
    for other in (prepare_tuples(idx, [1, -1, 1], arities=(2,), preprocessor=X),
                  prepare_tuples(idx, [1, -1, 1], arities=(2,), preprocessor=lambda i: X[i]),
                  prepare_tuples(np.argsort(perm)[idx], [1, -1, 1], arities=(2,), preprocessor=rows)):
        for u, v in zip(other, d):
            np.testing.assert_array_equal(u, v)
    q = prepare_tuples(np.stack([X[[0, 1]], X[[2, 3]], X[[4, 4]], X[[5, 0]]], 1), None, arities=(3, 4))
    assert q.arity == 4 and q.y is None and np.array_equal(q.X[q.idx][:, 2], X[[4, 4]])


def test_tuple_input_errors(data):
    X, y, idx, yp = data
    itml = jaxdml.ITML(max_iter=5)
    cases = [
        (lambda: itml.fit(X[idx], None), "pairs need labels y"),
        (lambda: itml.fit(X[idx], np.where(yp > 0, 2, 0)), r"must be \+1/-1 or 1/0.*found \[2\.0\]"),
        (lambda: itml.fit(X[idx], np.where(yp > 0, 1, 0) - (np.arange(yp.size) == 0)), "mix the two conventions"),
        (lambda: itml.fit(X[idx], yp[:-1]), "one label per pair"),
        (lambda: itml.fit(np.stack([X[idx[:, 0]]] * 3, 1), yp), r"tuples of 3 element\(s\) given.*2 \(pairs\)"),
        (lambda: itml.fit(np.where(np.isnan(X[idx]), 0, np.inf), yp), "NaN or infinity"),
        (lambda: itml.fit(X[idx][:0], yp[:0]), "no pairs given"),
        (lambda: jaxdml.ITML(preprocessor=X).fit(idx + 150, yp), r"must lie in \[0, 149\]"),
        (lambda: jaxdml.ITML(preprocessor=lambda i: X[i][:, :, None]).fit(idx, yp), "one row per index"),
        (lambda: jaxdml.ITML(preprocessor=lambda i: 1 / 0).fit(idx, yp), "preprocessor failed"),
        (lambda: itml.fit(X[idx], yp, pairs=idx, similar=yp > 0), "X already holds pairs"),
    ]
    for call, msg in cases:
        with pytest.raises(ValueError, match=msg):
            call()
    est = jaxdml.ITML(max_iter=5).fit(X[idx], yp)
    with pytest.raises(ValueError, match="index tuples need the estimator's preprocessor"):
        est.pair_distance(idx)
    with pytest.raises(ValueError, match=r"pairs must have shape \(n, 2, 4\)"):
        est.pair_distance(X[idx][:, :, :3])


def test_labels_fit_unchanged_and_supervised_names(data):
    X, y, idx, yp = data
    est = jaxdml.ITML(random_state=0, max_iter=50).fit(X, y)
    ref = jaxdml.fit(X, y, loss="itml", random_state=0, max_iter=50)
    np.testing.assert_allclose(est.metric_, ref.M)
    sup = jaxdml.ITML_Supervised(random_state=0, max_iter=50).fit(X, y)
    np.testing.assert_array_equal(sup.metric_, est.metric_)
    assert type(pickle.loads(pickle.dumps(sup))) is jaxdml.ITML_Supervised
    assert type(clone(sup)) is jaxdml.ITML_Supervised
    with pytest.raises(ValueError, match="dim 3"):
        jaxdml.MMC_Supervised().fit(X[idx], yp)  # the *_Supervised names take points and labels only
    # a weak fit after a labelled one (and back) leaves no stale state
    est.fit(X[idx], yp)
    assert list(est.classes_) == [-1, 1] and hasattr(est, "threshold_")
    est.fit(X, y)
    assert list(est.classes_) == [0, 1, 2] and not hasattr(est, "threshold_") and not hasattr(est, "tuple_arity_")


def test_itml_pairs_close_to_metric_learn(data):
    X, y, idx, yp = data
    try:
        from benchmarks._harness import metric_learn_compat

        metric_learn_compat()
        import metric_learn
    except Exception:  # pragma: no cover - metric-learn is optional
        pytest.skip("metric-learn is not importable")
    rng = np.random.RandomState(5)
    a, b = rng.randint(0, 150, 400), rng.randint(0, 150, 400)
    test = np.stack([a[a != b], b[a != b]], 1)
    yt = np.where(y[test[:, 0]] == y[test[:, 1]], 1, -1)
    ours = jaxdml.ITML(random_state=0).fit(X[idx], yp)
    theirs = metric_learn.ITML(random_state=0).fit(X[idx], yp)
    acc = {"jaxdml": np.mean(ours.predict(X[test]) == yt), "metric_learn": np.mean(theirs.predict(X[test]) == yt)}
    assert acc["jaxdml"] >= acc["metric_learn"] - 0.02, acc
    assert ours.score(X[test], yt) >= theirs.score(X[test], yt) - 0.02


def test_factor_result_is_the_best_low_rank_metric():
    rng = np.random.RandomState(0)
    A = rng.randn(5, 5)
    M = A @ A.T
    assert factor_result(M, 5, n_iter=3) == dict(metric=M, n_iter=3)  # n_components = d: unchanged
    out = factor_result(M, 2, info=dict(gap=1.0))
    w, V = np.linalg.eigh(M)
    best = (V[:, -2:] * w[-2:]) @ V[:, -2:].T  # Eckart-Young: the best rank-2 PSD approximation
    assert out["L"].shape == (2, 5) and out["info"]["gap"] == 1.0 and out["info"]["full_metric"] is M
    np.testing.assert_allclose(out["metric"], best, atol=1e-12 * np.abs(M).max())
    np.testing.assert_allclose(out["L"].T @ out["L"], best, atol=1e-12 * np.abs(M).max())


@pytest.mark.parametrize("cls", [jaxdml.ITML])
def test_n_components_eigen_truncation(cls, data):
    X, y, idx, yp = data
    kw = dict(max_iter=30, random_state=0)
    full = cls(**kw).fit(X, y)
    np.testing.assert_array_equal(cls(n_components=4, **kw).fit(X, y).components_, full.components_)
    two = cls(n_components=2, **kw).fit(X, y)
    assert two.transform(X).shape == (150, 2)
    np.testing.assert_allclose(two.result_.info["full_metric"], full.metric_)
    np.testing.assert_allclose(two.get_mahalanobis_matrix(), two.components_.T @ two.components_)
    assert cls(n_components=2, **kw).fit(X[idx], yp).transform(X).shape == (150, 2)
    with pytest.raises(ValueError, match="n_components=5 is out of range"):
        cls(n_components=5, **kw).fit(X, y)


def test_n_components_accepted_by_lsi_and_mmc():
    for cls in (jaxdml.LSI, jaxdml.MMC, jaxdml.ITML, jaxdml.DMLEig):
        assert not cls._record.full_rank_only
        assert cls(n_components=2).get_params()["n_components"] == 2


def _estimators():
    out = []
    for name in jaxdml.estimators.__all__:
        if not name.endswith("MetricLearner"):
            out.append(getattr(jaxdml.estimators, name))
    return out


def test_every_learner_has_the_api_rejects_continuous_targets_and_takes_random_states(data):
    X, y, idx, yp = data
    from jaxdml._validation import check_params

    for cls in _estimators():
        for method in ("transform", "get_mahalanobis_matrix", "get_metric", "pair_distance", "pair_score"):
            assert callable(getattr(cls, method)), (cls, method)
        est = cls()
        if "random_state" in est.get_params():
            check_params({"random_state": np.random.RandomState(0)}, est._parameter_constraints, owner=cls.__name__)
        if est._supervised and est._get_record().labels:  # every classification method
            with pytest.raises(ValueError, match="Unknown label type: continuous. Maybe you are trying to fit a "
                                                 "classifier"):
                est.fit(X, X[:, 0] + 0.01)


def test_lmnn_active_set_takes_a_random_state_instance():
    from jaxdml.solvers._lmnn_active import initial_scale

    rng = np.random.RandomState(0)
    Z, codes = rng.rand(50, 3), np.arange(50) % 2
    targets = np.array([[(i + 2) % 50] for i in range(50)])
    args = (Z, codes, np.ones(50, bool), targets, np.ones((50, 1)))
    a = initial_scale(*args, mu=0.5, margin=1.0, random_state=3, n_anchors=10, n_candidates=20)
    b = initial_scale(*args, mu=0.5, margin=1.0, random_state=np.random.RandomState(3), n_anchors=10, n_candidates=20)
    assert a == b


@pytest.mark.parametrize("cls, kw", [(jaxdml.LDA, {}), (jaxdml.KDA, {}), (jaxdml.ITML, {"max_iter": 20})],
                         ids=["LDA", "KDA", "ITML"])
def test_mahalanobis_api(cls, kw, data):
    X, y, idx, yp = data
    if "max_iter" in kw:
        kw = {**kw, "random_state": np.random.RandomState(0)}
    est = cls(**kw).fit(X, y)
    Z = est.transform(X)
    pairs = X[idx[:20]]
    d = est.pair_distance(pairs)
    np.testing.assert_allclose(d, np.linalg.norm(Z[idx[:20, 0]] - Z[idx[:20, 1]], axis=1), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(est.pair_score(pairs), -d)
    f = est.get_metric()
    np.testing.assert_allclose([f(u, v) for u, v in pairs], d, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose([f(u, v, squared=True) for u, v in pairs], d**2, rtol=1e-6, atol=1e-9)
    if not isinstance(est, jaxdml.KernelMetricLearner):
        L = est.components_
        np.testing.assert_allclose(est.get_mahalanobis_matrix(), L.T @ L, atol=1e-10 * max(np.abs(L).max()**2, 1))
    with pytest.raises(ValueError, match="two 1-D points"):
        f(X[0], X[1, :2])
    est.fit(X * 2.0, y)
    assert f(pairs[0, 0], pairs[0, 1]) == pytest.approx(d[0])  # the metric function does not follow refits


def test_self_pairs_are_dropped_with_a_warning_and_labels_with_pairs_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    pairs = np.array([[0, 1], [2, 2], [3, 7], [4, 5], [6, 9]])
    similar = np.array([1, 1, -1, 1, -1])
    with pytest.warns(UserWarning, match=r"1 pair\(s\) of a row with itself ignored"):
        with_self = jaxdml.ITML(random_state=0, max_iter=5).fit(X, pairs=pairs, similar=similar)
    keep = pairs[:, 0] != pairs[:, 1]
    without = jaxdml.ITML(random_state=0, max_iter=5).fit(X, pairs=pairs[keep], similar=similar[keep])
    np.testing.assert_allclose(with_self.get_mahalanobis_matrix(), without.get_mahalanobis_matrix(), atol=1e-12)
    with pytest.raises(ValueError, match="give either labels y or pairs/similar, not both"):
        jaxdml.ITML().fit(X, np.arange(10) % 2, pairs=pairs, similar=similar)


def test_sampled_pairs_on_large_data_are_label_pairs_without_duplicates():
    """Above the enumeration limit, pairs are drawn without listing them: every similar pair joins two
    distinct rows of one class, every dissimilar pair rows of two classes, each pair once, (low, high)."""
    from jaxdml.methods.weak._pairs import _ENUMERATE_LIMIT, sample_pairs

    codes = np.random.default_rng(0).integers(0, 4, size=_ENUMERATE_LIMIT + 500)
    a, b, s = sample_pairs(codes, 300, 400, np.random.RandomState(1))
    assert np.all(a < b) and len(np.unique(a * len(codes) + b)) == len(a)
    np.testing.assert_array_equal(codes[a] == codes[b], s > 0)
    assert set(np.unique(s)) == {-1, 1}
    assert 0.9 * 300 <= np.sum(s > 0) <= 300 and 0.9 * 400 <= np.sum(s < 0) <= 400  # few duplicates dropped
    # a class with one row cannot give a similar pair: only dissimilar pairs are drawn
    a, b, s = sample_pairs(np.arange(_ENUMERATE_LIMIT + 1), 50, 60, np.random.RandomState(2))
    assert np.all(s == -1) and 0 < len(s) <= 60 and np.all(a != b)
