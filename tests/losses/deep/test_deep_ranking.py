"""FastAP and Smooth-AP against NumPy loops written from the papers' formulas
(tests/_deep_reference_extra.py): values and gradients in float64, padded rows, degenerate batches,
the exact AP they approximate, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from jaxdml.losses import deep

from ... import _deep_reference_extra as R
from ._checks import grad_check, padded_matches

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0])
ROWS = list(range(len(Y)))

CASES = {
    "fast_ap": (lambda z, y, m: deep.fast_ap(z, y, num_bins=6, mask=m), lambda Z, y, rows: R.fast_ap(Z, y, rows, 6)),
    "smooth_ap": (lambda z, y, m: deep.smooth_ap(z, y, temperature=0.1, mask=m),
                  lambda Z, y, rows: R.smooth_ap(Z, y, rows, 0.1)),
    "smooth_ap_anchor": (lambda z, y, m: deep.smooth_ap(z, y, temperature=0.1, include_anchor=True, mask=m),
                         lambda Z, y, rows: R.smooth_ap(Z, y, rows, 0.1, include_anchor=True)),
}


def _data(seed=0, n=10, d=3):
    return 0.6 * np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("name", list(CASES))
def test_matches_reference(name, x64):
    f, ref = CASES[name]
    Z, y = _data(), jnp.asarray(Y)
    np.testing.assert_allclose(float(jax.jit(lambda z: f(z, y, None))(jnp.asarray(Z))), ref(Z, Y, ROWS), rtol=1e-10)
    grad_check(lambda z: f(z, y, None), lambda z: ref(z, Y, ROWS), Z)


@pytest.mark.parametrize("name", list(CASES))
def test_padded_rows_change_nothing(name, x64):
    f, _ = CASES[name]
    padded_matches(f, _data(), np.r_[Y[:7], [0, 1, 7]], 7)


@pytest.mark.parametrize("name", list(CASES))
def test_degenerate_batches(name, x64):
    """No positives anywhere: no term (0); one class: AP 1 (loss 0 for Smooth-AP; FastAP's histogram AP
    is 1 as well); all rows equal: the reference's value; finite gradients throughout."""
    f, ref = CASES[name]
    Z = _data(2)
    program = jax.jit(jax.value_and_grad(lambda z, y: f(z, y, None)))
    for labels, rows in ((np.arange(10), Z), (np.zeros(10, int), Z), (Y, np.ones((10, 3)))):
        v, g = program(jnp.asarray(rows), jnp.asarray(labels))
        assert np.all(np.isfinite(np.asarray(g)))
        np.testing.assert_allclose(float(v), ref(rows, labels, ROWS), rtol=1e-10, atol=1e-12)
    assert float(program(jnp.asarray(Z), jnp.zeros(10, int))[0]) == pytest.approx(0.0, abs=1e-12)
    if name != "smooth_ap_anchor":  # there each row is its own positive: AP < 1 unless it ranks first
        assert float(program(jnp.asarray(Z), jnp.arange(10))[0]) == 0.0


def test_smooth_ap_tends_to_the_exact_ap(x64):
    """As the temperature goes to 0, 1 - Smooth-AP's per-anchor term is the exact average precision of
    the anchor's ranking by cosine similarity (scikit-learn's average_precision_score)."""
    Z, y = _data(5, n=12, d=4), np.arange(12) % 3
    Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    terms = np.asarray(deep.smooth_ap(jnp.asarray(Z), jnp.asarray(y), temperature=1e-6, reduction="none"))
    for a in range(12):
        others = [j for j in range(12) if j != a]
        exact = average_precision_score(y[others] == y[a], Zn[others] @ Zn[a])
        np.testing.assert_allclose(1 - terms[a], exact, rtol=1e-9)


def test_fast_ap_reductions(x64):
    Z, y = jnp.asarray(_data()), jnp.asarray(Y)
    terms = deep.fast_ap(Z, y, reduction="none")
    assert terms.shape == (10,) and float(terms[8]) == 0.0  # row 8 has no positive
    np.testing.assert_allclose(float(jnp.sum(terms)), float(deep.fast_ap(Z, y, reduction="sum")), rtol=1e-12)
    np.testing.assert_allclose(float(jnp.sum(terms)) / 9, float(deep.fast_ap(Z, y)), rtol=1e-12)


@pytest.mark.parametrize("call,error,match", [
    (lambda Z, y: deep.fast_ap(Z, y, num_bins=0), ValueError, "num_bins must be a positive int"),
    (lambda Z, y: deep.fast_ap(Z, y, num_bins=2.5), ValueError, "num_bins"),
    (lambda Z, y: deep.fast_ap(Z, None), ValueError, "labels are required"),
    (lambda Z, y: deep.smooth_ap(Z, y, temperature=0.0), ValueError, "temperature must be > 0"),
    (lambda Z, y: deep.smooth_ap(Z[:, 0], y), ValueError, "2-D"),
    (lambda Z, y: deep.smooth_ap(Z, y, reduction="median"), ValueError, "reduction must be one of"),
    (lambda Z, y: deep.smooth_ap(Z, y, include_anchor=1), TypeError, "include_anchor must be True or False"),
])
def test_bad_input_raises_a_clear_error(call, error, match):
    Z, y = jnp.asarray(_data(), jnp.float32), jnp.asarray(Y)
    with pytest.raises(error, match=match):
        call(Z, y)
