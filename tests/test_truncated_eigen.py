"""Kernel methods without dense eigensolves: the truncated (block Krylov) results against the dense ones."""

import jax
import numpy as np
import pytest
import scipy.linalg as sla
from sklearn.datasets import load_digits

import jaxdml
from jaxdml.eigen import leading_eigh
from jaxdml.eigen._truncated import use_truncated, whitened_pencil


def _gapped(n, top, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    w = np.r_[np.linspace(10.0, 6.0, top), rng.uniform(-3.0, 3.0, n - top)]
    return (Q * w) @ Q.T, w, Q


def test_leading_eigh_matches_the_dense_subspace_within_the_eigengap_bound():
    W, w, Q = _gapped(300, 6)
    with jax.enable_x64(True):
        lam, V, info = leading_eigh(jax.numpy.asarray(W), 5, solver="truncated")
    lam, V = np.asarray(lam), np.asarray(V)
    assert info["solver"] == "block Krylov" and info["max_residual"] <= 1e-8
    np.testing.assert_allclose(lam, w[:5], rtol=1e-9)
    # Davis-Kahan: sin(angle) <= |residual| / gap, residual <= rtol * Gershgorin bound
    shift = np.abs(W).sum(1).max()
    gap = w[4] - w[5]
    assert np.max(sla.subspace_angles(V, Q[:, :5])) <= 10 * 1e-8 * shift / gap
    np.testing.assert_allclose(V.T @ V, np.eye(5), atol=1e-10)


def _difference_of_grams(op, X):
    F, G = op
    return F @ (F.T @ X) - G @ (G.T @ X)


def test_leading_eigh_of_an_operator_never_formed_matches_the_dense_matrix():
    """W = F F^T - G G^T applied through its factors (with a loose norm bound only as a scale): the
    same eigenpairs as the dense matrix, the residual test relative to the true norm, not to the bound."""
    n = 420
    W, w, Q = _gapped(n, 6, seed=3)
    F = Q[:, w > 0] * np.sqrt(w[w > 0])
    G = Q[:, w < 0] * np.sqrt(-w[w < 0])
    order = np.argsort(-w)
    w, Q = w[order], Q[:, order]
    with jax.enable_x64(True):
        lam, V, info = leading_eigh((jax.numpy.asarray(F), jax.numpy.asarray(G)), 5, solver="truncated",
                                    apply=_difference_of_grams, shape=(n, np.float64), scale=1e6)
    lam, V = np.asarray(lam), np.asarray(V)
    assert info["solver"] == "block Krylov" and info["max_residual"] <= 1e-8
    np.testing.assert_allclose(lam, w[:5], rtol=1e-9)
    # Davis-Kahan with the true 2-norm (a residual relative to the 1e6 bound would be far looser)
    assert np.max(sla.subspace_angles(V, Q[:, :5])) <= 10 * 1e-8 * np.abs(w).max() / (w[4] - w[5])
    with pytest.raises(ValueError, match="shape"):
        leading_eigh((F, G), 5, apply=_difference_of_grams)


def test_leading_eigh_falls_back_to_dense_when_not_accurate():
    W, w, Q = _gapped(300, 6, seed=1)
    with jax.enable_x64(True):
        lam, V, info = leading_eigh(jax.numpy.asarray(W), 5, solver="truncated", rtol=1e-300, max_iter=10)
    assert info["solver"] == "dense (block Krylov inaccurate)"
    np.testing.assert_allclose(np.asarray(lam), w[:5], rtol=1e-12)
    assert use_truncated("auto", 1617, 10) and not use_truncated("auto", 1617, 64)
    assert not use_truncated("auto", 200, 5) and not use_truncated("dense", 1617, 10)
    with pytest.raises(ValueError, match="eigen_solver"):
        use_truncated("lanczos", 100, 2)


def test_whitened_pencil_is_the_generalised_problem():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 40))
    A = A + A.T
    F = rng.normal(size=(30, 40))
    B = F.T @ F  # singular: the ridge makes it definite
    with jax.enable_x64(True):
        W, C = whitened_pencil(jax.numpy.asarray(A), jax.numpy.asarray(B), 0.5)
        w = np.linalg.eigvalsh(np.asarray(W))
    np.testing.assert_allclose(w, sla.eigh(A, B + 0.5 * np.eye(40), eigvals_only=True), rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:450] / 16.0, y[:450]


def _score_gap(method, lam, k):
    lam = np.asarray(lam)
    s = lam + 1.0 / lam if method == "kdmlmj" else lam
    return (s[k - 1] - s[k]) / np.abs(s[0])


@pytest.mark.parametrize("method, kw", [pytest.param("kanmm", {}, marks=pytest.mark.slow),
                                        pytest.param("kdmlmj", {}, marks=pytest.mark.slow), ("kllda", {}),
                                        ("kllda", {"affinity": "neighbors"})])
def test_truncated_kernel_fit_spans_the_dense_leading_subspace(digits, method, kw):
    X, y = digits
    k = 5
    dense = jaxdml.fit(X, y, loss=method, n_components=k + 1, eigen_solver="dense", **kw)
    trunc = jaxdml.fit(X, y, loss=method, n_components=k, eigen_solver="auto", **kw)  # 450 rows, 5 components
    assert trunc.info["eigen_solver"]["solver"] == "block Krylov"
    np.testing.assert_allclose(trunc.info["eigenvalues"][:k], dense.info["eigenvalues"][:k], rtol=1e-6)
    K = jaxdml.kernels.kernel_matrix(X, kernel="rbf", gamma=1 / 64)
    E0, E1 = K @ np.asarray(dense.L)[:k].T, K @ np.asarray(trunc.L).T
    # the two differ by the Cholesky jitter (1e-10 of the mean kernel diagonal) and the solver's
    # residual (1e-8 relative): their leading subspaces agree within ten times those over the relative gap
    gap = _score_gap(method, dense.info["eigenvalues"], k)
    assert gap > 1e-3
    assert np.max(sla.subspace_angles(E0, E1)) <= 1e-7 / gap
    # the same map on new data
    Xt = load_digits().data[450:500] / 16.0
    Et0, Et1 = dense.transform(Xt)[:, :k], trunc.transform(Xt)
    assert np.max(sla.subspace_angles(np.vstack([E0, Et0]), np.vstack([E1, Et1]))) <= 1e-5 / gap
