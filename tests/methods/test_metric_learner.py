"""``jaxdml.MetricLearner(name)``: every registered method as a scikit-learn transformer.

Its fit, transform and Mahalanobis API must agree with ``jaxdml.fit(X, y, loss=name)`` (same
``random_state``): kernel methods transform through their kernel columns, ordinal methods take integer
grades, pair learners build their constraints from the labels, MLKR regresses the labels' values.
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import minmax_scale

import jaxdml
from jaxdml.solvers import KernelFittedMetric

#: methods whose fits compile in well under a second, one of each kind (a kernel closed form, a linear
#: closed form, a pair learner, unsupervised): the default suite loops over these; the slow test over
#: every other registered method (about 80 s of CPU, mostly compilation)
QUICK = ("kda", "lda", "mmc", "euclidean")


@pytest.fixture(scope="module")
def iris_small():
    X, y = load_iris(return_X_y=True)
    idx = np.r_[0:20, 50:70, 100:120]
    return minmax_scale(X)[idx], y[idx]  # classes 0, 1, 2 are also grades and real-valued targets


def _check(name, X, y):
    params = {} if name in QUICK else {"max_iter": 3}
    est = jaxdml.MetricLearner(name, params=params, random_state=0).fit(X, y)
    ref = jaxdml.fit(X, y, loss=name, random_state=0, **params)
    Z = est.transform(X)
    np.testing.assert_allclose(Z, ref.transform(X), rtol=1e-6, atol=1e-9 * max(1.0, np.abs(Z).max()))
    pairs = np.stack([X[:6], X[-6:]], axis=1)
    np.testing.assert_allclose(est.pair_distance(pairs), np.linalg.norm(Z[:6] - Z[-6:], axis=1), rtol=1e-6,
                               atol=1e-9)
    metric = est.get_metric()
    np.testing.assert_allclose(metric(X[0], X[-1]), np.linalg.norm(Z[0] - Z[-1]), rtol=1e-6, atol=1e-9)
    if isinstance(ref, KernelFittedMetric):  # coefficients on kernel columns: no d x d Mahalanobis matrix
        np.testing.assert_array_equal(est.X_fit_, ref.X_fit)
        assert est.components_.shape == ref.A.shape
    else:
        np.testing.assert_allclose(est.get_mahalanobis_matrix(), ref.M, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(Z, X @ est.components_.T, rtol=1e-10, atol=1e-12)


def test_metric_learner_quick_methods(iris_small):
    X, y = iris_small
    assert set(QUICK) <= set(jaxdml.methods())
    for name in QUICK:
        _check(name, X, y)


@pytest.mark.slow
def test_metric_learner_every_method(iris_small):
    X, y = iris_small
    for name in sorted(set(jaxdml.methods()) - set(QUICK)):
        _check(name, X, y)
