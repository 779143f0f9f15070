"""Closed-form PCA and LDA against scikit-learn and their optimality statements."""

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.decomposition import PCA as SkPCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

import jaxdml

from ._reference import principal_angles_max

LOADERS = {"iris": load_iris, "wine": load_wine, "digits": load_digits}


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_pca_spans_sklearn_subspace(name):
    X, y = LOADERS[name](return_X_y=True)
    for k in (1, 2, 3):
        L = jaxdml.fit(X, loss="pca", n_components=k).L
        ref = SkPCA(n_components=k).fit(X).components_
        assert principal_angles_max(L.T, ref.T) < 1e-4
        np.testing.assert_allclose(L @ L.T, np.eye(k), atol=1e-5)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_lda_spans_sklearn_subspace(name):
    X, y = LOADERS[name](return_X_y=True)
    c = len(np.unique(y))
    L = jaxdml.fit(X, y, loss="lda").L
    assert L.shape == (c - 1, X.shape[1])
    sk = LinearDiscriminantAnalysis().fit(X, y)
    ref = sk.scalings_[:, : c - 1]
    assert principal_angles_max(L.T, ref.T.T) < 1e-4
    # the leading direction alone also agrees
    assert principal_angles_max(L[:1].T, ref[:, :1]) < 1e-4


def test_lda_is_generalised_eigen_solution(x64):
    X, y = load_wine(return_X_y=True)
    res = jaxdml.fit(X, y, loss="lda")
    L = res.L
    mu = X.mean(0)
    Sb = sum((y == c).sum() * np.outer(X[y == c].mean(0) - mu, X[y == c].mean(0) - mu) for c in np.unique(y))
    Sw = sum((X[y == c] - X[y == c].mean(0)).T @ (X[y == c] - X[y == c].mean(0)) for c in np.unique(y))
    lam = res.info["eigenvalues"]
    for i in range(L.shape[0]):  # S_b v = lambda S_w v
        v = L[i]
        r = Sb @ v - lam[i] * Sw @ v
        assert np.linalg.norm(r) < 1e-6 * np.linalg.norm(Sb @ v)
    obj = lambda A: np.trace(np.linalg.solve(A @ Sw @ A.T, A @ Sb @ A.T))
    rng = np.random.default_rng(0)
    best = obj(L)
    for _ in range(50):
        assert obj(rng.normal(size=L.shape)) <= best * (1 + 1e-9)


def test_lda_regularises_singular_within_scatter():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 30))  # n < d: S_w is singular
    y = np.arange(12) % 3
    L = jaxdml.fit(X, y, loss="lda").L
    assert L.shape == (2, 30) and np.all(np.isfinite(L))
