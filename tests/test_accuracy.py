"""End-to-end accuracy: learned metrics help k-NN; NCA matches scikit-learn's NCA."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_wine
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis
from sklearn.preprocessing import MinMaxScaler

import jaxdml


def cv_accuracy(X, y, make_transform, *, k=3, n_splits=10, seed=0):
    folds = list(StratifiedKFold(n_splits, shuffle=True, random_state=seed).split(X, y))
    pad = max(len(tr) for tr, _ in folds)
    accs = []
    for tr, te in folds:
        sc = MinMaxScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        tf = make_transform(Xtr, y[tr], pad)
        accs.append(KNeighborsClassifier(k).fit(tf(Xtr), y[tr]).score(tf(Xte), y[te]))
    return float(np.mean(accs))


def euclidean(Xtr, ytr, pad):
    return lambda Z: Z


def jax_method(loss, **kw):
    def make(Xtr, ytr, pad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jaxdml.fit(Xtr, ytr, loss=loss, pad_to=pad, **kw).transform
    return make


def sklearn_nca(Xtr, ytr, pad):
    return NeighborhoodComponentsAnalysis(random_state=0).fit(Xtr, ytr).transform


@pytest.fixture(scope="module")
def wine():
    return load_wine(return_X_y=True)


@pytest.mark.slow  # accuracy on real data (test_nca_matches_sklearn_on_wine stays in the default suite)
def test_nca_and_lmnn_beat_euclidean_on_wine(wine):
    X, y = wine
    base = cv_accuracy(X, y, euclidean)
    for loss in ("nca", "lmnn"):
        acc = cv_accuracy(X, y, jax_method(loss))
        assert acc > base, (loss, acc, base)


def test_nca_matches_sklearn_on_wine(wine):
    X, y = wine
    ours = cv_accuracy(X, y, jax_method("nca"))
    ref = cv_accuracy(X, y, sklearn_nca)
    assert ours >= ref - 0.01, (ours, ref)


@pytest.mark.slow
def test_nca_matches_sklearn_on_digits():
    """1 797 rows, 64 features, 10 classes; 5 folds (each fit of either learner is 1-3 s on one core)."""
    X, y = load_digits(return_X_y=True)
    ours = cv_accuracy(X, y, jax_method("nca"), n_splits=5)
    ref = cv_accuracy(X, y, sklearn_nca, n_splits=5)
    assert ours >= ref - 0.01, (ours, ref)
