"""What every further deep loss shares with the others: a learned map ``L`` (the value is the loss of the
mapped rows, the gradient in ``L`` matches central differences of the NumPy reference), ``reduction="none"``
terms that sum to ``reduction="sum"``, and jit/vmap."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

from ... import _deep_reference_extra as R
from ._checks import grad_check

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0])
ROWS = list(range(len(Y)))
Z0 = 0.6 * np.random.default_rng(0).normal(size=(10, 3))
CENTRES = 0.6 * np.random.default_rng(7).normal(size=(4, 2, 2))  # in the mapped space (k = 2)
WEIGHTS = 0.6 * np.random.default_rng(8).normal(size=(4, 2))
L0 = np.eye(2, 3) + 0.3 * np.random.default_rng(4).normal(size=(2, 3))

# name -> (f(z, y, L=..., reduction=...), reference of the mapped rows ref(Zm, y))
CASES = {
    "generalized_lifted_structure": (deep.generalized_lifted_structure,
                                     lambda Z, y: R.generalized_lifted(Z, y, ROWS, "euclidean", 0.0, 1.0)),
    "tuplet_margin": (lambda z, y, **kw: deep.tuplet_margin(z, y, scale=8.0, **kw),
                      lambda Z, y: R.tuplet_margin(Z, y, ROWS, 0.1, 8.0)),
    "angular_loss": (deep.angular_loss, lambda Z, y: R.angular(Z, y, ROWS, math.radians(40))),
    "instance_loss": (lambda z, y, **kw: deep.instance_loss(z, y, gamma=4.0, **kw), lambda Z, y: R.instance(Z, y, 4.0)),
    "fast_ap": (deep.fast_ap, lambda Z, y: R.fast_ap(Z, y, ROWS, 10)),
    "smooth_ap": (lambda z, y, **kw: deep.smooth_ap(z, y, temperature=0.2, **kw),
                  lambda Z, y: R.smooth_ap(Z, y, ROWS, 0.2)),
    "triplet_swap": (lambda z, y, **kw: deep.triplet_margin(z, y, swap=True, **kw),
                     lambda Z, y: R.triplet_swap(Z, y, ROWS, "euclidean", 0.2)),
}


def _class_params(P):
    """The class parameters given to the loss in the input space (d = 3): ``P`` of the mapped space lifted
    by the pseudo-inverse of L0, so that ``L0`` maps them back to ``P`` exactly."""
    return P @ np.linalg.pinv(L0).T


CLASS_CASES = {
    "subcenter_arcface": (lambda z, y, **kw: deep.subcenter_arcface(z, y, _class_params(CENTRES), scale=6.0, **kw),
                          lambda Z, y: R.subcenter_arcface(Z, y, CENTRES, ROWS, 6.0, 0.5)),
    "soft_triple": (lambda z, y, **kw: deep.soft_triple(z, y, _class_params(CENTRES), la=5.0, **kw),
                    lambda Z, y: R.soft_triple(Z, y, CENTRES, ROWS, 5.0, 0.1, 0.01)),
    "large_margin_softmax": (lambda z, y, **kw: deep.large_margin_softmax(z, y, _class_params(WEIGHTS), **kw),
                             lambda Z, y: R.l_softmax(Z, y, WEIGHTS, ROWS, 4, 1.0)),
}
ALL = {**CASES, **CLASS_CASES}


@pytest.mark.parametrize("name", list(ALL))
def test_learned_map_L(name, x64):
    f, ref = ALL[name]
    y = jnp.asarray(Y)
    got = jax.jit(lambda z, m: f(z, y, L=m))(jnp.asarray(Z0), jnp.asarray(L0))
    np.testing.assert_allclose(float(got), ref(Z0 @ L0.T, Y), rtol=1e-9)
    if name in CASES:  # the class parameters of the others are lifted through L0 itself
        grad_check(lambda m: f(jnp.asarray(Z0), y, L=m), lambda m: ref(Z0 @ m.T, Y), L0)


@pytest.mark.parametrize("name", list(ALL))
def test_none_terms_sum_to_sum(name, x64):
    f, _ = ALL[name]
    z, y = jnp.asarray(Z0), jnp.asarray(Y)
    terms = jax.jit(lambda z: f(z, y, reduction="none"))(z)
    total = jax.jit(lambda z: f(z, y, reduction="sum"))(z)
    np.testing.assert_allclose(float(jnp.sum(terms)), float(total), rtol=1e-12)
    top = float(jax.jit(lambda z: f(z, y, reduction=lambda v, w: jnp.max(jnp.where(w > 0, v, -jnp.inf))))(z))
    assert top == pytest.approx(float(jnp.max(jnp.where(terms != 0, terms, -jnp.inf))), rel=1e-12)


def test_jit_and_vmap(x64):
    """vmap over a stack of batches gives each batch's value."""
    y = jnp.asarray(Y)
    Z = jnp.asarray(Z0)
    for f in (deep.fast_ap, deep.tuplet_margin, deep.generalized_lifted_structure):
        one = jax.jit(lambda z: f(z, y))  # noqa: B023 - used in this iteration only
        batched = jax.jit(jax.vmap(one))(jnp.stack([Z, 2.0 * Z + 0.1]))
        np.testing.assert_allclose(np.asarray(batched), [float(one(Z)), float(one(2.0 * Z + 0.1))], rtol=1e-10)
