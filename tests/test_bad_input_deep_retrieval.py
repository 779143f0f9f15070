"""Bad and extreme input on the newest surface: the deep losses, miners, index tuples and retrieval.

Each class of failure is checked from its definition: distances ranked far from the origin and at
extreme scales equal a float64 brute force; labels of any type equal their integer codes; a NaN in a
real row makes the loss NaN; padded rows reach neither the value nor a gradient, whatever they hold;
index tuples out of range, masks and ``L`` that are not what they say get an error naming them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

import jaxdml
from jaxdml import retrieval
from jaxdml.losses import deep


def _batch(n=12, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(np.float32), np.arange(n) % 3


def _brute_p_at_1(X, y, distance):
    """Precision@1 by a float64 brute force from the differences (or normalised rows)."""
    X = np.asarray(X, np.float64)
    if distance == "cosine":
        Xs = X / np.abs(X).max(axis=1, keepdims=True)
        U = Xs / np.linalg.norm(Xs, axis=1, keepdims=True)
        D = -(U @ U.T)
    else:
        D = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    return float(np.mean(y[np.argmin(D, axis=1)] == y))


# --------------------------------------------------------------------------- one distance for ranking
@pytest.mark.parametrize("data", ["iris", "wine"])
@pytest.mark.parametrize("transform,distance", [
    (lambda X: X + 1e4, "euclidean"), (lambda X: X - 3e5, "sq_euclidean"), (lambda X: X * 1e-25, "euclidean"),
    (lambda X: X * 1e20, "euclidean"), (lambda X: X * 1e-25, "cosine"), (lambda X: X * 1e20, "cosine"),
    (lambda X: (X + 1e4) * 1e-20, "euclidean"),
], ids=["shift", "shift-sq", "tiny", "huge", "tiny-cos", "huge-cos", "shift-tiny"])
def test_retrieval_ranks_as_a_float64_brute_force(data, transform, distance):
    X, y = (load_iris if data == "iris" else load_wine)(return_X_y=True)
    X = X / X.max(axis=0)
    Xt = transform(X)
    assert retrieval.precision_at_1(Xt, y, distance=distance) == pytest.approx(_brute_p_at_1(Xt, y, distance),
                                                                               abs=1.5 / len(y))
    assert retrieval.precision_at_1(Xt, y, distance=distance) == pytest.approx(
        retrieval.precision_at_1(X, y, distance=distance), abs=1.5 / len(y))


@pytest.mark.parametrize("L,match", [(np.full((2, 4), np.nan), "NaN"), (np.full((2, 4), np.inf), "NaN or infinite"),
                                     (np.ones((2, 3)), "shape"), (np.ones(4), "shape"), ("abc", "")])
def test_retrieval_checks_L(L, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises((ValueError, TypeError), match=match):
        retrieval.retrieval_scores(X, y, L=L)


def test_classifier_and_kernel_distances_far_from_the_origin():
    X, y = load_iris(return_X_y=True)
    X = X / X.max(axis=0)
    far = X + 1e4
    a = jaxdml.NCMCClassifier(centroids_num=2, random_state=0).fit(X, y)
    b = jaxdml.NCMCClassifier(centroids_num=2, random_state=0).fit(far, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(far))
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(far), atol=1e-6)
    from jaxdml.kernels import kernel_matrix
    exact = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
    for offset in (0.0, 1e8):  # float64 rows at 1e8: the expansion |a|^2 + |b|^2 - 2 a.b alone keeps no digit
        K = kernel_matrix(X + offset, kernel="rbf", gamma=1.0)
        np.testing.assert_allclose(K, exact, atol=1e-7)


@pytest.mark.parametrize("loss", [
    lambda Z, y: deep.contrastive(Z, y), lambda Z, y: deep.triplet_margin(Z, y, margin=0.5),
    lambda Z, y: deep.lifted_structure(Z, y), lambda Z, y: deep.margin_loss(Z, y),
    lambda Z, y: deep.lmnn(Z, y, n_neighbors=2), lambda Z, y: deep.nca(Z, y),
    lambda Z, y: deep.triplet_margin(Z, y, triplets=deep.batch_hard(Z, y)),
], ids=["contrastive", "triplet", "lifted", "margin", "lmnn", "nca", "batch-hard"])
def test_deep_euclidean_losses_do_not_move_with_the_origin(loss):
    Z, y = _batch()
    ref = float(loss(jnp.asarray(Z), y))
    far = float(loss(jnp.asarray(Z + 1e4), y))  # float32 rows at 1e4 carry ~1e-3 of their spread
    assert far == pytest.approx(ref, rel=2e-2, abs=2e-2)


def test_deep_cosine_at_extreme_scales():
    Z, y = _batch()
    for scale in (1e-25, 1e20):
        for loss in (lambda Z: deep.ntxent(Z, y), lambda Z: deep.contrastive(Z, y, distance="cosine")):
            assert float(loss(jnp.asarray(Z * scale))) == pytest.approx(float(loss(jnp.asarray(Z))), rel=1e-5)
    V = np.asarray(deep.pairwise(jnp.asarray(Z * 1e-25)))  # euclidean distances of tiny rows: scaled
    np.testing.assert_allclose(V * 1e25, np.asarray(deep.pairwise(jnp.asarray(Z))), rtol=1e-4, atol=2e-3)


# --------------------------------------------------------------------------- labels, masks, tuples
LABEL_LOSSES = {
    "contrastive": deep.contrastive,
    "triplet": deep.triplet_margin,
    "supcon": deep.supervised_contrastive,
    "multi_similarity": deep.multi_similarity,
    "nca": deep.nca,
    "batch_hard": lambda Z, y, **kw: deep.triplet_margin(Z, y, triplets=deep.batch_hard(Z, y, **kw), **kw),
}


@pytest.mark.parametrize("name", sorted(LABEL_LOSSES))
@pytest.mark.parametrize("kind", ["str", "bool-ish", "float", "object"])
def test_labels_of_any_type_equal_their_codes(name, kind):
    Z, y = _batch()
    other = {"str": np.array(["a", "b", "c"])[y], "bool-ish": y.astype(float) * 2.5 - 1,
             "float": y.astype(np.float64), "object": np.array(["x", 3, 2.5], dtype=object)[y]}[kind]
    if kind == "object":
        with pytest.raises(TypeError, match="labels must be comparable"):
            LABEL_LOSSES[name](jnp.asarray(Z), other)
        return
    got = LABEL_LOSSES[name](jnp.asarray(Z), other)
    ref = LABEL_LOSSES[name](jnp.asarray(Z), y)
    np.testing.assert_allclose(float(got), float(ref), rtol=1e-6)
    pairs = deep.all_pairs(other)
    np.testing.assert_array_equal(np.asarray(pairs.positive), np.asarray(deep.all_pairs(y).positive))


def test_labels_that_index_parameters_must_be_integers():
    Z, y = _batch()
    P = jnp.ones((3, 4))
    with pytest.raises(TypeError, match="labels must be integer class indices"):
        deep.proxy_nca(jnp.asarray(Z), np.array(["a", "b", "c"])[y], P)
    with pytest.raises(TypeError, match="labels must be integers"):
        jax.jit(deep.contrastive)(jnp.asarray(Z), jnp.asarray(y, jnp.float32))
    with pytest.raises(ValueError, match="NaN"):
        deep.contrastive(jnp.asarray(Z), np.where(y == 0, np.nan, y.astype(float)))


@pytest.mark.parametrize("mask,error,match", [
    (np.array(["yes"] * 12), TypeError, "mask must be boolean"), (np.full(12, 2.0), ValueError, "0/1"),
    (np.ones(11, bool), ValueError, "mask must have shape"), (np.full(12, -1), ValueError, "0/1"),
])
def test_masks_are_checked(mask, error, match):
    Z, y = _batch()
    with pytest.raises(error, match=match):
        deep.contrastive(jnp.asarray(Z), y, mask=mask)
    with pytest.raises(error, match=match):
        deep.batch_hard(jnp.asarray(Z), y, mask=mask)


def test_a_01_mask_equals_a_boolean_mask():
    Z, y = _batch()
    m = np.arange(12) < 9
    for loss in LABEL_LOSSES.values():
        np.testing.assert_allclose(float(loss(jnp.asarray(Z), y, mask=m.astype(np.float32))),
                                   float(loss(jnp.asarray(Z), y, mask=m)), rtol=1e-7)


@pytest.mark.parametrize("make,match", [
    (lambda n: deep.Pairs(jnp.array([0, 99]), jnp.array([1, 2]), jnp.array([True, False]), jnp.array([True, True])),
     r"pairs.anchor must hold row indices in \[0, 11\]"),
    (lambda n: deep.Pairs(jnp.array([0, 1]), jnp.array([1, -1]), jnp.array([True, False]), jnp.array([True, True])),
     r"pairs.other must hold row indices"),
    (lambda n: deep.Pairs(jnp.array([0, 1]), jnp.array([1, 2]), jnp.array([True, False]), jnp.array([2, 1])),
     "pairs.mask must be boolean or 0/1"),
])
def test_hand_built_pairs_are_range_checked(make, match):
    Z, y = _batch()
    with pytest.raises(ValueError, match=match):
        deep.contrastive(jnp.asarray(Z), y, pairs=make(12))


def test_hand_built_triplets_and_lmnn_targets_are_range_checked():
    Z, y = _batch()
    t = deep.Triplets(jnp.array([0, 1]), jnp.array([3, 4]), jnp.array([1, 99]), jnp.array([True, True]))
    with pytest.raises(ValueError, match=r"triplets.negative must hold row indices in \[0, 11\]"):
        deep.triplet_margin(jnp.asarray(Z), y, triplets=t)
    targets = np.tile(np.array([[3, 6]]), (12, 1))
    targets[5, 1] = 99
    with pytest.raises(ValueError, match=r"targets must hold row indices in \[0, 11\]"):
        deep.lmnn(jnp.asarray(Z), y, targets=targets)
    targets[5, 1] = -1
    with pytest.raises(ValueError, match=r"targets must hold row indices"):
        deep.lmnn(jnp.asarray(Z), y, targets=targets)


# --------------------------------------------------------------------------- NaN rows, padded rows
ALL_LOSSES = {
    **LABEL_LOSSES,
    "lifted": deep.lifted_structure,
    "margin": deep.margin_loss,
    "ntxent": deep.ntxent,
    "npair": deep.npair,
    "circle": deep.circle,
    "lmnn": lambda Z, y, **kw: deep.lmnn(Z, y, n_neighbors=2, **kw),
    "proxy_nca": lambda Z, y, **kw: deep.proxy_nca(Z, y, jnp.eye(3, 4), **kw),
    "proxy_anchor": lambda Z, y, **kw: deep.proxy_anchor(Z, y, jnp.eye(3, 4), **kw),
    "arcface": lambda Z, y, **kw: deep.arcface(Z, y, jnp.eye(3, 4), **kw),
}


@pytest.mark.parametrize("name", sorted(ALL_LOSSES))
def test_a_nan_in_a_real_row_is_a_nan_loss(name):
    Z, y = _batch()
    Z[4, 2] = np.nan
    assert np.isnan(float(ALL_LOSSES[name](jnp.asarray(Z), y)))


@pytest.mark.parametrize("name", sorted(ALL_LOSSES))
@pytest.mark.parametrize("junk", [np.nan, np.inf, 1e30])
def test_padded_rows_reach_neither_value_nor_gradient(name, junk):
    Z, y = _batch()
    mask = np.arange(12) < 9
    clean = Z.copy()
    clean[~mask] = 0.0
    dirty = Z.copy()
    dirty[~mask] = junk
    loss = ALL_LOSSES[name]
    v_clean, g_clean = jax.value_and_grad(lambda Z: loss(Z, y, mask=mask))(jnp.asarray(clean))
    v_dirty, g_dirty = jax.value_and_grad(lambda Z: loss(Z, y, mask=mask))(jnp.asarray(dirty))
    assert np.isfinite(float(v_dirty)) and float(v_dirty) == pytest.approx(float(v_clean), rel=1e-6, abs=1e-7)
    g_dirty = np.asarray(g_dirty)
    assert np.all(np.isfinite(g_dirty)) and np.all(g_dirty[~mask] == 0)
    np.testing.assert_allclose(g_dirty[mask], np.asarray(g_clean)[mask], rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- hyper-parameters and L
@pytest.mark.parametrize("call,error,match", [
    (lambda Z, y: deep.triplet_margin(Z, y, margin=-0.1), ValueError, "margin must be >= 0"),
    (lambda Z, y: deep.lifted_structure(Z, y, margin=-1.0), ValueError, "margin must be >= 0"),
    (lambda Z, y: deep.margin_loss(Z, y, nu=-1.0), ValueError, "nu must be >= 0"),
    (lambda Z, y: deep.margin_loss(Z, y, beta=np.array([1.0, np.nan, 1.0])), ValueError, "beta must be finite"),
    (lambda Z, y: deep.lmnn(Z, y, margin=0.0), ValueError, "margin must be > 0"),
    (lambda Z, y: deep.npair(Z, y, l2_reg=np.array([1.0, 2.0])), TypeError, "l2_reg must be a single real number"),
    (lambda Z, y: deep.ntxent(Z, y, temperature=[0.1]), TypeError, "temperature must be a single real number"),
    (lambda Z, y: deep.arcface(Z, y, jnp.eye(3, 4), margin=-0.5), ValueError, "margin must be >= 0"),
    (lambda Z, y: deep.sphereface(Z, y, jnp.eye(3, 4), margin=0.5), ValueError, "margin must be >= 1"),
    (lambda Z, y: deep.semi_hard(Z, y, margin=-1.0), ValueError, "margin must be >= 0"),
    (lambda Z, y: deep.contrastive(Z, y, L=np.full((2, 4), np.nan)), ValueError, "L contains NaN"),
    (lambda Z, y: deep.batch_hard(Z, y, L=np.array([["a"] * 4])), TypeError, "L must be a real matrix"),
])
def test_hyper_parameters_and_L_are_checked(call, error, match):
    Z, y = _batch()
    with pytest.raises(error, match=match):
        call(jnp.asarray(Z), y)


def test_per_class_beta_and_traced_values_still_work():
    Z, y = _batch()
    v = deep.margin_loss(jnp.asarray(Z), y, beta=jnp.array([1.0, 1.2, 0.8]))
    assert np.isfinite(float(v))
    g = jax.grad(lambda m: deep.triplet_margin(jnp.asarray(Z), y, margin=m))(0.3)  # traced: not checked
    assert np.isfinite(float(g))
