"""metric-learn's algorithms (Covariance, LFDA, RCA, MLKR, MMC), each against an independent reference."""

import warnings

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import MinMaxScaler

import jaxdml


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return MinMaxScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


# ---------------------------------------------------------------- Covariance
def test_covariance_is_the_inverse_sample_covariance(wine):
    X, y = wine
    ref = np.linalg.inv(np.cov(X.T))
    res = jaxdml.fit(X, None, loss="covariance")
    np.testing.assert_allclose(res.M, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())
    est = jaxdml.Covariance().fit(X, y)  # labels are ignored
    np.testing.assert_allclose(est.metric_, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())
    np.testing.assert_allclose(est.components_.T @ est.components_, ref, rtol=1e-7, atol=1e-7 * np.abs(ref).max())
    # whitening: the transformed data has identity covariance
    np.testing.assert_allclose(np.cov(est.transform(X).T), np.eye(X.shape[1]), atol=1e-8)


def test_covariance_singular_is_regularised():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X = np.hstack([X, X[:, :1] + X[:, 1:2]])  # rank 3 in 4 dimensions
    M = jaxdml.Covariance().fit(X).metric_
    assert np.all(np.isfinite(M)) and np.allclose(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0
