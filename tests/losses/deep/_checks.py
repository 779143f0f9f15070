"""Shared checks of the deep-loss tests: gradients against central differences of a NumPy reference."""

import jax
import jax.numpy as jnp
import numpy as np


def grad_check(f_jax, f_ref, X, n_dir=2, eps=1e-5, rtol=1e-6, atol=1e-8):
    """jax.grad of ``f_jax`` at ``X`` against central differences of ``f_ref`` along random directions
    (float64); returns the gradient."""
    g = np.asarray(jax.jit(jax.grad(f_jax))(jnp.asarray(X)))
    assert np.all(np.isfinite(g))
    rng = np.random.default_rng(1)
    for _ in range(n_dir):
        V = rng.normal(size=np.shape(X))
        fd = (f_ref(X + eps * V) - f_ref(X - eps * V)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * V), fd, rtol=rtol, atol=atol)
    return g


def padded_matches(f, Z, y, n, rtol=1e-12):
    """``f(z, y, mask)`` on a batch padded after its first ``n`` rows (junk rows, labels shared with real
    rows) has the value and real-row gradients of the first ``n`` rows alone, and zero gradient on the
    padding."""
    Zp = np.array(Z, float)
    Zp[n:] = 5.0 * Zp[n:] + 3.0
    mask = jnp.asarray(np.arange(len(Zp)) < n)
    v, g = jax.jit(jax.value_and_grad(lambda z: f(z, jnp.asarray(y[:n]), None)))(jnp.asarray(Zp[:n]))
    vp, gp = jax.jit(jax.value_and_grad(lambda z: f(z, jnp.asarray(y), mask)))(jnp.asarray(Zp))
    np.testing.assert_allclose(float(vp), float(v), rtol=rtol, atol=1e-14)
    np.testing.assert_allclose(np.asarray(gp[:n]), np.asarray(g), rtol=1e-10, atol=1e-13)
    assert np.all(np.asarray(gp[n:]) == 0.0)
