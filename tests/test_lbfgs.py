"""jaxdml's L-BFGS (jaxdml/solvers/_lbfgs.py): the compact-form direction against the two-loop recursion,
the line search's Armijo steps, optima against independent solvers, and one evaluation site per loop."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy.optimize import minimize as scipy_minimize

from jaxdml.solvers import lbfgs, minimize
from jaxdml.solvers._lbfgs import _direction


class _Rows(NamedTuple):
    """The minimal problem the driver needs: ``X.shape[0]`` rows (for the data-parallel checks)."""

    X: jax.Array


def _rows(n):
    return _Rows(jnp.zeros((n, 1)))


def _two_loop(g, pairs):
    """Nocedal & Wright, Algorithm 7.4, in NumPy: ``-H g`` from ``pairs`` (oldest first), with
    ``H_0 = (s^T y / y^T y) I`` of the newest pair."""
    q = g.copy()
    alphas = []
    for s, y in reversed(pairs):
        a = (s @ q) / (s @ y)
        alphas.append(a)
        q = q - a * y
    s, y = pairs[-1]
    r = (s @ y) / (y @ y) * q
    for (s, y), a in zip(pairs, reversed(alphas)):
        b = (y @ r) / (s @ y)
        r = r + (a - b) * s
    return -r


@pytest.mark.parametrize("used", [1, 3, 6])
def test_compact_direction_is_the_two_loop_recursion(rng, x64, used):
    """The pairs in use are the last ``used`` rows (oldest first); the rows before them are stale and must
    not count. Pairs from a convex quadratic (``y = A s``) have positive curvature."""
    n, m = 7, 6
    B = rng.normal(size=(n, n))
    A = B @ B.T + n * np.eye(n)
    S = rng.normal(size=(m, n))
    Y = S @ A
    g = rng.normal(size=n)
    want = _two_loop(g, list(zip(S[m - used:], Y[m - used:])))
    got = _direction(jnp.asarray(g), jnp.asarray(g @ g), jnp.asarray(used), jnp.asarray(S), jnp.asarray(Y))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12)
    # no pair in use: a unit step along steepest descent
    got0 = _direction(jnp.asarray(g), jnp.asarray(g @ g), jnp.asarray(0), jnp.asarray(S), jnp.asarray(Y))
    np.testing.assert_allclose(np.asarray(got0), -g / np.linalg.norm(g), rtol=1e-12)


def test_quadratic_reaches_the_solution_of_the_linear_system(rng, x64):
    n = 8
    B = rng.normal(size=(n, n))
    A = jnp.asarray(B @ B.T + 0.1 * np.eye(n))
    b = jnp.asarray(rng.normal(size=n))
    res = minimize(lambda x, _p: 0.5 * x @ (A @ x) - b @ x, jnp.zeros(n), _rows(n), optimizer=lbfgs(),
                   max_iter=200, tol=1e-14)
    assert bool(res.converged) and not bool(res.failed)
    np.testing.assert_allclose(np.asarray(res.params), np.linalg.solve(A, b), rtol=1e-6, atol=1e-8)


def test_rosenbrock_matches_scipy(x64):
    """A non-convex valley where the unit step often fails: the backtracking has to work."""
    def rosen(x, _p):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    ref = scipy_minimize(lambda x: float(rosen(jnp.asarray(x), None)), x0,
                         jac=lambda x: np.asarray(jax.grad(rosen)(jnp.asarray(x), None)), method="L-BFGS-B",
                         options={"ftol": 1e-15, "gtol": 1e-10})
    res = minimize(rosen, jnp.asarray(x0), _rows(4), optimizer=lbfgs(), max_iter=500, tol=1e-14)
    assert bool(res.converged)
    np.testing.assert_allclose(np.asarray(res.params), ref.x, atol=1e-5)
    np.testing.assert_allclose(np.asarray(res.params), np.ones(4), atol=1e-5)


def test_projected_path_reaches_the_nonnegative_least_squares_solution(rng, x64):
    """With the driver's projection (here onto x >= 0) the accepted points follow the projected path; the
    result is scipy's NNLS solution, and convergence is reported only where the projected gradient
    vanishes."""
    from scipy.optimize import nnls

    A = rng.normal(size=(30, 10))
    b = rng.normal(size=30)
    ref, _ = nnls(A, b)
    assert 0 < np.sum(ref == 0) < 10  # some bounds active, some not
    Aj, bj = jnp.asarray(A), jnp.asarray(b)
    res = minimize(lambda x, _p: 0.5 * jnp.sum((Aj @ x - bj) ** 2), jnp.ones(10), _rows(10), optimizer=lbfgs(),
                   projection=lambda x: jnp.maximum(x, 0.0), max_iter=500, tol=1e-12)
    assert bool(res.converged)
    np.testing.assert_allclose(np.asarray(res.params), ref, atol=1e-5)


def test_plain_optax_loop_accepts_only_armijo_steps(x64):
    """In a user's optax loop every call evaluates one point; the accepted ones satisfy the Armijo
    condition against the previous iterate and decrease; rejected trials happen on Rosenbrock."""
    f = lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)  # noqa: E731
    opt = lbfgs(c1=1e-4)
    x = jnp.asarray([-1.2, 1.0])
    state = opt.init(x)
    iterates, rejected = [], 0

    @jax.jit
    def step(x, state):
        v, g = jax.value_and_grad(f)(x)
        updates, state = opt.update(g, state, x, value=v)
        return v, g, updates, state

    for _ in range(120):
        v, g, updates, state = step(x, state)
        if bool(state.accepted):
            if iterates and float(iterates[-1][1]) > 0.0:  # (at the minimum, 0, a search has nothing to find)
                x_prev, v_prev, g_prev = iterates[-1]
                assert float(v) <= float(v_prev) + 1e-4 * float(g_prev @ (x - x_prev)) < float(v_prev)
            iterates.append((x, v, g))
        else:
            rejected += 1
        x = optax.apply_updates(x, updates)
    assert rejected > 0 and float(iterates[-1][1]) < 1e-8


def test_the_driver_evaluates_the_loss_at_one_place(rng):
    """The compiled loop calls the loss once per step, at the only place it is traced (optax's L-BFGS
    traces it in the line search's branches, its start and after the loop as well)."""
    traced = []

    def loss(L, prob):
        traced.append(1)
        return jnp.sum((prob.X @ L.T) ** 2) - jnp.sum(jnp.log(jnp.abs(jnp.diag(L)) + 1.0))

    X = jnp.asarray(rng.normal(size=(20, 3)), jnp.float32)
    prob = _Rows(X)
    minimize(loss, jnp.eye(3), prob, optimizer=lbfgs(), max_iter=7)
    ours = len(traced)
    traced.clear()
    minimize(loss, jnp.eye(3), prob, optimizer=optax.lbfgs(), max_iter=7)
    assert ours == 1 and len(traced) > ours


def test_a_failed_search_rests_and_the_driver_reports_convergence(x64):
    """At the minimum of |x| (gradient 0) no trial passes Armijo: the search gives up, the iterate stays,
    and the stopping test holds there (no motion, no decrease)."""
    res = minimize(lambda x, _p: jnp.sum(jnp.abs(x)) + 1.0, jnp.asarray([0.0, 0.0]), _rows(2),
                   optimizer=lbfgs(max_linesearch_steps=5), max_iter=50)
    assert bool(res.converged) and float(res.loss) == 1.0
    np.testing.assert_array_equal(np.asarray(res.params), [0.0, 0.0])
