"""The margin-triplet, BatchEasyHard and distance-weighted miners against brute-force selections written
from their definitions (tests/_deep_reference_extra.py): the same tuples, padded rows never selected,
fixed shapes under jit; the distance-weighted sampler's probabilities and draws."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

from ... import _deep_reference_extra as R

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0, 1, 2])
N = len(Y)
MASK = np.ones(N, bool)
MASK[[4, 10]] = False  # two padded rows
ROWS = [i for i in range(N) if MASK[i]]


@pytest.fixture(scope="module")
def Z():
    return 0.6 * np.random.default_rng(0).normal(size=(N, 3))


def _triplet_set(t):
    return {(int(a), int(p), int(n)) for a, p, n, m in zip(*map(np.asarray, t)) if m}


def _pair_set(p, positive):
    return {(int(a), int(o)) for a, o, pos, m in zip(*map(np.asarray, p)) if m and bool(pos) == positive}


@pytest.mark.parametrize("distance", ["euclidean", "cosine"])
@pytest.mark.parametrize("kind", ["all", "hard", "semihard", "easy"])
def test_triplet_margin_miner(Z, kind, distance, x64):
    margin = 0.3 if distance == "euclidean" else 0.2
    f = jax.jit(functools.partial(deep.triplet_margin_miner, margin=margin, kind=kind, distance=distance))
    t = f(jnp.asarray(Z), jnp.asarray(Y), mask=jnp.asarray(MASK))
    assert t.anchor.shape == (N ** 3,)
    want = R.margin_triplets(Z, Y, ROWS, distance, margin, kind)
    assert want and _triplet_set(t) == want


def test_triplet_margin_miner_packs_and_feeds_the_loss(Z, x64):
    """With ``size`` the kept triplets come first in grid order, the first ``size`` of them if there are
    more; every semi-hard triplet in the triplet loss is the reference loss on them."""
    y, z = jnp.asarray(Y), jnp.asarray(Z)

    def mine(size=None):
        return jax.jit(lambda z: deep.triplet_margin_miner(z, y, kind="semihard", margin=0.3, size=size))(z)

    grid = mine()
    want = sorted(_triplet_set(grid), key=lambda t: (t[0] * N + t[1]) * N + t[2])
    big = mine(len(want) + 5)
    assert _triplet_set(big) == set(want) and int(jnp.sum(big.mask)) == len(want)
    small = mine(3)
    assert [tuple(int(v) for v in x) for x in zip(small.anchor, small.positive, small.negative)] == want[:3]
    loss = jax.jit(lambda z, t: deep.triplet_margin(z, y, margin=0.3, triplets=t))(z, grid)
    semi = jax.jit(lambda z: deep.semi_hard(z, y, margin=0.3))(z)  # one per positive pair, among every semi-hard
    assert _triplet_set(semi) <= set(want)
    terms = [0.3 + np.linalg.norm(Z[a] - Z[p]) - np.linalg.norm(Z[a] - Z[n]) for a, p, n in want]
    np.testing.assert_allclose(float(loss), np.mean(terms), rtol=1e-10)


STRATEGIES = [("easy", "semihard", None, None), ("hard", "hard", None, None), ("semihard", "hard", None, None),
              ("easy", "easy", None, None), ("hard", "semihard", None, None), ("semihard", "easy", None, None),
              ("hard", "hard", (0.2, 1.2), (0.5, 2.0))]


@pytest.mark.parametrize("distance", ["euclidean", "cosine"])
@pytest.mark.parametrize("pos,neg,pr,nr", STRATEGIES)
def test_batch_easy_hard_triplets(Z, pos, neg, pr, nr, distance, x64):
    if distance == "cosine" and pr is not None:
        pr, nr = (0.0, 0.9), (-0.5, 0.6)
    f = jax.jit(functools.partial(deep.batch_easy_hard, pos_strategy=pos, neg_strategy=neg, pos_range=pr, neg_range=nr,
                                  distance=distance))
    t = f(jnp.asarray(Z), jnp.asarray(Y), mask=jnp.asarray(MASK))
    assert isinstance(t, deep.Triplets) and t.anchor.shape == (N,)
    want = R.easy_hard(Z, Y, ROWS, distance, pos, neg, pr, nr)
    assert want and _triplet_set(t) == {(a, p, n) for a, (p, n) in want.items()}


def test_batch_easy_hard_with_all(Z, x64):
    """One side "all": every pair of that side plus the other side's chosen pair per anchor; both "all":
    every pair."""
    z, y, m = jnp.asarray(Z), jnp.asarray(Y), jnp.asarray(MASK)
    pos_pairs = {(a, p) for a in ROWS for p in ROWS if a != p and Y[a] == Y[p]}
    neg_pairs = {(a, n) for a in ROWS for n in ROWS if Y[a] != Y[n]}
    d = {(a, b): np.linalg.norm(Z[a] - Z[b]) for a in ROWS for b in ROWS}
    hard_neg = {(a, min((n for n in ROWS if Y[n] != Y[a]), key=lambda n: d[a, n])) for a in ROWS}
    easy_pos = {(a, min((p for p in ROWS if p != a and Y[p] == Y[a]), key=lambda p: d[a, p]))
                for a in ROWS if any(p != a and Y[p] == Y[a] for p in ROWS)}
    p = deep.batch_easy_hard(z, y, pos_strategy="all", neg_strategy="hard", mask=m)
    assert _pair_set(p, True) == pos_pairs and _pair_set(p, False) == hard_neg
    p = deep.batch_easy_hard(z, y, pos_strategy="easy", neg_strategy="all", mask=m)
    assert _pair_set(p, True) == easy_pos and _pair_set(p, False) == neg_pairs
    p = deep.batch_easy_hard(z, y, pos_strategy="all", neg_strategy="all", mask=m)
    assert _pair_set(p, True) == pos_pairs and _pair_set(p, False) == neg_pairs
    # a pair loss takes them
    v = deep.contrastive(z, y, pairs=p, mask=m)
    np.testing.assert_allclose(float(v), float(deep.contrastive(z, y, mask=m)), rtol=1e-12)


def test_batch_easy_hard_degenerate(x64):
    """One class: no negative, every slot empty; all rows equal: no semi-hard negative (none is farther)."""
    z = jnp.asarray(np.random.default_rng(1).normal(size=(6, 3)))
    assert not np.any(np.asarray(deep.batch_easy_hard(z, jnp.zeros(6, int)).mask))
    same = deep.batch_easy_hard(jnp.ones((6, 3)), jnp.arange(6) % 2)
    assert not np.any(np.asarray(same.mask))
    hard = deep.batch_easy_hard(jnp.ones((6, 3)), jnp.arange(6) % 2, pos_strategy="hard", neg_strategy="hard")
    assert np.all(np.asarray(hard.mask))


DIM = 5


@pytest.fixture(scope="module")
def Z5():
    return np.random.default_rng(3).normal(size=(N, DIM))


def test_distance_weighted_probabilities(Z5, x64):
    """The sampling distribution of each anchor is q(d)^-1 over its negatives closer than the cutoff
    (d clamped below at ``cutoff``), normalised."""
    probs = np.asarray(jax.jit(lambda z: deep.distance_weighted_probabilities(
        z, jnp.asarray(Y), cutoff=0.6, nonzero_loss_cutoff=1.5, mask=jnp.asarray(MASK)))(jnp.asarray(Z5)))
    want = R.distance_weighted_probs(Z5, Y, ROWS, 0.6, 1.5)
    assert len(want) >= 5
    for a in range(N):
        expected = np.zeros(N)
        for j, pj in want.get(a, {}).items():
            expected[j] = pj
        np.testing.assert_allclose(probs[a], expected, rtol=1e-10, atol=0.0)


def test_distance_weighted_draws(Z5, x64):
    """Draws are reproducible from the key, only on positive pairs of real rows, only of allowed
    negatives, and their frequencies over many keys match the probabilities (5 standard errors)."""
    z, y, m = jnp.asarray(Z5), jnp.asarray(Y), jnp.asarray(MASK)
    draw = jax.jit(lambda k: deep.distance_weighted(z, y, key=k, cutoff=0.6, nonzero_loss_cutoff=1.5, mask=m))
    t1, t2 = draw(jax.random.key(0)), draw(jax.random.key(0))
    assert all(np.array_equal(np.asarray(u), np.asarray(v)) for u, v in zip(t1, t2))
    assert not np.array_equal(np.asarray(t1.negative), np.asarray(draw(jax.random.key(1)).negative))
    want = R.distance_weighted_probs(Z5, Y, ROWS, 0.6, 1.5)
    valid_slots = {(a, p) for a in want for p in ROWS if p != a and Y[p] == Y[a]}
    assert {(a, p) for a, p, _ in _triplet_set(t1)} == valid_slots
    negs = np.asarray(jax.vmap(lambda k: draw(k).negative)(jax.random.split(jax.random.key(2), 400)))
    ok = np.asarray(t1.mask)
    checked = 0
    for a in want:
        slots = [i for i in range(N * N) if ok[i] and i // N == a]
        if not slots:  # an anchor without positives has no slot
            continue
        checked += 1
        drawn = negs[:, slots].reshape(-1)
        for j, pj in want[a].items():
            freq = np.mean(drawn == j)
            assert abs(freq - pj) <= 5 * np.sqrt(pj * (1 - pj) / drawn.size) + 1e-12, (a, j, freq, pj)
        assert set(np.unique(drawn).tolist()) <= set(want[a])
    assert checked >= 5


def test_distance_weighted_as_miner_of_the_margin_loss(Z5, x64):
    """The sampler plugs into the margin loss (its paper's partner) through ``miner=``."""
    z, y = jnp.asarray(Z5), jnp.asarray(Y)
    miner = functools.partial(deep.distance_weighted, key=jax.random.key(0))
    t = miner(z, y, mask=None, distance="euclidean", L=None)
    v = deep.margin_loss(z, y, miner=miner)
    np.testing.assert_allclose(float(v), float(deep.margin_loss(z, y, pairs=t)), rtol=1e-12)
    assert np.isfinite(float(v))


@pytest.mark.parametrize("call,error,match", [
    (lambda z, y: deep.triplet_margin_miner(z, y, kind="medium"), ValueError, "kind must be one of"),
    (lambda z, y: deep.triplet_margin_miner(z, y, size=0), ValueError, "size must be a positive int"),
    (lambda z, y: deep.batch_easy_hard(z, y, pos_strategy="semihard", neg_strategy="semihard"), ValueError,
     "cannot both"),
    (lambda z, y: deep.batch_easy_hard(z, y, pos_strategy="all", neg_strategy="semihard"), ValueError, "combined"),
    (lambda z, y: deep.batch_easy_hard(z, y, pos_strategy="hardest"), ValueError, "pos_strategy must be one of"),
    (lambda z, y: deep.batch_easy_hard(z, y, pos_range=(1.0, 0.5)), ValueError, "low <= high"),
    (lambda z, y: deep.batch_easy_hard(z, y, neg_range=0.5), ValueError, "pair"),
    (lambda z, y: deep.distance_weighted(z, y, key=jax.random.key(0), cutoff=1.5), ValueError, "below"),
    (lambda z, y: deep.distance_weighted(z, y, key=jax.random.key(0), nonzero_loss_cutoff=2.5), ValueError, "<= 2"),
    (lambda z, y: deep.distance_weighted(z, y, key=jax.random.key(0), distance="cosine"), ValueError, "Euclidean"),
    (lambda z, y: deep.distance_weighted(z, y[:-1], key=jax.random.key(0)), ValueError, "one label per row"),
])
def test_bad_input_raises_a_clear_error(Z, call, error, match):
    with pytest.raises(error, match=match):
        call(jnp.asarray(Z, jnp.float32), jnp.asarray(Y))
