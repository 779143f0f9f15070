"""The optimisation driver: no recompiles, monotone best value, any optax optimizer, projections."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxdml
from jaxdml import losses
from jaxdml.projections import projection_psd
from jaxdml.solvers import make_optimizer, minimize, trace_count


#: the iteration budget (static: it sizes the loss history) the tests share, so that one compiled
#: loop per loss and optimizer serves them all
MAX_ITER = 60


def _problem(rng, n=40, d=5, pad_to=None, shift=0.0):
    X = rng.normal(size=(n, d)) + shift
    y = np.arange(n) % 3
    X[:, 0] += y  # a discriminative direction
    return jaxdml.make_problem(X, y, n_neighbors=3, pad_to=pad_to)


def test_refit_same_shape_does_not_recompile(rng):
    L0 = jnp.eye(5)
    minimize(losses.nca, L0, _problem(rng), max_iter=MAX_ITER)
    before = trace_count()
    for seed in range(3):  # new data, new float hyper-parameter values, new tol
        prob = _problem(np.random.default_rng(seed + 10))
        # (a budget no other test uses: this loop is compiled here for the first time)
        minimize(losses.lmnn, L0, prob, max_iter=15, hyper={"mu": 0.3 + 0.1 * seed})
        minimize(losses.nca, L0, prob, max_iter=MAX_ITER, tol=10.0 ** -(seed + 3))
    first_lmnn = trace_count() - before  # only the first lmnn call may compile
    assert first_lmnn == 1
    # through the public fit(): folds of different sizes padded to one bucket compile once
    X = rng.normal(size=(100, 4))
    y = np.arange(100) % 2
    jaxdml.fit(X[:90], y[:90], loss="nca", pad_to=96, max_iter=10)
    before = trace_count()
    for n in (91, 93, 95):
        jaxdml.fit(X[:n], y[:n], loss="nca", pad_to=96, max_iter=10)
    assert trace_count() == before


def test_best_loss_is_monotone_and_returned(rng):
    prob = _problem(rng)
    # (Adam's default rate 1e-2 given explicitly: the traced rate of test_any_optax_optimizer_and_learning_rate,
    # whose run then reuses this compiled loop)
    for loss, opt, proj, P0, lr in [
        (losses.nca, None, None, jnp.eye(5), None),
        (losses.lmnn, None, None, jnp.eye(5), None),
        (losses.lmnn, make_optimizer("adam"), None, jnp.eye(5), 1e-2),
        (losses.lmnn_metric, make_optimizer("adam"), projection_psd, jnp.eye(5), 1e-2),
    ]:
        res = minimize(loss, P0, prob, optimizer=opt, projection=proj, max_iter=MAX_ITER, learning_rate=lr)
        hist = np.asarray(res.loss_history)
        hist = hist[np.isfinite(hist)]
        best = np.minimum.accumulate(hist)
        assert best[-1] < hist[0]  # it learned something
        assert np.all(np.diff(best) <= 0)
        np.testing.assert_allclose(float(res.loss), best[-1], rtol=1e-6)
        # (compiled: evaluated op by op, every primitive of the loss would compile separately)
        np.testing.assert_allclose(float(jax.jit(loss)(res.params, prob)), float(res.loss), rtol=1e-4)
        if loss is losses.nca and opt is None:  # L-BFGS with a line search decreases every step
            assert np.all(np.diff(hist) <= 1e-6 * np.abs(hist[:-1]).max())


def test_projection_keeps_iterates_psd(rng):
    prob = _problem(rng)
    res = minimize(losses.lmnn_metric, jnp.eye(5), prob, optimizer=optax.sgd(0.5),
                   projection=projection_psd, max_iter=30)
    assert np.linalg.eigvalsh(np.asarray(res.params, np.float64)).min() >= -1e-5


def test_any_optax_optimizer_and_learning_rate(rng):
    prob = _problem(rng)
    start = float(jax.jit(losses.nca)(jnp.eye(5), prob))  # (compiled: op by op every primitive compiles)
    for opt in (optax.adam(0.05), optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1)),
                optax.inject_hyperparams(optax.rmsprop)(learning_rate=0.01)):
        res = minimize(losses.nca, jnp.eye(5), prob, optimizer=opt, max_iter=40)
        assert float(res.loss) < start
    # the injected learning rate is traced state: 0 means no movement at all (the compiled loop of
    # test_best_loss_is_monotone_and_returned, there with the default rate)
    res = minimize(losses.lmnn, jnp.eye(5), prob, optimizer=make_optimizer("adam"), learning_rate=1e-30,
                   max_iter=MAX_ITER)
    np.testing.assert_allclose(np.asarray(res.params), np.eye(5), atol=1e-12)


def test_convergence_flag_and_budget(rng):
    prob = _problem(rng)
    # The penalty gives NCA a minimiser: without one the loss keeps falling as L grows, and whether the
    # steps count as settled before the budget runs out depends on the float path. With tol=0 the budget
    # is 5 steps, too few to reach the minimiser (where a line search that finds no decrease in float32
    # leaves the iterate in place, which even tol=0 counts as settled).
    hyper = {"reg": 0.05}
    res = minimize(losses.nca, jnp.eye(5), prob, max_iter=5, tol=0.0, hyper=hyper)
    assert int(res.n_iter) == 5 and not bool(res.converged)
    res = minimize(losses.nca, jnp.eye(5), prob, max_iter=MAX_ITER, tol=1e-4, hyper=hyper)
    assert bool(res.converged) and int(res.n_iter) < MAX_ITER


def test_non_finite_loss_is_reported(rng):
    prob = _problem(rng)
    # a NaN in the data makes the loss and its gradient NaN (the compiled loop of the other NCA tests)
    bad = prob._replace(X=prob.X.at[3, 1].set(jnp.nan))
    assert np.isnan(float(jax.jit(losses.nca)(jnp.eye(5), bad)))
    res = minimize(losses.nca, jnp.eye(5), bad, max_iter=MAX_ITER)
    assert bool(res.failed) and int(res.n_iter) == 0  # stopped at the initial point: no step taken


def test_vmap_over_initialisations(rng):
    prob = _problem(rng)
    L0s = jnp.stack([jnp.eye(5), 0.5 * jnp.eye(5)])
    run = jax.vmap(lambda L: minimize(losses.nca, L, prob, optimizer=optax.adam(0.05), max_iter=20).loss)
    vals = np.asarray(run(L0s))
    assert vals.shape == (2,) and np.all(np.isfinite(vals))


def test_data_parallel_objective_on_a_one_device_mesh(rng):
    """The mesh path of the data-parallel objective (``shard_map`` over the anchors, weighted partial
    means combined by ``psum``) on a one-device mesh: the plain loss and its gradient, for all rows
    and for a minibatch with candidates; a batch of padded rows only weighs nothing (0, not 0/0).
    The split over several devices needs several devices, so it runs in a subprocess with four CPU
    devices: tests/test_large.py::test_four_devices_give_the_same_result_as_one (slow)."""
    from jaxdml.solvers._sharding import data_parallel_objective, make_mesh

    mesh = make_mesh()
    assert mesh.axis_names == ("data",) and mesh.devices.size == jax.device_count()
    mesh = make_mesh(jax.devices()[:1])
    prob = _problem(rng, n=40, pad_to=48)  # rows 40-47 are padding
    L = jnp.asarray(np.eye(5) + 0.1 * rng.normal(size=(5, 5)), jnp.float32)
    hyper = {"mu": jnp.float32(0.3)}
    anchors = jnp.arange(0, 40, 5, dtype=jnp.int32)
    candidates = jnp.arange(0, 48, 2, dtype=jnp.int32)
    for with_candidates, a, c in ((False, None, None), (True, anchors, candidates)):
        plain = jax.jit(jax.value_and_grad(data_parallel_objective(losses.lmnn, {}, None, with_candidates)))
        split = jax.jit(jax.value_and_grad(data_parallel_objective(losses.lmnn, {}, mesh, with_candidates)))
        (v0, g0), (v1, g1) = plain(L, prob, hyper, a, c), split(L, prob, hyper, a, c)
        assert float(v0) > 0
        np.testing.assert_allclose(float(v1), float(v0), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(g1), np.asarray(g0), rtol=1e-5, atol=1e-7)
    v, g = split(L, prob, hyper, jnp.arange(40, 48, dtype=jnp.int32), candidates)
    assert float(v) == 0.0 and not np.any(np.asarray(g))


def test_uses_linesearch_is_right_and_traces_an_optimizer_once_per_signature(monkeypatch):
    from jaxdml.solvers import _driver

    calls = []
    real = jax.eval_shape
    monkeypatch.setattr(jax, "eval_shape", lambda *a, **k: calls.append(1) or real(*a, **k))
    p32, tree = np.zeros((3, 2), np.float32), {"L": np.zeros(4, np.float32)}
    mine, zoom, adam = _driver.make_optimizer("lbfgs"), optax.lbfgs(), optax.adam(1e-2)
    assert _driver.uses_linesearch(mine, p32) and _driver.uses_linesearch(zoom, p32)
    assert not _driver.uses_linesearch(adam, p32)
    n = len(calls)
    assert n == 3
    for _ in range(3):  # remembered: no more tracing
        assert _driver.uses_linesearch(mine, p32) and not _driver.uses_linesearch(adam, p32)
    assert len(calls) == n
    # another parameter signature (a pytree, another shape) is traced afresh, and answered the same
    assert _driver.uses_linesearch(mine, tree) and not _driver.uses_linesearch(adam, np.zeros(5, np.float32))
    assert len(calls) == n + 2
    # an optimizer without extra-args support is wrapped, and answered as before
    plain = optax.GradientTransformation(adam.init, adam.update)
    assert not _driver.uses_linesearch(plain, p32)
