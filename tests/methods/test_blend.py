"""The Euclidean blend (``euclidean_blend``; protocol round 17): which fits it touches, the blended metric's
formula, the leave-one-out score against a brute-force reference, and the warning."""

import warnings

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

import jaxdml
from jaxdml.methods import Method, _registry
from jaxdml.methods.core import _blend
from jaxdml.methods.core._blend import BLEND_ABOVE, blended_map, loo_accuracy


@pytest.fixture
def fixed_maps(monkeypatch):
    """Two labelled methods that return a fixed map: "noise_map" weighs the noise feature, "signal_map"
    the label-carrying one (registered into a copy of the table)."""
    monkeypatch.setattr(_registry, "_TABLE", dict(_registry._TABLE))

    def solver(diag):
        def solve(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose):
            return dict(L=np.diag(diag)[:n_components])
        return solve

    jaxdml.register_method(Method("noise_map", "L", solver([1e-3, 1.0])))
    jaxdml.register_method(Method("signal_map", "L", solver([1.0, 1e-3])))
    jaxdml.register_method(Method("zero_map", "L", solver([0.0, 0.0])))


def two_features(n, seed=0):
    """The class is the sign of feature 0; feature 1 is noise on the same scale."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, (X[:, 0] > 0).astype(int)


def fit_caught(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = jaxdml.fit(*args, **kwargs)
    return result, [w for w in caught if "euclidean_blend" in str(w.message)]


def test_blended_map_is_the_formula():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(4, 4))
    M = A.T @ A
    for t in (0.0, 0.25, 0.7, 1.0):
        L = blended_map(M, t)
        expected = (1 - t) * np.trace(M) / 4 * np.eye(4) + t * M
        np.testing.assert_allclose(L.T @ L, expected, rtol=1e-12, atol=1e-12 * np.trace(M))
        assert np.all(np.diff(np.linalg.norm(L, axis=1)) <= 1e-12)  # rows by decreasing eigenvalue


def test_loo_accuracy_matches_brute_force():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(300, 3))
    codes = rng.integers(0, 3, 300)
    queries = np.sort(rng.choice(300, 120, replace=False))
    D = ((Z[queries, None, :] - Z[None]) ** 2).sum(-1)
    D[np.arange(len(queries)), queries] = np.inf  # leave the row itself out
    right = 0
    for row, q in zip(D, queries):
        votes = codes[np.argsort(row, kind="stable")[:3]]
        counts = np.bincount(votes, minlength=3)
        tied = [v for v in votes if counts[v] == counts.max()]  # nearest first
        right += tied[0] == codes[q]
    assert loo_accuracy(Z, codes, queries) == pytest.approx(right / len(queries), abs=1e-12)


def test_auto_blends_a_metric_that_loses_to_euclidean_on_large_data(fixed_maps):
    X, y = two_features(BLEND_ABOVE + 200)
    res, caught = fit_caught(X, y, loss="noise_map", random_state=0)
    info = res.info["euclidean_blend"]
    scores = dict(zip(info["weights"], info["loo_accuracy"]))
    assert info["weight"] < 1 and scores[info["weight"]] == max(scores.values()) > scores[1.0]
    assert info["queries"] == _blend.QUERIES and info["k"] == 3
    M = np.diag([1e-6, 1.0])
    t = info["weight"]
    np.testing.assert_allclose(res.L.T @ res.L, (1 - t) * np.trace(M) / 2 * np.eye(2) + t * M, atol=1e-12)
    np.testing.assert_array_equal(info["own_L"], np.diag([1e-3, 1.0]))
    assert len(caught) == 1 and "noise_map" in str(caught[0].message)
    # the blend predicts better than the method's own metric on fresh rows
    Xt, yt = two_features(2000, seed=5)

    def acc(L):
        return KNeighborsClassifier(3).fit(X @ L.T, y).score(Xt @ L.T, yt)

    assert acc(res.L) > acc(info["own_L"]) + 0.1


def test_a_collapsed_metric_blends_with_the_unit_identity(fixed_maps):
    X, y = two_features(BLEND_ABOVE + 200)
    res, caught = fit_caught(X, y, loss="zero_map", random_state=0)
    info = res.info["euclidean_blend"]
    scores = info["loo_accuracy"]
    assert scores[-1] < 0.6 and scores[0] > 0.9  # a zero metric votes the first rows; every blend is Euclidean
    assert scores[0] == scores[1] == scores[2] == scores[3]
    assert info["weight"] == 0.75 and len(caught) == 1  # the largest weight of the best score
    np.testing.assert_allclose(res.L.T @ res.L, 0.25 * np.eye(2), atol=1e-12)


def test_the_score_does_not_see_a_shift_of_the_data(fixed_maps):
    """Leave-one-out distances are taken on centred rows: data far from the origin (where float32 coordinates
    keep 3 digits of the spread) score as the same data at the origin."""
    X, y = two_features(BLEND_ABOVE + 200)
    near = jaxdml.fit(X, y, loss="noise_map", random_state=0).info["euclidean_blend"]
    far = jaxdml.fit(X + 1e5, y, loss="noise_map", random_state=0).info["euclidean_blend"]
    assert far["weight"] == near["weight"]
    np.testing.assert_allclose(far["loo_accuracy"], near["loo_accuracy"], atol=2e-3)


def test_auto_keeps_a_metric_that_wins_and_leaves_small_fits_alone(fixed_maps):
    X, y = two_features(BLEND_ABOVE + 200)
    res, caught = fit_caught(X, y, loss="signal_map", random_state=0)
    assert res.info["euclidean_blend"]["weight"] == 1.0 and not caught
    np.testing.assert_array_equal(res.L, np.diag([1.0, 1e-3]))  # the method's own map, bit for bit
    small, caught = fit_caught(X[:BLEND_ABOVE], y[:BLEND_ABOVE], loss="noise_map", random_state=0)
    assert "euclidean_blend" not in small.info and not caught
    np.testing.assert_array_equal(small.L, np.diag([1e-3, 1.0]))


def test_off_a_fixed_weight_and_what_is_never_blended(fixed_maps):
    X, y = two_features(BLEND_ABOVE + 200)
    off, caught = fit_caught(X, y, loss="noise_map", euclidean_blend="off")
    assert "euclidean_blend" not in off.info and not caught
    with jaxdml.config.euclidean_blend("off"):  # the library default, e.g. for estimators
        assert jaxdml.config.get_euclidean_blend() == "off"
        est = jaxdml.MetricLearner("noise_map").fit(X, y)
        assert "euclidean_blend" not in est.result_.info
    assert jaxdml.config.get_euclidean_blend() == "auto"
    half, caught = fit_caught(X[:50], y[:50], loss="noise_map", euclidean_blend=0.5)
    assert half.info["euclidean_blend"] == {"weight": 0.5, "own_L": half.info["euclidean_blend"]["own_L"]}
    np.testing.assert_allclose(half.L.T @ half.L, 0.25 * (1 + 1e-6) * np.eye(2) + 0.5 * np.diag([1e-6, 1.0]),
                               atol=1e-12)
    assert not caught  # a weight the user chose is not reported
    reduced = jaxdml.fit(X, y, loss="noise_map", n_components=1)  # a reduced output keeps its dimension
    assert reduced.L.shape == (1, 2) and "euclidean_blend" not in reduced.info
    unlabelled = jaxdml.fit(X, y, loss="pca")  # methods that do not learn from class labels
    assert "euclidean_blend" not in unlabelled.info


def test_a_measured_loss_warns_only_where_the_fit_is_not_blended(fixed_maps):
    """``Method.measured_loss`` describes the method's own metric: a fit that the blend checks does not repeat it;
    with the blend off it does."""
    from jaxdml.methods.core._record import MeasuredLoss

    record = jaxdml.methods()["noise_map"]._replace(measured_loss=MeasuredLoss(4000, "Measured: a test."))
    X, y = two_features(BLEND_ABOVE + 200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jaxdml.methods.run(record, X, y, random_state=0)
    assert not [w for w in caught if "Measured: a test" in str(w.message)]
    with pytest.warns(UserWarning, match="Measured: a test"):
        jaxdml.methods.run(record, X, y, random_state=0, euclidean_blend="off")


@pytest.mark.parametrize("bad", ["on", -0.1, 1.5, True, None])
def test_bad_blend_values_name_the_problem(bad, fixed_maps):
    X, y = two_features(50)
    if bad is None:  # None means the library default in jaxdml.fit; the setter refuses it
        with pytest.raises(ValueError, match="euclidean_blend must be"):
            jaxdml.config.set_euclidean_blend(bad)
        return
    with pytest.raises(ValueError, match="euclidean_blend must be"):
        jaxdml.fit(X, y, loss="noise_map", euclidean_blend=bad)
    with pytest.raises(ValueError, match="euclidean_blend must be"):
        jaxdml.config.set_euclidean_blend(bad)
    assert jaxdml.config.get_euclidean_blend() == "auto"
