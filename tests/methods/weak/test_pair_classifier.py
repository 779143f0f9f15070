"""Pair, triplet and quadruplet classifiers on learned metrics (metric-learn's API).

Ported in spirit from metric-learn's test_pairs_classifiers.py (predict in {-1, +1}, the threshold,
decision_function = -distance, score = ROC AUC, calibrate_threshold strategies and their parameter
errors, "accept all" / "reject all" extremes), test_triplets_classifiers.py and
test_quadruplets_classifiers.py (predict / score on tuples). Each calibration strategy is checked
against a brute-force scan of every threshold in NumPy. The triplet and quadruplet mixins are
exercised through a small learner registered here the way SCML / LSML plug in (``triplets=`` /
``quadruplets=`` index arrays handed to the method record).
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score

import jaxdml
from jaxdml.exceptions import ConvergenceWarning
from jaxdml.methods import BaseMetricLearner, Method
from jaxdml.methods.core._tuple_classifiers import (_QuadrupletsClassifierMixin, _TripletsClassifierMixin,
                                               calibrate_threshold)


@pytest.fixture(scope="module")
def iris_pairs():
    X, y = load_iris(return_X_y=True)
    X = X / X.max(0)
    rng = np.random.RandomState(0)
    a, b = rng.randint(0, 150, 300), rng.randint(0, 150, 300)
    keep = a != b
    a, b = a[keep], b[keep]
    return X, y, np.stack([a, b], 1), np.where(y[a] == y[b], 1, -1)


@pytest.fixture(scope="module")
def itml_on_pairs(iris_pairs):
    X, y, idx, yp = iris_pairs
    with pytest.warns(ConvergenceWarning):  # a short run is enough for a metric to classify with
        return jaxdml.ITML(random_state=0, max_iter=200).fit(X[idx[:200]], yp[:200])


def _brute(d, y, strategy, beta=1.0, min_rate=None):
    """Best value of the strategy over every threshold, and the value at threshold t."""
    def value(t):
        pred = d <= t
        tp, fp = np.sum(pred & (y == 1)), np.sum(pred & (y == -1))
        P, N = np.sum(y == 1), np.sum(y == -1)
        tpr, tnr = tp / P, (N - fp) / N
        if strategy == "accuracy":
            return (tp + N - fp) / y.size, True
        if strategy == "f_beta":
            f = (1 + beta**2) * tp / ((1 + beta**2) * tp + beta**2 * (P - tp) + fp) if tp else 0.0
            return f, True
        if strategy == "max_tpr":
            return tpr, tnr >= min_rate
        return tnr, tpr >= min_rate

    cands = np.concatenate([[-np.inf], np.unique(d)])
    best = max(v for v, ok in map(value, cands) if ok)
    return best, value


@pytest.mark.parametrize("strategy, kw", [("accuracy", {}), ("f_beta", {"beta": 1.0}), ("f_beta", {"beta": 0.3}),
                                          ("max_tpr", {"min_rate": 0.8}), ("max_tnr", {"min_rate": 0.9})])
def test_calibration_matches_brute_force_scan(strategy, kw):
    rng = np.random.RandomState(1)
    for trial in range(5):
        d = np.round(rng.rand(60) * 5, 1)  # ties included
        y = np.where(rng.rand(60) < 1 / (1 + np.exp(3 * (d - 2.5))), 1, -1)
        t = calibrate_threshold(d, y, strategy, **kw)
        best, value = _brute(d, y, strategy, **kw)
        got, ok = value(t)
        assert ok and got == pytest.approx(best), (trial, t)


def test_calibration_extremes():
    d = np.array([1.0, 2.0, 3.0, 4.0])
    # everything dissimilar but one: best accuracy rejects all, threshold just below the smallest distance
    assert calibrate_threshold(d, np.array([-1, -1, -1, 1]), "accuracy") < 1.0
    assert calibrate_threshold(d, np.array([1, 1, 1, -1]), "accuracy") == 3.0
    assert calibrate_threshold(d, np.array([-1, 1, -1, 1]), "max_tpr", min_rate=0.0) == 4.0  # accept all
    assert calibrate_threshold(d, np.array([1, -1, 1, -1]), "max_tpr", min_rate=0.0) == 3.0  # ties: higher TNR
    assert calibrate_threshold(d, np.array([1, -1, 1, -1]), "max_tnr", min_rate=1.0) == 3.0


def test_estimator_classifier_api(itml_on_pairs, iris_pairs):
    X, y, idx, yp = iris_pairs
    est = itml_on_pairs
    val, yv = X[idx[200:]], yp[200:]
    dist = est.pair_distance(val)
    np.testing.assert_allclose(est.decision_function(val), -dist)
    np.testing.assert_allclose(est.pair_score(val), -dist)
    assert est.score(val, yv) == pytest.approx(roc_auc_score(yv, -dist))
    assert set(np.unique(est.predict(val))) <= {-1, 1}
    np.testing.assert_array_equal(est.predict(val), np.where(dist <= est.threshold_, 1, -1))
    assert list(est.classes_) == [-1, 1] and est.tuple_arity_ == 2
    for strategy, kw in (("accuracy", {}), ("f_beta", {"beta": 2.0}), ("max_tpr", {"min_rate": 0.5}),
                         ("max_tnr", {"min_rate": 0.5})):
        est.calibrate_threshold(val, yv, strategy=strategy, **kw)
        best, value = _brute(dist, yv, strategy, **kw)
        assert value(est.threshold_)[0] == pytest.approx(best)
    est.set_threshold(0.25)
    np.testing.assert_array_equal(est.predict(val), np.where(dist <= 0.25, 1, -1))


def test_calibration_and_threshold_errors(itml_on_pairs, iris_pairs):
    X, y, idx, yp = iris_pairs
    est, val, yv = itml_on_pairs, X[idx[200:]], yp[200:]
    with pytest.raises(ValueError, match="strategy must be one of"):
        est.calibrate_threshold(val, yv, strategy="roc")
    for bad in (None, 1.5, -0.1, "0.5"):
        with pytest.raises(ValueError, match="min_rate"):
            est.calibrate_threshold(val, yv, strategy="max_tpr", min_rate=bad)
    with pytest.raises(ValueError, match="beta must be"):
        est.calibrate_threshold(val, yv, strategy="f_beta", beta=None)
    with pytest.raises(ValueError, match="both similar"):
        est.calibrate_threshold(val, np.ones_like(yv))
    with pytest.raises(ValueError, match="finite real number"):
        est.set_threshold("a")


def test_pair_classifier_only_where_it_applies(iris_pairs):
    X, y, idx, yp = iris_pairs
    est = jaxdml.ITML(random_state=0, max_iter=50)
    # unfitted: score/predict are there (scikit-learn's cross_val_score looks for score before fitting)
    assert hasattr(est, "predict") and hasattr(est, "score") and not hasattr(est, "calibrate_threshold")
    with pytest.raises(NotFittedError, match="call fit before calibrate_threshold"):
        est.calibrate_threshold(X[idx], yp)
    with pytest.raises(NotFittedError):
        est.predict(X[idx])
    est.fit(X, y)  # from labels: a transformer, not yet a pair classifier
    assert not hasattr(est, "predict") and not hasattr(est, "decision_function") and not hasattr(est, "score")
    with pytest.raises(NotFittedError, match=r"set it with calibrate_threshold\(pairs, y\) or set_threshold"):
        est.predict(X[idx])
    est.calibrate_threshold(X[idx], yp)  # ... until it has a threshold
    assert set(np.unique(est.predict(X[idx]))) <= {-1, 1}
    est.fit(X, y)  # a refit forgets the threshold
    assert not hasattr(est, "predict")
    alias = jaxdml.ITML_Supervised(random_state=0, max_iter=50)  # points and labels only
    assert not hasattr(alias, "score")
    with pytest.raises(NotFittedError, match="without the _Supervised suffix"):
        alias.predict(X[idx])


def test_tuple_learners_in_cross_val_score(iris_pairs, tuples):
    from sklearn.model_selection import cross_val_score

    X, y, idx, yp = iris_pairs
    auc = cross_val_score(jaxdml.ITML(max_iter=20, random_state=0), X[idx], yp, cv=2)
    assert auc.shape == (2,) and np.all((auc >= 0) & (auc <= 1))
    Xt, T, _ = tuples
    acc = cross_val_score(ToyTriplets(), Xt[T], cv=2)
    assert np.all(acc > 0.8)  # the toy metric orders held-out triplets of the same rule
    lsml = jaxdml.LSML(max_iter=5).fit(Xt, np.arange(40) % 2)  # quadruplets drawn from labels
    assert not hasattr(lsml, "score")
    with pytest.raises(NotFittedError, match="fitted on points and labels; fit it on quadruplets"):
        lsml.predict(Xt[T[:, [0, 1, 0, 2]]])


# --------------------------------------------------------------------------- triplets / quadruplets
def _toy_solve(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, triplets=None,
               quadruplets=None):
    """A diagonal metric: each feature weighted by how well it orders the tuples (a test learner)."""
    if triplets is not None:
        near, far = X[triplets[:, 0]] - X[triplets[:, 1]], X[triplets[:, 0]] - X[triplets[:, 2]]
    else:
        near, far = X[quadruplets[:, 0]] - X[quadruplets[:, 1]], X[quadruplets[:, 2]] - X[quadruplets[:, 3]]
    w = np.maximum(np.mean(far**2 - near**2, axis=0), 0.0) + 1e-6
    return dict(L=np.diag(np.sqrt(w)))


_TOY = Method("toy_tuples", "L", _toy_solve, defaults=dict(triplets=None, quadruplets=None),
              constraints={"triplets": ["array-like", None], "quadruplets": ["array-like", None]}, supervised=False)


class ToyTriplets(_TripletsClassifierMixin, BaseMetricLearner):
    _record = _TOY

    def __init__(self, preprocessor=None):
        self.preprocessor = preprocessor


class ToyQuadruplets(_QuadrupletsClassifierMixin, BaseMetricLearner):
    _record = _TOY

    def __init__(self, preprocessor=None):
        self.preprocessor = preprocessor


@pytest.fixture(scope="module")
def tuples():
    rng = np.random.RandomState(0)
    X = rng.rand(40, 3)
    X[:, 0] *= 10  # a noisy feature; feature 1 carries the order
    T = rng.randint(0, 40, (200, 3))
    T = T[(T[:, 0] != T[:, 1]) & (T[:, 0] != T[:, 2])]
    swap = np.abs(X[T[:, 0], 1] - X[T[:, 1], 1]) > np.abs(X[T[:, 0], 1] - X[T[:, 2], 1])
    T[swap] = T[swap][:, [0, 2, 1]]
    Q = np.concatenate([T[:, :2], T[:, [0, 2]]], axis=1)
    return X, T, Q


def test_triplets_classifier(tuples):
    X, T, _ = tuples
    est = ToyTriplets().fit(X[T])
    assert est.tuple_arity_ == 3 and est.components_.shape == (3, 3)
    same = ToyTriplets(preprocessor=X).fit(T)
    np.testing.assert_array_equal(same.components_, est.components_)
    dec = est.decision_function(X[T])
    np.testing.assert_allclose(dec, est.pair_distance(X[T][:, [0, 2]]) - est.pair_distance(X[T][:, :2]))
    np.testing.assert_array_equal(est.predict(X[T]), np.where(dec > 0, 1, -1))
    assert est.score(X[T]) == pytest.approx(np.mean(dec > 0)) and est.score(X[T]) > 0.9
    np.testing.assert_array_equal(same.predict(T), est.predict(X[T]))  # index triplets via the preprocessor
    assert est.score(X[T][:, [0, 2, 1]]) == pytest.approx(np.mean(dec < 0))
    with pytest.raises(ValueError, match="y must be None"):
        ToyTriplets().fit(X[T], np.ones(len(T)))
    with pytest.raises(ValueError, match="tuples of 2 element"):
        ToyTriplets().fit(X[T[:, :2]], np.ones(len(T)))
    assert not hasattr(ToyTriplets().fit(X[T]), "calibrate_threshold")


def test_quadruplets_classifier(tuples):
    X, _, Q = tuples
    est = ToyQuadruplets().fit(X[Q])
    np.testing.assert_array_equal(ToyQuadruplets(preprocessor=lambda i: X[i]).fit(Q).components_, est.components_)
    dec = est.decision_function(X[Q])
    np.testing.assert_allclose(dec, est.pair_distance(X[Q][:, 2:]) - est.pair_distance(X[Q][:, :2]))
    np.testing.assert_array_equal(est.predict(X[Q]), np.where(dec > 0, 1, -1))
    assert est.score(X[Q]) > 0.9
    assert not hasattr(est, "set_threshold")
    with pytest.raises(ValueError, match="quadruplets must have shape"):
        est.predict(X[Q][:, :3])
