"""Losses of embedded points: ``jaxdml.losses.embedded(loss)(Z, problem)`` for Z = f(X)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

import jaxdml
from jaxdml import losses

GRADIENT_LOSSES = ["nca", "lmnn", "lmnn_metric", "ncmml", "ncmc", "mcml", "ldml"]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "nca" else n for n in GRADIENT_LOSSES])
def test_embedded_loss_is_the_loss_of_the_linear_map(name, x64):
    """g(X L^T, problem) = loss(L, problem) (M-losses: g(X L^T) = loss(L^T L)), and the gradient
    reaching Z gives the gradient in L by the chain rule: dL = (dg/dZ)^T X."""
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(30, 4)), np.arange(30) % 3
    prob = jaxdml.make_problem(X, y, n_neighbors=2, n_centroids=2 if name == "ncmc" else None, random_state=0,
                               pad_to=32)
    L = jnp.asarray(np.eye(3, 4) + 0.2 * rng.normal(size=(3, 4)))
    fn = jaxdml.methods()[name].loss.fn
    g = losses.on_embedding(name)
    if name == "ncmc":  # points of the problem other than X must be embedded as well
        prob_z = prob._replace(centroids=prob.centroids @ L.T)
    else:
        prob_z = prob
    Z = prob.X @ L.T
    # each side compiled as one program (evaluated op by op, the losses compile every primitive)
    ref = jax.jit(fn)(L.T @ L if jaxdml.methods()[name].loss.param == "M" else L, prob)
    np.testing.assert_allclose(float(jax.jit(g)(Z, prob_z)), float(ref), rtol=1e-10)
    if jaxdml.methods()[name].loss.param == "L" and name != "ncmc":
        dZ = jax.jit(jax.grad(g))(Z, prob)
        np.testing.assert_allclose(np.asarray(dZ.T @ prob.X), np.asarray(jax.jit(jax.grad(fn))(L, prob)), rtol=1e-8,
                                   atol=1e-12)
    assert losses.embedded(fn).__name__ == fn.__name__


def _mlp(key, d, hidden, k):
    k1, k2 = jax.random.split(key)
    return dict(W1=jax.random.normal(k1, (d, hidden)) / np.sqrt(d), b1=jnp.zeros(hidden),
                W2=jax.random.normal(k2, (hidden, k)) / np.sqrt(hidden), b2=jnp.zeros(k))


def _embed(p, X):
    return jnp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["nca", "lmnn"])
def test_mlp_embedding_beats_the_linear_map_on_digits(name):
    """A two-layer MLP trained with the NCA / LMNN loss of its embedding (plain JAX + optax) gives a
    better 3-NN test accuracy than the linear map of the same method and output dimension (2)."""
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X / 16.0, y, train_size=400, stratify=y, random_state=0)
    knn = KNeighborsClassifier(3)
    lin = jaxdml.fit(Xtr, ytr, loss=name, n_components=2, random_state=0)
    acc_linear = knn.fit(lin.transform(Xtr), ytr).score(lin.transform(Xte), yte)

    prob = jaxdml.make_problem(Xtr, ytr, n_neighbors=3 if name == "lmnn" else None)
    g = losses.on_embedding(name)
    params = _mlp(jax.random.key(0), X.shape[1], 32, 2)
    opt = optax.adam(1e-2)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(lambda p: g(_embed(p, prob.X), prob))(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    first = None
    for _ in range(200):
        params, state, value = step(params, state)
        first = float(value) if first is None else first
    assert float(value) < first  # the loss of the embedding decreased
    Ztr, Zte = (np.asarray(_embed(params, jnp.asarray(A, prob.X.dtype))) for A in (Xtr, Xte))
    acc_mlp = knn.fit(Ztr, ytr).score(Zte, yte)
    assert acc_mlp > acc_linear + 0.05, (acc_mlp, acc_linear)


def test_on_embedding_takes_a_builtin_name_or_a_function():
    """The maths layer does not read the method registry: a registered method is given by its function."""
    assert losses.on_embedding("nca").__name__ == "nca"
    fn = jaxdml.methods()["lmnn"].loss.fn
    assert losses.on_embedding(fn).__name__ == fn.__name__
    with pytest.raises(ValueError, match=r"methods\(\)\[name\]\.loss\.fn"):
        losses.on_embedding("not_a_loss")
