"""Failure classes found by hostile input: each must give a clear error or a correct result."""

import jax
import numpy as np
import pytest

import jaxdml


@pytest.mark.parametrize("loss", ["nca", "lmnn"])
@pytest.mark.parametrize("n_candidates", [None, 64])
def test_minibatch_fit_in_float64_mode(loss, n_candidates):
    rng = np.random.default_rng(0)
    X, y = rng.random((300, 4)), rng.integers(0, 3, 300)
    with jax.enable_x64(True):
        m = jaxdml.fit(X, y, loss=loss, batch_size=64, max_iter=8, optimizer="adam", learning_rate=1e-2,
                       n_candidates=n_candidates)
    assert m.n_iter == 8 and np.all(np.isfinite(m.L))
    assert not m.converged  # 8 steps of a stochastic method: the budget, not the test, ended it


def test_ncmc_classifier_predict_agrees_with_predict_proba():
    # multimodal classes where the summed-probability rule and the nearest-centroid rule differ
    rng = np.random.default_rng(0)
    centres = np.array([[3, 0], [-3, 0], [0, 3], [0, -3], [0.2, 0.2]], dtype=float)
    lab = np.array([0, 0, 1, 1, 0])
    idx = rng.integers(0, 5, 500)
    X, y = centres[idx] + rng.normal(size=(500, 2)) * 0.8, lab[idx]
    clf = jaxdml.NCMCClassifier(3, random_state=0).fit(X, y)
    Xt = rng.normal(size=(400, 2)) * 3
    proba = clf.predict_proba(Xt)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[proba.argmax(1)])


def test_itml_non_psd_prior_raises_non_psd_error():
    from jaxdml.exceptions import NonPSDError

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), np.arange(40) % 2
    with pytest.raises(NonPSDError, match="positive definite"):
        jaxdml.fit(X, y, loss="itml", prior=np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(NonPSDError):
        jaxdml.ITML(prior=np.diag([1.0, 0.0, 1.0])).fit(X, y)
