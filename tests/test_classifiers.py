"""KNN, NCMCClassifier and LMNNEnergyClassifier: references, pipelines, errors, sklearn contract."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, minmax_scale
from sklearn.utils.estimator_checks import parametrize_with_checks

import jaxdml


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return minmax_scale(X), y


# --------------------------------------------------------------------------- NCMC classifier
@pytest.mark.parametrize("data", ["wine", "iris", "random"])
def test_ncmc_with_one_centroid_equals_nearest_centroid(data, rng):
    if data == "random":
        X = rng.normal(size=(200, 6))
        y = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, 200)]
        Xq = rng.normal(size=(500, 6)) * 2
    else:
        X, y = (load_wine if data == "wine" else load_iris)(return_X_y=True)
        Xq = X + rng.normal(size=X.shape) * X.std(0)
    ours = jaxdml.NCMCClassifier(centroids_num=1).fit(X, y)
    ref = NearestCentroid().fit(X, y)
    np.testing.assert_array_equal(ours.classes_, ref.classes_)
    np.testing.assert_array_equal(ours.centroids_, ref.centroids_)
    np.testing.assert_array_equal(ours.predict(Xq), ref.predict(Xq))
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    proba = ours.predict_proba(Xq)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(ours.classes_[proba.argmax(1)], ref.predict(Xq))


def test_ncmc_handles_multimodal_classes(rng):
    # class 0 at (+-3, 0), class 1 at (0, +-3): both class means sit at the origin
    centres = np.array([[3, 0], [-3, 0], [0, 3], [0, -3]], dtype=float)
    lab = np.array([0, 0, 1, 1])
    idx = rng.integers(0, 4, 400)
    X, y = centres[idx] + rng.normal(size=(400, 2)) * 0.5, lab[idx]
    ncm = jaxdml.NCMCClassifier(1).fit(X[:200], y[:200]).score(X[200:], y[200:])
    ncmc = jaxdml.NCMCClassifier(2, random_state=0).fit(X[:200], y[:200]).score(X[200:], y[200:])
    assert ncmc > 0.97 and ncm < 0.8
    clf = jaxdml.NCMCClassifier(2, random_state=0).fit(X, y)
    assert clf.centroids_.shape == (4, 2) and sorted(clf.centroid_labels_.tolist()) == [0, 0, 1, 1]


def test_ncmc_classifier_errors(wine):
    X, y = wine
    with pytest.raises(ValueError, match=r"centroids_num=49 is larger than the number of samples of 1 class"):
        jaxdml.NCMCClassifier(centroids_num=49).fit(X, y)
    with pytest.raises(ValueError, match="'centroids_num' parameter of NCMCClassifier"):
        jaxdml.NCMCClassifier(centroids_num=0).fit(X, y)
    with pytest.raises(ValueError, match="metric_learner must be"):
        jaxdml.NCMCClassifier(metric_learner=3.5).fit(X, y)


def test_ncmc_classifier_with_learned_metric(wine):
    X, y = wine
    clf = jaxdml.NCMCClassifier(2, metric_learner=jaxdml.NCMC(centroids_num=2, random_state=0), random_state=0)
    acc = cross_val_score(clf, X, y, cv=StratifiedKFold(3, shuffle=True, random_state=0)).mean()
    assert acc > 0.9
    clf.fit(X, y)
    np.testing.assert_allclose(clf.embed(X), clf.metric_learner_.transform(X))


# --------------------------------------------------------------------------- KNN
def test_knn_without_learner_is_sklearn_knn(wine, rng):
    X, y = wine
    Xq = rng.uniform(size=(50, X.shape[1]))
    ours = jaxdml.KNN(5, weights="distance").fit(X, y)
    ref = KNeighborsClassifier(5, weights="distance").fit(X, y)
    np.testing.assert_array_equal(ours.predict(Xq), ref.predict(Xq))
    np.testing.assert_allclose(ours.predict_proba(Xq), ref.predict_proba(Xq))


def test_knn_routes_names_and_estimators_to_the_same_metric(wine):
    X, y = wine
    by_name = jaxdml.KNN(3, metric_learner="lmnn", learner_params={"max_iter": 30}).fit(X, y)
    by_est = jaxdml.KNN(3, metric_learner=jaxdml.LMNN(), learner_params={"max_iter": 30}).fit(X, y)
    pipe = Pipeline([("dml", jaxdml.LMNN(max_iter=30)), ("knn", KNeighborsClassifier(3))]).fit(X, y)
    assert isinstance(by_name.metric_learner_, jaxdml.FittedMetric)
    np.testing.assert_allclose(by_name.metric_learner_.L, by_est.metric_learner_.components_, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(by_est.predict(X), pipe.predict(X))
    np.testing.assert_array_equal(by_name.predict(X), pipe.predict(X))


@pytest.mark.slow  # accuracy on real data: 5-fold cross-validation of two learned classifiers
def test_knn_and_energy_beat_chance_in_pipelines():
    X, y = load_wine(return_X_y=True)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    knn = make_pipeline(MinMaxScaler(), jaxdml.KNN(3, metric_learner="lmnn"))
    energy = make_pipeline(MinMaxScaler(), jaxdml.LMNNEnergyClassifier(3))
    chance = np.bincount(y).max() / len(y)  # 0.40
    for model in (knn, energy):
        assert cross_val_score(model, X, y, cv=cv).mean() > 0.9 > chance + 0.5


# --------------------------------------------------------------------------- energy classifier
def _naive_energy(Z, y, targets, tmask, zt, c, k, mu, margin):
    """The seed's energy of query zt with candidate label c, by loops (Euclidean in Z)."""
    d = lambda a, b: float(np.sum((a - b) ** 2))
    same = [i for i in range(len(Z)) if y[i] == c]
    tgt = sorted(same, key=lambda i: d(zt, Z[i]))[:k]
    e_pull = sum(d(zt, Z[j]) for j in tgt)
    e_push = sum(max(0.0, margin + d(zt, Z[j]) - d(zt, Z[l])) for j in tgt for l in range(len(Z)) if y[l] != c)
    e_inv = 0.0
    for i in range(len(Z)):
        if y[i] == c:
            continue
        for j, m in zip(targets[i], tmask[i]):
            if m:
                e_inv += max(0.0, margin + d(Z[i], Z[j]) - d(Z[i], zt))
    return (1 - mu) * e_pull + mu * (e_push + e_inv)


def test_energy_matches_the_seed_rule(rng):
    X = rng.normal(size=(40, 3))
    y = np.arange(40) % 3
    Xq = rng.normal(size=(6, 3))
    clf = jaxdml.LMNNEnergyClassifier(3, mu=0.4, margin=0.7, learner_params={"max_iter": 10}).fit(X, y)
    Z, Zq = clf.embed(X), clf.embed(Xq)
    targets, tmask = jaxdml.problems.target_neighbors(X, y, 3, warn=False)
    E = clf.energy(Xq)
    ref = np.array([[_naive_energy(Z, y, targets, tmask, zq, c, 3, 0.4, 0.7) for c in range(3)] for zq in Zq])
    np.testing.assert_allclose(E, ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(clf.predict(Xq), ref.argmin(1))
    np.testing.assert_allclose(clf.predict_proba(Xq).sum(1), 1.0)


def test_energy_classifier_uses_its_lmnn_parameters(wine):
    X, y = wine
    clf = jaxdml.LMNNEnergyClassifier(4, mu=0.3, learner_params={"max_iter": 20}).fit(X, y)
    ref = jaxdml.fit(X, y, loss="lmnn", n_neighbors=4, mu=0.3, margin=1.0, max_iter=20)
    np.testing.assert_allclose(clf.metric_learner_.L, ref.L, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- scikit-learn contract
# The learned-metric routes (an estimator, a method name) use closed-form learners here: the
# checks test the classifier contract, and every optax-trained learner would compile its loop for
# each check's data shape (the gradient-trained routes are tested above). NCMCClassifier uses one
# centroid per class because some check data sets have single-sample classes (more centroids than
# samples is a documented ValueError). No check is skipped (scikit-learn itself skips its array-API
# check when SCIPY_ARRAY_API is unset).
CLASSIFIERS = [
    jaxdml.KNN(3),
    jaxdml.KNN(3, metric_learner=jaxdml.PCA()),
    jaxdml.NCMCClassifier(centroids_num=1, metric_learner="pca"),
    jaxdml.LMNNEnergyClassifier(metric_learner="euclidean"),
]


@parametrize_with_checks(CLASSIFIERS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
