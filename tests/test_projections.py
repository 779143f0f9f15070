"""Projection operators: feasibility, idempotence, optimality, agreement with NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.projections import projection_halfspace, projection_intersection, projection_psd


def _sym(rng, d):
    A = rng.normal(size=(d, d))
    return (A + A.T) / 2


@pytest.mark.parametrize("d", [2, 5, 12])
def test_psd_projection_properties(rng, d):
    M = jnp.asarray(_sym(rng, d), jnp.float32)
    P = np.asarray(jax.jit(projection_psd)(M), dtype=np.float64)
    scale = np.abs(np.asarray(M)).max()
    assert np.allclose(P, P.T)
    assert np.linalg.eigvalsh(P).min() >= -1e-6 * scale
    P2 = np.asarray(projection_psd(jnp.asarray(P, jnp.float32)))
    np.testing.assert_allclose(P2, P, atol=1e-5 * scale)
    # agrees with the NumPy construction
    w, V = np.linalg.eigh(np.asarray(M, np.float64))
    np.testing.assert_allclose(P, (V * np.maximum(w, 0)) @ V.T, atol=1e-5 * scale)
    # no random PSD matrix is closer to M
    dist = np.linalg.norm(P - np.asarray(M))
    for _ in range(50):
        B = rng.normal(size=(d, d)) * rng.uniform(0.1, 2)
        assert np.linalg.norm(B @ B.T - np.asarray(M)) >= dist - 1e-5


def test_psd_projection_asymmetric_input_and_batch(rng):
    A = jnp.asarray(rng.normal(size=(3, 4, 4)), jnp.float32)
    P = projection_psd(A)
    assert P.shape == (3, 4, 4)
    for i in range(3):
        np.testing.assert_allclose(P[i], projection_psd(0.5 * (A[i] + A[i].T)), atol=1e-5)


def test_halfspace_projection(rng):
    d = 4
    A = jnp.asarray(_sym(rng, d))
    for _ in range(20):
        M = jnp.asarray(_sym(rng, d))
        b = float(rng.normal()) * 3
        P = projection_halfspace(M, A, b)
        assert float(jnp.sum(A * P)) >= b - 1e-5
        np.testing.assert_allclose(projection_halfspace(P, A, b), P, atol=1e-5)
        if float(jnp.sum(A * M)) >= b:
            np.testing.assert_allclose(P, M)
        else:  # the step is along A: the closest point of the hyperplane
            np.testing.assert_allclose(float(jnp.sum(A * P)), b, atol=1e-4)
            R = np.asarray(P - M)
            assert abs(abs(np.sum(R * np.asarray(A))) - np.linalg.norm(R) * np.linalg.norm(np.asarray(A))) < 1e-3


def test_intersection_psd_and_halfspace_is_feasible_and_nearest(rng, x64):
    d = 4
    A = jnp.asarray(np.diag([-1.0, -1.0, 0.0, 0.0]))  # trace of the first block <= 1
    b = -1.0
    M = jnp.asarray(_sym(rng, d) * 3 + np.diag([2.0, 2.0, 0.0, 0.0]))
    projs = (projection_psd, lambda X: projection_halfspace(X, A, b))
    P = np.asarray(jax.jit(lambda X: projection_intersection(X, projs, max_iter=2000, tol=1e-12))(M))
    assert np.linalg.eigvalsh(P).min() >= -1e-7
    assert np.sum(np.asarray(A) * P) >= b - 1e-7
    # Dykstra gives the nearest feasible point: no random feasible point is closer
    dist = np.linalg.norm(P - np.asarray(M))
    for _ in range(200):
        B = rng.normal(size=(d, d))
        C = B @ B.T
        C = np.asarray(projection_halfspace(jnp.asarray(C), A, b))
        if np.linalg.eigvalsh(C).min() >= 0:
            assert np.linalg.norm(C - np.asarray(M)) >= dist - 1e-6
