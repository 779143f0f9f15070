"""End to end: an MLP embedding of the digits trained with jaxdml.losses.deep (plain JAX + optax) retrieves
better than the Euclidean distance and the linear LDA map (jaxdml.retrieval), as in
notebooks/deep_metric_learning.ipynb; the same step with an equinox model when equinox is installed."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import jaxdml
from jaxdml.losses import deep
from jaxdml.retrieval import retrieval_scores


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=1000, stratify=y, random_state=0)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr).astype(np.float32), sc.transform(Xte).astype(np.float32), ytr, yte


def _pk(rng, y, P=10, K=12):
    return np.concatenate([rng.choice(np.flatnonzero(y == c), K, replace=False)
                           for c in rng.choice(np.unique(y), P, replace=False)])


def _mlp(params, X):
    Z = jax.nn.relu(X @ params["W1"] + params["b1"]) @ params["W2"]
    return Z / jnp.linalg.norm(Z, axis=1, keepdims=True)


@pytest.mark.slow
def test_mlp_with_triplet_and_multi_similarity_beats_euclidean_and_lda(digits):
    Xtr, Xte, ytr, yte = digits
    k1, k2 = jax.random.split(jax.random.key(0))
    params = dict(W1=jax.random.normal(k1, (64, 128)) / 8.0, b1=jnp.zeros(128),
                  W2=jax.random.normal(k2, (128, 32)) / np.sqrt(128))
    opt = optax.adam(3e-3)
    state = opt.init(params)

    def loss(p, X, y):
        Z = _mlp(p, X)
        return deep.triplet_margin(Z, y, miner=deep.batch_hard) + 0.5 * deep.multi_similarity(
            Z, y, miner=deep.multi_similarity_pairs)

    @jax.jit
    def step(p, state, X, y):
        value, g = jax.value_and_grad(loss)(p, X, y)
        updates, state = opt.update(g, state, p)
        return optax.apply_updates(p, updates), state, value

    rng = np.random.default_rng(0)
    values = []
    for _ in range(150):
        idx = _pk(rng, ytr)
        params, state, value = step(params, state, Xtr[idx], ytr[idx])
        values.append(float(value))
    assert np.mean(values[-20:]) < 0.5 * np.mean(values[:20])  # the loss went down
    mlp = retrieval_scores(np.asarray(_mlp(params, Xte)), yte)
    euclid = retrieval_scores(Xte, yte)
    lda = jaxdml.fit(Xtr, ytr, loss="lda")
    linear = retrieval_scores(lda.transform(Xte), yte)
    assert mlp["map_at_r"] > euclid["map_at_r"] + 0.3, (mlp, euclid)
    assert mlp["map_at_r"] > linear["map_at_r"] + 0.05, (mlp, linear)
    assert mlp["precision_at_1"] >= euclid["precision_at_1"] - 0.01


@pytest.mark.slow
def test_an_equinox_model_trains_with_a_deep_loss(digits):
    eqx = pytest.importorskip("equinox")
    Xtr, Xte, ytr, yte = digits
    model = eqx.nn.MLP(64, 16, width_size=64, depth=1, key=jax.random.key(0))
    opt = optax.adam(3e-3)
    state = opt.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, state, X, y):
        value, grads = eqx.filter_value_and_grad(lambda m: deep.supervised_contrastive(jax.vmap(m)(X), y))(model)
        updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, value

    rng = np.random.default_rng(0)
    first = None
    for _ in range(60):
        idx = _pk(rng, ytr)
        model, state, value = step(model, state, jnp.asarray(Xtr[idx]), jnp.asarray(ytr[idx]))
        first = float(value) if first is None else first
    assert float(value) < first
    assert retrieval_scores(np.asarray(jax.vmap(model)(jnp.asarray(Xte))), yte)["map_at_r"] > \
        retrieval_scores(Xte, yte)["map_at_r"]
