"""Sub-center ArcFace, SoftTriple and the large-margin softmax (L-Softmax) against NumPy loops written
from the papers' formulas (tests/_deep_reference_extra.py; L-Softmax through the paper's polynomial in
cos theta, not an arccos): values and gradients (embeddings and class parameters) in float64, padded
rows, degenerate batches, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

from ... import _deep_reference_extra as R
from ._checks import grad_check, padded_matches

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0])
ROWS = list(range(len(Y)))


def _data(seed=0, shape=(10, 3)):
    return 0.6 * np.random.default_rng(seed).normal(size=shape)


CENTRES = _data(7, (4, 3, 3))  # 4 classes, 3 centres each
WEIGHTS = _data(8, (4, 3))

# name -> (f(z, y, params, mask), ref(Z, y, params, rows), params)
CASES = {
    "subcenter_arcface": (lambda z, y, c, m: deep.subcenter_arcface(z, y, c, scale=6.0, margin=0.4, mask=m),
                          lambda Z, y, c, rows: R.subcenter_arcface(Z, y, c, rows, 6.0, 0.4), CENTRES),
    "soft_triple": (lambda z, y, c, m: deep.soft_triple(z, y, c, la=5.0, gamma=0.2, margin=0.05, mask=m),
                    lambda Z, y, c, rows: R.soft_triple(Z, y, c, rows, 5.0, 0.2, 0.05), CENTRES),
    "soft_triple_reg": (lambda z, y, c, m: deep.soft_triple(z, y, c, la=5.0, gamma=0.2, margin=0.05, reg_weight=0.3,
                                                            mask=m),
                        lambda Z, y, c, rows: R.soft_triple(Z, y, c, rows, 5.0, 0.2, 0.05, 0.3), CENTRES),
    "large_margin_softmax": (lambda z, y, w, m: deep.large_margin_softmax(z, y, w, margin=3, scale=1.5, mask=m),
                             lambda Z, y, w, rows: R.l_softmax(Z, y, w, rows, 3, 1.5), WEIGHTS),
    "large_margin_softmax_4": (lambda z, y, w, m: deep.large_margin_softmax(z, y, w, mask=m),
                               lambda Z, y, w, rows: R.l_softmax(Z, y, w, rows, 4, 1.0), WEIGHTS),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_reference(name, x64):
    f, ref, P = CASES[name]
    Z, y = _data(), jnp.asarray(Y)
    got = jax.jit(lambda z, p: f(z, y, p, None))(jnp.asarray(Z), jnp.asarray(P))
    np.testing.assert_allclose(float(got), ref(Z, Y, P, ROWS), rtol=1e-10)
    grad_check(lambda z: f(z, y, jnp.asarray(P), None), lambda z: ref(z, Y, P, ROWS), Z)
    grad_check(lambda p: f(jnp.asarray(Z), y, p, None), lambda p: ref(Z, Y, p, ROWS), P)


@pytest.mark.parametrize("name", list(CASES))
def test_padded_rows_change_nothing(name, x64):
    f, _, P = CASES[name]
    padded_matches(lambda z, y, m: f(z, y, jnp.asarray(P), m), _data(), np.r_[Y[:7], [0, 1, 3]], 7)


@pytest.mark.parametrize("name", list(CASES))
def test_degenerate_batches(name, x64):
    """One class, all rows equal, every row on its own class's parameter (cos = 1): the reference's value,
    finite gradients. At cos = 1 the cosine is clipped to 1 - eps before its arccos: an angle off by at
    most sqrt(2 eps), a logit by at most scale * sqrt(2 eps) (the atol of that case; scale <= 6 here)."""
    f, ref, P = CASES[name]
    program = jax.jit(jax.value_and_grad(lambda z, y: f(z, y, jnp.asarray(P), None)))
    on_centre = (P[:, 0] if P.ndim == 3 else P)[Y] * 2.0
    for labels, rows, atol in ((np.zeros(10, int), _data(2), 1e-12), (Y, np.ones((10, 3)), 1e-12),
                               (Y, on_centre, 6.0 * np.sqrt(2 * np.finfo(float).eps))):
        v, g = program(jnp.asarray(rows), jnp.asarray(labels))
        assert np.all(np.isfinite(np.asarray(g)))
        np.testing.assert_allclose(float(v), ref(rows, labels, P, ROWS), rtol=1e-9, atol=atol)


def test_one_subcentre_is_arcface_and_one_margin_is_the_softmax(x64):
    """Sub-center ArcFace with K = 1 is ArcFace; L-Softmax with m = 1 is the plain softmax on x W^T."""
    Z, y = jnp.asarray(_data()), jnp.asarray(Y)
    W = jnp.asarray(WEIGHTS)
    sub = jax.jit(lambda z, w: deep.subcenter_arcface(z, y, w[:, None, :], scale=6.0, margin=0.4))
    arc = jax.jit(lambda z, w: deep.arcface(z, y, w, scale=6.0, margin=0.4))
    np.testing.assert_allclose(float(sub(Z, W)), float(arc(Z, W)), rtol=1e-12)
    logits = np.asarray(Z) @ WEIGHTS.T
    want = np.mean([np.log(np.sum(np.exp(row))) - row[c] for row, c in zip(logits, Y)])
    lsm = jax.jit(lambda z, w: deep.large_margin_softmax(z, y, w, margin=1))
    np.testing.assert_allclose(float(lsm(Z, W)), want, rtol=1e-12)


def test_soft_triple_defaults(x64):
    """PML's defaults: lambda = 20, gamma = 0.1, delta = 0.01, no regulariser."""
    Z, y = _data(), jnp.asarray(Y)
    np.testing.assert_allclose(float(jax.jit(deep.soft_triple)(jnp.asarray(Z), y, jnp.asarray(CENTRES))),
                               R.soft_triple(Z, Y, CENTRES, ROWS, 20.0, 0.1, 0.01), rtol=1e-10)


@pytest.mark.parametrize("call,error,match", [
    (lambda Z, y: deep.subcenter_arcface(Z, y, jnp.ones((4, 3))), ValueError, r"n_classes, n_centres"),
    (lambda Z, y: deep.soft_triple(Z, y, jnp.ones((3, 2, 3))), ValueError, "class indices"),
    (lambda Z, y: deep.soft_triple(Z, y, jnp.ones((4, 2, 5))), ValueError, "n_classes, n_centres, 3"),
    (lambda Z, y: deep.soft_triple(Z, y, jnp.ones((4, 2, 3), int)), TypeError, "float array"),
    (lambda Z, y: deep.soft_triple(Z, y, jnp.ones((4, 2, 3)), gamma=0.0), ValueError, "gamma must be > 0"),
    (lambda Z, y: deep.large_margin_softmax(Z, y, jnp.ones((4, 3)), margin=2.5), ValueError, "positive int"),
    (lambda Z, y: deep.large_margin_softmax(Z, y, jnp.ones((4, 2))), ValueError, "weights must have shape"),
    (lambda Z, y: deep.large_margin_softmax(Z, y.astype(float), jnp.ones((4, 3))), TypeError, "labels must be integer"),
])
def test_bad_input_raises_a_clear_error(call, error, match):
    Z, y = jnp.asarray(_data(), jnp.float32), jnp.asarray(Y)
    with pytest.raises(error, match=match):
        call(Z, y)
