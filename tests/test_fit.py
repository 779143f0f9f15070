"""``jaxdml.fit``: the card's call, every kind of loss, the fitted-metric invariants, bad input."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import load_iris

import jaxdml
from jaxdml import losses


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return X / X.max(0), y


def test_card_call_and_invariants(iris):
    X, y = iris
    m = jaxdml.fit(loss="lmnn", X=X, y=y)
    assert m.L.shape == (4, 4)
    np.testing.assert_allclose(m.M, m.L.T @ m.L)
    Z = m.transform(X[:10])
    D_emb = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    diff = X[:10, None] - X[None, :10]
    D_mah = np.einsum("ijk,kl,ijl->ij", diff, m.M, diff)
    np.testing.assert_allclose(D_emb, D_mah, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m.pairwise_distances(X[:10], squared=True), D_mah, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(m.pair_distance(X[:5], X[5:10]) ** 2, np.diag(D_mah[:5, 5:10]), rtol=1e-6)
    assert m.n_iter > 0 and m.loss_history.size == m.n_iter + 1 and isinstance(m.converged, bool)


@pytest.mark.parametrize("loss", ["nca", "lmnn", "lmnn_metric", "pca", "lda", "euclidean"])
def test_every_core_method_runs(iris, loss):
    X, y = iris
    m = jaxdml.fit(X, y, loss=loss, max_iter=20)
    assert np.all(np.isfinite(m.L)) and m.L.shape[1] == 4
    if loss == "lmnn_metric":
        assert np.linalg.eigvalsh(m.M).min() >= -1e-6
        np.testing.assert_allclose(m.L.T @ m.L, m.M, atol=1e-5)


def test_dimension_reduction_and_string_labels(iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    m = jaxdml.fit(X, names, loss="nca", n_components=2, max_iter=30)
    assert m.L.shape == (2, 4) and list(m.classes) == list(names[[0, 50, 100]])
    assert jaxdml.fit(X, names, loss="lda").L.shape == (2, 4)


def test_metric_loss_with_fewer_components_uses_pca_first(iris):
    X, y = iris
    m = jaxdml.fit(X, y, loss="lmnn_metric", n_components=2, max_iter=30)
    assert m.L.shape == (2, 4) and np.linalg.matrix_rank(m.M) <= 2
    pca = jaxdml.fit(X, loss="pca", n_components=2).L
    from ._reference import principal_angles_max

    assert principal_angles_max(m.L.T, pca.T) < 1e-6  # the metric lives in the principal plane


@pytest.mark.slow
def test_combined_and_callable_losses(iris, rng):
    X, y = iris
    m = jaxdml.fit(X, y, loss={"lmnn": 1.0, "nca": 0.5}, max_iter=30)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    L = jnp.asarray(m.L, jnp.float32)
    # a named loss brings its method's defaults: NCA's reg="auto" is its penalty on this (small) data
    assert jaxdml.get_method("nca").defaults["reg"] == "auto"
    from jaxdml.methods.gradient._nca import NCA_REG as reg
    # compiled (op-by-op dispatch takes seconds, tens under coverage)
    expect = float(jax.jit(losses.lmnn)(L, prob)) + 0.5 * float(jax.jit(losses.nca)(L, prob, reg=reg))
    assert abs(m.loss - expect) < 1e-3 * max(1, abs(expect))

    def my_loss(L, problem, *, weight=0.1):
        return losses.nca(L, problem) + weight * jnp.sum(L * L)

    m2 = jaxdml.fit(X, y, loss=my_loss, weight=0.05, max_iter=30)
    assert m2.method == "my_loss" and m2.loss < float(jax.jit(my_loss)(jnp.eye(4), prob, weight=0.05))


@pytest.mark.slow  # LMNN's active set starts above 4096 rows
def test_weighted_losses_take_the_driver_above_the_lmnn_route():
    """A weighted loss is minimised as written, whatever its first part's large-data route: LMNN's
    active set minimises plain LMNN, so ``{"lmnn": w, ...}`` above 4096 rows takes the driver (it
    raised a TypeError there before). The reported loss is the weighted sum at the returned map."""
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4200, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    for loss in ({"lmnn": 1.0, "nca": 0.5}, {"lmnn": 2.0}):
        with pytest.warns(ConvergenceWarning):  # 5 driver steps (the active set counts outer passes)
            m = jaxdml.fit(X, y, loss=loss, max_iter=5, random_state=0)
        assert m.method == "+".join(loss) and m.n_iter == 5
        assert np.all(np.isfinite(m.L)) and np.isfinite(m.loss)


def test_gradient_of_a_loss_composes(iris):
    X, y = iris
    prob = jaxdml.make_problem(X, y)
    g = jax.jit(jax.grad(losses.lmnn))(jnp.eye(4), prob)
    assert g.shape == (4, 4) and bool(jnp.all(jnp.isfinite(g)))


BAD = [
    (lambda X, y: (X[:-1], y), "inconsistent numbers of samples"),
    (lambda X, y: (X[:, 0], y), "must be 2-D"),
    (lambda X, y: (X[:, :, None], y), "must be 2-D"),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X), y), "NaN"),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X), y), "infinity"),
    (lambda X, y: (X, np.zeros_like(y)), "1 class"),
    (lambda X, y: (X.astype(str).astype(object) + "x", y), "must be numeric"),
    (lambda X, y: (X, y.reshape(-1, 3)), "y must be 1-D"),
]


@pytest.mark.parametrize("make,msg", BAD)
def test_bad_input_is_rejected_clearly(iris, make, msg):
    X, y = make(*iris)
    with pytest.raises(ValueError, match=msg):
        jaxdml.fit(X, y, loss="lmnn")  # (NCA accepts one class, as scikit-learn's: see test_defaults)


def test_bad_hyper_parameters_are_rejected(iris):
    X, y = iris
    with pytest.raises(ValueError, match=re.escape("Unknown loss 'nope'. Valid names: [")):
        jaxdml.fit(X, y, loss="nope")
    with pytest.raises(ValueError, match="n_components=7 is out of range"):
        jaxdml.fit(X, y, loss="nca", n_components=7)
    with pytest.raises(ValueError, match="n_components=3 is out of range"):
        jaxdml.fit(X, y, loss="lda", n_components=3)
    with pytest.raises(ValueError, match="'mu' parameter"):
        jaxdml.fit(X, y, loss="lmnn", mu=1.5)
    with pytest.raises(ValueError, match="Unknown hyper-parameter"):
        jaxdml.fit(X, y, loss="nca", mu=0.5)
    with pytest.raises(ValueError, match="must return a scalar"):
        jaxdml.fit(X, y, loss=lambda L, p: L)
    with pytest.raises(ValueError, match="different parametrizations"):
        jaxdml.fit(X, y, loss={"lmnn": 1.0, "lmnn_metric": 1.0})
    with pytest.raises(ValueError, match="max_iter"):
        jaxdml.fit(X, y, loss="nca", max_iter=0)


def test_small_class_for_lmnn_warns_and_uses_fewer_targets(iris):
    X, y = iris
    keep = np.r_[0:50, 50:100, 100:103]  # class 2 has 3 samples: 2 targets each at most
    with pytest.warns(UserWarning, match="too few samples"):
        m = jaxdml.fit(X[keep], y[keep], loss="lmnn", n_neighbors=3, max_iter=10)
    assert np.all(np.isfinite(m.L))
    with pytest.raises(ValueError, match="n_neighbors=200 must be smaller"):
        jaxdml.fit(X, y, loss="lmnn", n_neighbors=200)
