"""Regularizers (Lp, zero mean, centre invariance, RegularFace) and VICReg against NumPy loops written
from the papers' formulas (tests/_deep_reference_extra.py): values and gradients in float64, padded
rows, degenerate inputs, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

from ... import _deep_reference_extra as R
from ._checks import grad_check

ROWS = list(range(10))


def _data(seed=0, shape=(10, 3)):
    return 0.6 * np.random.default_rng(seed).normal(size=shape)


EMBEDDING = {
    "lp2": (lambda z, m: deep.lp_regularizer(z, mask=m), lambda Z, rows: R.lp(Z, rows, 2, 1)),
    "lp3_power2": (lambda z, m: deep.lp_regularizer(z, p=3.0, power=2.0, mask=m), lambda Z, rows: R.lp(Z, rows, 3, 2)),
    "lp1": (lambda z, m: deep.lp_regularizer(z, p=1, mask=m), lambda Z, rows: R.lp(Z, rows, 1, 1)),
    "zero_mean": (lambda z, m: deep.zero_mean(z, mask=m), R.zero_mean),
    "vicreg": (lambda z, m: deep.vicreg(z, jnp.flip(z, 1) * 0.7 + 0.2, invariance=2.0, variance=3.0, covariance=0.5,
                                        eps=1e-3, mask=m),
               lambda Z, rows: R.vicreg(Z, np.flip(Z, 1) * 0.7 + 0.2, rows, 2.0, 3.0, 0.5, 1e-3)),
}


@pytest.mark.parametrize("name", list(EMBEDDING))
def test_embedding_regularizers(name, x64):
    f, ref = EMBEDDING[name]
    Z = _data()
    np.testing.assert_allclose(float(jax.jit(lambda z: f(z, None))(jnp.asarray(Z))), ref(Z, ROWS), rtol=1e-10)
    grad_check(lambda z: f(z, None), lambda z: ref(z, ROWS), Z)
    # padded rows: the value of the real rows, zero gradient on the padding
    mask = np.arange(10) < 7
    Zp = Z.copy()
    Zp[7:] = 40.0
    v, g = jax.jit(jax.value_and_grad(lambda z: f(z, jnp.asarray(mask))))(jnp.asarray(Zp))
    np.testing.assert_allclose(float(v), ref(Z, ROWS[:7]), rtol=1e-10)
    assert np.all(np.asarray(g[7:]) == 0.0)
    # zero rows: defined value and finite gradient
    v, g = jax.value_and_grad(lambda z: f(z, None))(jnp.zeros((10, 3)))
    assert np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g)))


def test_vicreg_defaults_and_identical_views(x64):
    """PML's defaults (25, 25, 1, 1e-4); two identical views have no invariance term."""
    Z = _data(3)
    R2 = _data(4)
    np.testing.assert_allclose(float(jax.jit(deep.vicreg)(jnp.asarray(Z), jnp.asarray(R2))),
                               R.vicreg(Z, R2, ROWS, 25.0, 25.0, 1.0, 1e-4), rtol=1e-10)
    same = float(deep.vicreg(jnp.asarray(Z), jnp.asarray(Z), variance=0.0, covariance=0.0))
    assert same == 0.0
    grad_check(lambda r: deep.vicreg(jnp.asarray(Z), r), lambda r: R.vicreg(Z, r, ROWS, 25.0, 25.0, 1.0, 1e-4), R2)


WEIGHT = {
    "center_invariant": (deep.center_invariant, R.center_invariant),
    "regular_face": (deep.regular_face, R.regular_face),
}


@pytest.mark.parametrize("name", list(WEIGHT))
def test_weight_regularizers(name, x64):
    f, ref = WEIGHT[name]
    W = _data(5, (5, 4))
    np.testing.assert_allclose(float(jax.jit(f)(jnp.asarray(W))), ref(W), rtol=1e-10)
    fixed = {"nearest_at": W} if name == "regular_face" else {}  # the nearest class is held in the gradient
    grad_check(f, lambda w: ref(w, **fixed), W)
    terms = f(jnp.asarray(W), reduction="none")
    assert terms.shape == (5,)
    np.testing.assert_allclose(float(f(jnp.asarray(W), reduction="sum")), float(jnp.sum(terms)), rtol=1e-12)


def test_weight_regularizers_degenerate(x64):
    """Equal norms: no centre-invariance penalty; two equal class weights: RegularFace's cosine 1;
    orthonormal weights: 0; finite gradients."""
    W = jnp.asarray(np.eye(3))
    assert float(deep.center_invariant(W)) == 0.0
    assert float(deep.regular_face(W)) == pytest.approx(0.0, abs=1e-15)
    twins = jnp.asarray([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(np.asarray(deep.regular_face(twins, reduction="none"))[:2], [1.0, 1.0], rtol=1e-12)
    for f in (deep.center_invariant, deep.regular_face):
        assert np.all(np.isfinite(np.asarray(jax.grad(f)(jnp.ones((3, 3))))))


@pytest.mark.parametrize("call,error,match", [
    (lambda: deep.lp_regularizer(jnp.ones((3, 2)), p=0.5), ValueError, "p must be >= 1"),
    (lambda: deep.lp_regularizer(jnp.ones((3, 2)), power=0), ValueError, "power must be > 0"),
    (lambda: deep.zero_mean(jnp.ones(3)), ValueError, "2-D"),
    (lambda: deep.center_invariant(jnp.ones(3)), ValueError, "2-D array"),
    (lambda: deep.regular_face(jnp.ones((1, 3))), ValueError, "at least 2 class weights"),
    (lambda: deep.regular_face(jnp.ones((3, 3), int)), TypeError, "float array"),
    (lambda: deep.vicreg(jnp.ones((4, 3)), jnp.ones((4, 2))), ValueError, "ref_emb must have the shape"),
    (lambda: deep.vicreg(jnp.ones((1, 3)), jnp.ones((1, 3))), ValueError, "at least 2 rows"),
    (lambda: deep.vicreg(jnp.ones((4, 3)), jnp.ones((4, 3)), eps=0.0), ValueError, "eps must be > 0"),
    (lambda: deep.vicreg(jnp.ones((4, 3)), jnp.ones((4, 3)), variance=-1.0), ValueError, "variance must be >= 0"),
])
def test_bad_input_raises_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()
