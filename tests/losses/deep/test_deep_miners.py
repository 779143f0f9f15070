"""Miners of jaxdml.losses.deep against brute-force selections written from their definitions
(tests/_deep_reference.py): the same tuples, padded rows never selected, fixed shapes under jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

from ... import _deep_reference as R

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0, 1, 2])
N = len(Y)
MASK = np.ones(N, bool)
MASK[[4, 10]] = False  # two padded rows
ROWS = [i for i in range(N) if MASK[i]]
DISTANCES = ["euclidean"] + [pytest.param(d, marks=pytest.mark.slow) for d in ("sq_euclidean", "cosine", "dot")]


@pytest.fixture(scope="module")
def Z():
    return 0.6 * np.random.default_rng(0).normal(size=(N, 3))


def _triplet_set(t):
    return {(int(a), int(p), int(n)) for a, p, n, m in zip(*map(np.asarray, t)) if m}


def _pair_set(p, positive=None):
    return {(int(a), int(o)) for a, o, pos, m in zip(*map(np.asarray, p))
            if m and (positive is None or pos == positive)}


@pytest.mark.parametrize("distance", DISTANCES)
def test_batch_hard(Z, distance, x64):
    t = deep.batch_hard(jnp.asarray(Z), jnp.asarray(Y), distance=distance, mask=jnp.asarray(MASK))
    assert t.anchor.shape == (N,)
    want = R.batch_hard(Z, Y, ROWS, distance)
    assert _triplet_set(t) == {(a, p, n) for a, (p, n) in want.items()}


@pytest.mark.parametrize("distance", DISTANCES)
def test_batch_all_and_its_margin(Z, distance, x64):
    Zj, yj, mj = jnp.asarray(Z), jnp.asarray(Y), jnp.asarray(MASK)
    everything = deep.batch_all(Zj, yj, distance=distance, mask=mj)
    assert everything.anchor.shape == (N ** 3,)
    assert _triplet_set(everything) == set(R.batch_all(Z, Y, ROWS, distance))
    margin = 0.3 if distance != "dot" else 0.1
    active = R.batch_all(Z, Y, ROWS, distance, margin)
    assert 0 < len(active) < len(everything.mask)
    assert _triplet_set(deep.batch_all(Zj, yj, margin=margin, distance=distance, mask=mj)) == set(active)
    # a fixed number of slots: the active triplets first, in grid order
    packed = deep.batch_all(Zj, yj, margin=margin, size=50, distance=distance, mask=mj)
    assert packed.anchor.shape == (50,)
    assert _triplet_set(packed) == set(sorted(active)[:50])


@pytest.mark.parametrize("distance", DISTANCES)
def test_semi_hard(Z, distance, x64):
    margin = 0.5 if distance != "dot" else 0.2
    t = deep.semi_hard(jnp.asarray(Z), jnp.asarray(Y), margin=margin, distance=distance, mask=jnp.asarray(MASK))
    assert t.anchor.shape == (N * N,)
    want = R.semi_hard(Z, Y, ROWS, distance, margin)
    assert len(want) > 0
    assert _triplet_set(t) == {(a, p, n) for (a, p), n in want.items()}


@pytest.mark.parametrize("distance", ["cosine"] + [pytest.param(d, marks=pytest.mark.slow)
                                                  for d in ("euclidean", "sq_euclidean", "dot")])
def test_multi_similarity_pairs(Z, distance, x64):
    eps = 0.1
    p = deep.multi_similarity_pairs(jnp.asarray(Z), jnp.asarray(Y), epsilon=eps, distance=distance,
                                    mask=jnp.asarray(MASK))
    want = R.ms_pairs(Z, Y, ROWS, distance, eps)
    assert 0 < len(want) < len(R.label_pairs(Y, ROWS))
    assert _pair_set(p) == want
    assert all(bool(pos) == (Y[a] == Y[o]) for a, o, pos, m in zip(*map(np.asarray, p)) if m)


@pytest.mark.parametrize("distance", DISTANCES)
def test_pair_margin(Z, distance, x64):
    mp, mn = dict(euclidean=(0.6, 1.0), sq_euclidean=(0.4, 1.0), cosine=(0.5, 0.0), dot=(0.2, -0.1))[distance]
    p = deep.pair_margin(jnp.asarray(Z), jnp.asarray(Y), pos_margin=mp, neg_margin=mn, distance=distance,
                         mask=jnp.asarray(MASK))
    want = R.pair_margin(Z, Y, ROWS, distance, mp, mn)
    assert 0 < len(want)
    assert _pair_set(p) == want


def test_learned_map_and_jit(Z, x64):
    """A miner under L mines the mapped rows; under jit it returns the same fixed-size tuples."""
    L = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -2.0]])
    Zj, yj = jnp.asarray(Z), jnp.asarray(Y)
    t = deep.batch_hard(Zj, yj, L=jnp.asarray(L))
    assert _triplet_set(t) == {(a, p, n) for a, (p, n) in R.batch_hard(Z @ L.T, Y, list(range(N)), "euclidean").items()}
    for miner in (deep.batch_hard, deep.semi_hard, deep.multi_similarity_pairs, deep.pair_margin, deep.batch_all):
        eager = miner(Zj, yj)
        jitted = jax.jit(miner)(Zj, yj)
        for a, b in zip(eager, jitted):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_degenerate_batches(Z, x64):
    """One class: no triplet, no negative pair; singletons: no positive pair. Masks all False, no error."""
    Zj = jnp.asarray(Z)
    for y in (np.zeros(N, int), np.arange(N)):
        yj = jnp.asarray(y)
        for miner in (deep.batch_hard, deep.semi_hard, deep.batch_all):
            assert not np.any(np.asarray(miner(Zj, yj).mask))
        p = deep.multi_similarity_pairs(Zj, yj)
        assert not np.any(np.asarray(p.mask))  # an anchor without positives (or negatives) keeps nothing
    assert not np.any(np.asarray(deep.pair_margin(Zj, jnp.asarray(np.arange(N)), neg_margin=-1.0).mask))


def test_all_pairs_and_triplets(x64):
    y = jnp.asarray(Y)
    pairs = deep.all_pairs(y, mask=jnp.asarray(MASK))
    assert {(a, o) for a, o, _ in R.label_pairs(Y, ROWS)} == _pair_set(pairs)
    assert {(a, o) for a, o, pos in R.label_pairs(Y, ROWS) if pos} == _pair_set(pairs, positive=True)
    assert _triplet_set(deep.all_triplets(y, mask=jnp.asarray(MASK))) == set(R.label_triplets(Y, ROWS))


def test_bad_input(Z):
    Zj, yj = jnp.asarray(Z, jnp.float32), jnp.asarray(Y)
    with pytest.raises(ValueError, match="size must be a positive int"):
        deep.batch_all(Zj, yj, size=0)
    with pytest.raises(ValueError, match="distance must be one of"):
        deep.batch_hard(Zj, yj, distance="l1")
    with pytest.raises(ValueError, match="one label per row"):
        deep.semi_hard(Zj, yj[:3])
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        deep.multi_similarity_pairs(Zj, yj, epsilon="big")
