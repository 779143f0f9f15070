"""Generalized lifted structure, tuplet margin, angular and instance losses, and the triplet anchor swap,
against NumPy loops written from the papers' formulas (tests/_deep_reference_extra.py): values and
gradients in float64, padded rows, degenerate batches, bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

from ... import _deep_reference_extra as R
from ._checks import grad_check, padded_matches

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0])  # class 3 has one row (no positive)
ROWS = list(range(len(Y)))


def _data(seed=0, n=len(Y), d=3):
    return 0.6 * np.random.default_rng(seed).normal(size=(n, d))


# name -> (jaxdml f(z, y, mask), reference ref(Z, y, rows))
CASES = {
    "generalized_lifted": (
        lambda z, y, m: deep.generalized_lifted_structure(z, y, pos_margin=0.1, neg_margin=0.9, mask=m),
        lambda Z, y, rows: R.generalized_lifted(Z, y, rows, "euclidean", 0.1, 0.9)),
    "generalized_lifted_cosine": (
        lambda z, y, m: deep.generalized_lifted_structure(z, y, pos_margin=0.8, neg_margin=0.2, distance="cosine",
                                                          mask=m),
        lambda Z, y, rows: R.generalized_lifted(Z, y, rows, "cosine", 0.8, 0.2)),
    "tuplet_margin": (lambda z, y, m: deep.tuplet_margin(z, y, margin=0.2, scale=8.0, mask=m),
                      lambda Z, y, rows: R.tuplet_margin(Z, y, rows, 0.2, 8.0)),
    "angular": (lambda z, y, m: deep.angular_loss(z, y, alpha=math.radians(45), mask=m),
                lambda Z, y, rows: R.angular(Z, y, rows, math.radians(45))),
    "triplet_swap": (lambda z, y, m: deep.triplet_margin(z, y, margin=0.3, swap=True, mask=m),
                     lambda Z, y, rows: R.triplet_swap(Z, y, rows, "euclidean", 0.3)),
    "triplet_swap_cosine": (lambda z, y, m: deep.triplet_margin(z, y, margin=0.3, swap=True, distance="cosine", mask=m),
                            lambda Z, y, rows: R.triplet_swap(Z, y, rows, "cosine", 0.3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_reference(name, x64):
    f, ref = CASES[name]
    Z = _data()
    y = jnp.asarray(Y)
    np.testing.assert_allclose(float(jax.jit(lambda z: f(z, y, None))(jnp.asarray(Z))), ref(Z, Y, ROWS), rtol=1e-10)
    grad_check(lambda z: f(z, y, None), lambda z: ref(z, Y, ROWS), Z)


@pytest.mark.parametrize("name", list(CASES))
def test_padded_rows_change_nothing(name, x64):
    f, _ = CASES[name]
    padded_matches(f, _data(), np.r_[Y[:7], [0, 1, 7]], 7)


@pytest.mark.parametrize("name", list(CASES))
def test_degenerate_batches(name, x64):
    """One class (no negatives), no positives, all rows equal: the reference's value, finite gradients.
    Equal rows have cosine 1, which the tuplet margin clips to 1 - eps before its arccos: an angle off by
    at most sqrt(2 eps), a term off by at most scale * sqrt(2 eps) (the atol of that case)."""
    f, ref = CASES[name]
    Z = _data(2)
    program = jax.jit(jax.value_and_grad(lambda z, y: f(z, y, None)))
    clip = 8.0 * math.sqrt(2 * np.finfo(float).eps)
    for labels, rows, atol in ((np.zeros(10, int), Z, 1e-12), (np.arange(10), Z, 1e-12), (Y, np.ones((10, 3)), clip)):
        v, g = program(jnp.asarray(rows), jnp.asarray(labels))
        assert np.all(np.isfinite(np.asarray(g)))
        np.testing.assert_allclose(float(v), ref(rows, labels, ROWS), rtol=1e-10, atol=atol)


def test_defaults_follow_pml(x64):
    """The defaults: generalized lifted m+ = 0, m- = 1 (Euclidean); tuplet margin 0.1 rad, scale 64;
    angular alpha = 40 degrees."""
    Z, y = _data(), jnp.asarray(Y)
    checks = [(deep.generalized_lifted_structure, R.generalized_lifted(Z, Y, ROWS, "euclidean", 0.0, 1.0)),
              (deep.tuplet_margin, R.tuplet_margin(Z, Y, ROWS, 0.1, 64.0)),
              (deep.angular_loss, R.angular(Z, Y, ROWS, math.radians(40)))]
    for f, want in checks:
        np.testing.assert_allclose(float(jax.jit(f)(jnp.asarray(Z), y)), want, rtol=1e-10)


def test_mined_pairs_and_triplets(x64):
    """Losses on mined tuples are the references on those tuples: triplet swap, tuplet margin and angular
    on batch-hard triplets; the pair losses on all pairs given as Pairs equal the default."""
    Z, y = _data(), jnp.asarray(Y)
    t = jax.jit(deep.batch_hard)(jnp.asarray(Z), y)
    trip = [(int(a), int(p), int(n)) for a, p, n, m in zip(*t) if m]
    f = jax.jit(lambda z: deep.triplet_margin(z, y, swap=True, triplets=t))
    np.testing.assert_allclose(float(f(jnp.asarray(Z))), R.triplet_swap(Z, Y, ROWS, "euclidean", 0.2, trip), rtol=1e-10)
    grad_check(lambda z: deep.triplet_margin(z, y, swap=True, triplets=t),
               lambda z: R.triplet_swap(z, Y, ROWS, "euclidean", 0.2, trip), Z)
    # batch-hard triplets as the tuplet margin's and the angular loss's tuples
    for fn, ref in ((lambda z, **kw: deep.tuplet_margin(z, y, scale=8.0, **kw),
                     lambda z: R.tuplet_margin(z, Y, ROWS, 0.1, 8.0, triplets=trip)),
                    (lambda z, **kw: deep.angular_loss(z, y, **kw),
                     lambda z: R.angular(z, Y, ROWS, math.radians(40), triplets=trip))):
        np.testing.assert_allclose(float(jax.jit(lambda z: fn(z, pairs=t))(jnp.asarray(Z))), ref(Z),  # noqa: B023
                                   rtol=1e-10)
        grad_check(lambda z: fn(z, pairs=t), ref, Z)  # noqa: B023
    allp = deep.all_pairs(y)
    for fn in (deep.generalized_lifted_structure, deep.tuplet_margin, deep.angular_loss):
        np.testing.assert_allclose(float(jax.jit(lambda z: fn(z, y, pairs=allp))(jnp.asarray(Z))),
                                   float(jax.jit(lambda z: fn(z, y))(jnp.asarray(Z))), rtol=1e-12)


def test_swap_only_lowers_the_negative_distance(x64):
    """With swap, each term is at least the plain term (min(d(a,n), d(p,n)) <= d(a,n))."""
    Z, y = jnp.asarray(_data(3)), jnp.asarray(Y)
    plain = deep.triplet_margin(Z, y, reduction="none")
    swapped = deep.triplet_margin(Z, y, swap=True, reduction="none")
    assert np.all(np.asarray(swapped) >= np.asarray(plain)) and float(jnp.sum(swapped - plain)) > 0


@pytest.mark.parametrize("labels", [None, np.array([5, 5, 2, 9, 2, 9, 9, 5])])
def test_instance_loss(labels, x64):
    """Without labels each row is its own class; with labels the target is the class's code (sorted
    distinct labels), as the authors' code and PML."""
    Z = _data(4, n=8, d=4)
    y = None if labels is None else jnp.asarray(labels)
    f = jax.jit(lambda z: deep.instance_loss(z, y, gamma=4.0))
    np.testing.assert_allclose(float(f(jnp.asarray(Z))), R.instance(Z, labels, 4.0), rtol=1e-10)
    grad_check(lambda z: deep.instance_loss(z, y, gamma=4.0), lambda z: R.instance(z, labels, 4.0), Z)
    v = deep.instance_loss(jnp.ones((8, 4)), y)  # all rows equal: log B for every row
    np.testing.assert_allclose(float(v), math.log(8), rtol=1e-12)


@pytest.mark.parametrize("call,error,match", [
    (lambda Z, y: deep.generalized_lifted_structure(Z, y, distance="l1"), ValueError, "distance must be one of"),
    (lambda Z, y: deep.generalized_lifted_structure(Z, y, neg_margin="x"), TypeError, "neg_margin"),
    (lambda Z, y: deep.tuplet_margin(Z, y, scale=0.0), ValueError, "scale must be > 0"),
    (lambda Z, y: deep.tuplet_margin(Z, y[:-1]), ValueError, "one label per row"),
    (lambda Z, y: deep.angular_loss(Z, None, pairs=deep.all_pairs(y)), ValueError, "needs labels"),
    (lambda Z, y: deep.angular_loss(Z, y, alpha=2.0), ValueError, "alpha must be <="),
    (lambda Z, y: deep.angular_loss(Z, y, alpha=math.pi / 2), ValueError, "alpha must be < pi/2"),
    (lambda Z, y: deep.instance_loss(Z, y[:-1]), ValueError, "one label per row"),
    (lambda Z, y: deep.instance_loss(Z, y, gamma=-1.0), ValueError, "gamma must be > 0"),
    (lambda Z, y: deep.triplet_margin(Z, y, swap=1), TypeError, "swap must be True or False"),
    (lambda Z, y: deep.tuplet_margin(Z, y, reduction="max"), ValueError, "reduction must be one of"),
])
def test_bad_input_raises_a_clear_error(call, error, match):
    Z, y = jnp.asarray(_data(), jnp.float32), jnp.asarray(Y)
    with pytest.raises(error, match=match):
        call(Z, y)

