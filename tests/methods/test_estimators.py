"""scikit-learn contract: check_estimator suite, Pipeline, GridSearchCV, clone, pickling."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import jaxdml

from .._reference import expected_failed_checks

# Estimators under the common checks, with small iteration budgets (as scikit-learn does for NCA).
# No check is skipped; a tuple classifier's checks that call predict on points are expected to fail
# (tests/_reference.py: TUPLE_CLASSIFIER_CHECKS). The default suite checks one estimator of each kind (unsupervised and
# supervised eigen methods, chunklets, kernel, wrapper, weakly supervised); the others, and the
# gradient learners (each check compiles their solver again for its data's shape), run in the slow
# suite (tests/ports/test_nca_sklearn_api.py ports scikit-learn's own NCA tests to the default suite).
ESTIMATORS = [
    jaxdml.Euclidean(),
    jaxdml.LDA(),
    jaxdml.Covariance(),
    jaxdml.RCA(),
    jaxdml.KLLDA(), jaxdml.IMLS(LinearDiscriminantAnalysis(), max_iter=2),  # pyDML's
    jaxdml.SDML(),  # metric-learn's weakly supervised algorithms
]
SLOW_ESTIMATORS = [
    jaxdml.PCA(), jaxdml.GMML(), jaxdml.LLDA(), jaxdml.LFDA(),  # the eigen paths of Covariance/LDA, KLLDA

    jaxdml.NCA(max_iter=5),
    jaxdml.LMNN(max_iter=5),
    jaxdml.LMNN(solver="projected", max_iter=5),
    jaxdml.MLKR(max_iter=5),
    jaxdml.MMC(max_iter=5),
    jaxdml.LODML(max_iter=5),  # ordinal: CMOML, KODML, KCMOML share its base class (fits: test_ordinal)
    jaxdml.LSML(max_iter=5), jaxdml.SCML(max_iter=500),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(SLOW_ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_slow(estimator, check):
    check(estimator)


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return X / X.max(0), y


@pytest.mark.slow
def test_pipeline_and_grid_search(iris):
    X, y = iris
    pipe = Pipeline([("dml", jaxdml.NCA(max_iter=20)), ("knn", KNeighborsClassifier(3))])
    assert pipe.fit(X, y).score(X, y) > 0.9
    grid = GridSearchCV(
        Pipeline([("dml", jaxdml.LMNN(max_iter=20)), ("knn", KNeighborsClassifier(3))]),
        {"dml__mu": [0.3, 0.6], "dml__n_components": [2, 4]}, cv=3,
    )
    grid.fit(X, y)
    assert grid.best_score_ > 0.85
    assert grid.best_estimator_.named_steps["dml"].components_.shape[0] == grid.best_params_["dml__n_components"]


def test_fitted_attributes_and_views(iris):
    X, y = iris
    est = jaxdml.LMNN(max_iter=20).fit(X, y)
    np.testing.assert_allclose(est.metric(), est.transformer().T @ est.transformer(), atol=1e-10)
    assert est.n_iter_ >= 1 and est.loss_curve_.size == est.n_iter_ + 1
    pairs = np.stack([X[:5], X[5:10]], axis=1)
    d = est.pair_distance(pairs)
    np.testing.assert_allclose(d, [est.get_metric()(a, b) for a, b in zip(X[:5], X[5:10])])
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(est2.transform(X), est.transform(X))
    c = clone(est)
    assert c.get_params() == est.get_params() and not hasattr(c, "components_")


def test_estimator_rejects_bad_parameters(iris):
    X, y = iris
    with pytest.raises(ValueError, match="'mu' parameter of LMNN"):
        jaxdml.LMNN(mu=0).fit(X, y)
    with pytest.raises(ValueError, match="'solver' parameter of LMNN"):
        jaxdml.LMNN(solver="sdp").fit(X, y)
    with pytest.raises(ValueError, match="n_components=9 is out of range"):
        jaxdml.NCA(n_components=9).fit(X, y)
    with pytest.raises(ValueError, match="1 class"):  # (NCA accepts one class, as scikit-learn's)
        jaxdml.LMNN().fit(X, np.zeros(len(X)))
