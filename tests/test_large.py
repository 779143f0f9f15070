"""Large-data machinery: memory budget, blockwise neighbour search, minibatches, sampled
candidates, multi-device sharding and the persistent compilation cache."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

import jaxdml
from jaxdml import config, losses
from jaxdml.neighbors import knn_search, other_class_neighbors, same_class_neighbors
from jaxdml.solvers import make_optimizer, minimize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _data(rng, n, d=6, c=5):
    X = rng.random((n, d))
    y = rng.integers(0, c, n)
    X[:, 0] += 0.3 * y
    return X, y


@pytest.mark.parametrize("name", ["nca", "lmnn"])
def test_small_memory_budget_gives_same_result_with_bounded_temporaries(rng, name, x64):
    # blockwise and whole sums are equal in exact arithmetic: compared in float64, so that only the
    # summation order's round-off (~1e-16 relative to the largest term) separates them
    X, y = _data(rng, 1500)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    assert prob.X.dtype == jnp.float64
    f = jax.jit(jax.value_and_grad(getattr(losses, name)))
    L = jnp.eye(6, dtype=jnp.float64)
    v_ref, g_ref = f(L, prob)
    with config.memory_budget(2 << 20):
        f_small = jax.jit(jax.value_and_grad(getattr(losses, name)))
        compiled = f_small.lower(L, prob).compile()
        v, g = f_small(L, prob)
    np.testing.assert_allclose(float(v), float(v_ref), rtol=1e-10)
    g, g_ref = np.asarray(g), np.asarray(g_ref)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10 * np.abs(g_ref).max())
    temp = compiled.memory_analysis().temp_size_in_bytes
    assert temp < 1500 * 1500 * 8  # no N x N buffer at once


@pytest.mark.parametrize("name", ["nca", "lmnn"])
def test_full_batch_at_20000_never_holds_an_n_by_n_array(rng, name):
    N = 20000
    X, y = _data(rng, N, d=16, c=26)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    compiled = jax.jit(jax.value_and_grad(getattr(losses, name))).lower(jnp.eye(16), prob).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < N * N * 4
    assert config.get_memory_budget() == 1 << 30


@pytest.mark.parametrize("dtype", ["float32", pytest.param("float64", marks=pytest.mark.slow)])
def test_smallest_k_is_a_stable_selection(rng, dtype):
    """Row-wise k smallest (the float64 CPU path is masked argmin passes, float32 lax.top_k) and the
    k-th order statistic: the first k of a stable sort, ties in index order, distinct indices on rows
    with too few finite entries -- with integer-valued entries, so every tie is exact."""
    from jaxdml.linalg import kth_smallest, smallest_k

    with jax.enable_x64(True):
        for n in (1, 2, 7, 40):
            D = rng.integers(0, 4, size=(9, n)).astype(dtype)
            D[rng.random(D.shape) < 0.4] = np.inf
            D[0] = np.inf  # a row with no finite entry
            for k in sorted({1, min(3, n), n}):
                vals, idx = jax.jit(lambda A, k=k: smallest_k(A, k))(jnp.asarray(D))
                ref = np.argsort(D, axis=1, kind="stable")[:, :k]
                np.testing.assert_array_equal(np.asarray(idx), ref)
                np.testing.assert_array_equal(np.asarray(vals), np.take_along_axis(D, ref, 1))
                assert vals.dtype == D.dtype
                host_vals, host_idx = smallest_k(D.copy(), k, xp=np)  # the host form (batched k-NN)
                np.testing.assert_array_equal(host_idx, ref)
                np.testing.assert_array_equal(host_vals, np.take_along_axis(D, ref, 1))
            for k in range(n):  # the k-th order statistic with a traced k (LFDA's local scaling)
                got = jax.jit(kth_smallest)(jnp.asarray(D), jnp.int32(k))
                np.testing.assert_array_equal(np.asarray(got), np.sort(D, axis=1)[:, k])


def test_float64_selection_through_float32_candidates_is_exact(rng):
    """The float64 CPU selection keeps float32 candidates and decides in float64: the first k of a stable
    sort, also where float32 cannot tell entries apart (differences below its resolution, so the exact
    fallback must run) and with exact ties and infinities; the k-th order statistic with a concrete k."""
    from jaxdml.linalg import kth_smallest, smallest_k

    with jax.enable_x64(True):
        lattice = rng.integers(0, 6, size=(7, 60)).astype(np.float64)
        lattice[rng.random(lattice.shape) < 0.3] = np.inf
        close = 1.0 + rng.permutation(60 * 5).reshape(5, 60) * 1e-12  # one float32 value, distinct in float64
        for D in (lattice, close, rng.random((6, 60))):
            for k in (1, 4, 12):
                vals, idx = jax.jit(lambda A, k=k: smallest_k(A, k))(jnp.asarray(D))
                ref = np.argsort(D, axis=1, kind="stable")[:, :k]
                np.testing.assert_array_equal(np.asarray(idx), ref)
                np.testing.assert_array_equal(np.asarray(vals), np.take_along_axis(D, ref, 1))
                got = jax.jit(lambda A, k=k: kth_smallest(A, k))(jnp.asarray(D))
                np.testing.assert_array_equal(np.asarray(got), np.sort(D, axis=1)[:, k])


def test_knn_search_matches_sklearn(rng):
    X, y = _data(rng, 900)
    L = rng.normal(size=(3, 6))
    idx, dist = knn_search(X, 4, L=L, block_elements=900 * 37)
    ref_d, ref = NearestNeighbors(n_neighbors=4).fit(X @ L.T).kneighbors()
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_allclose(dist, ref_d**2, rtol=1e-4, atol=2e-5)  # float32 GEMM distances
    same, mask = same_class_neighbors(X, y, 3)
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        nbr = NearestNeighbors(n_neighbors=3).fit(X[members]).kneighbors()[1]
        np.testing.assert_array_equal(np.sort(same[members], 1), np.sort(members[nbr], 1))
    other, omask = other_class_neighbors(X, y, 5)
    assert np.all(y[other] != y[:, None]) and omask.all()
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    D[y[:, None] == y[None, :]] = np.inf
    found = np.sort(np.take_along_axis(D, other, 1), 1)
    np.testing.assert_allclose(found, np.sort(D, 1)[:, :5], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_minibatch_training_decreases_the_exact_objective(rng):
    X, y = _data(rng, 600)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    f = jax.jit(losses.nca)
    g = jax.jit(losses.lmnn)
    for loss, exact in ((losses.nca, f), (losses.lmnn, g)):
        for cands in (None, 128):
            res = minimize(loss, jnp.eye(6), prob, optimizer=make_optimizer("adam"), learning_rate=0.02,
                           max_iter=60, batch_size=64, n_candidates=cands, key=jax.random.key(1))
            assert int(res.n_iter) > 0 and not bool(res.failed)
            assert float(exact(res.params, prob)) < float(exact(jnp.eye(6), prob))


def test_sampled_lmnn_candidates_are_unbiased(rng, x64):
    X, y = _data(rng, 200)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    L = jnp.asarray(rng.normal(size=(6, 6)))
    exact = float(jax.jit(losses.lmnn)(L, prob))  # (op by op, every primitive of the loss would compile)
    f = jax.jit(lambda c: losses.lmnn(L, prob, candidates=c))
    # the 400 draws from one program (the same draws as one key at a time)
    draws = jax.jit(jax.vmap(lambda s: jax.random.randint(jax.random.key(s), (64,), 0, 200)))(jnp.arange(400))
    vals = [float(f(c)) for c in draws]
    assert abs(np.mean(vals) - exact) < 4 * np.std(vals) / np.sqrt(len(vals))


@pytest.mark.slow  # three fits at the threshold size (2 000+ rows)
def test_nca_switches_to_minibatch_adam_above_its_threshold(rng):
    # NCA: full-batch L-BFGS on the exact objective up to NCA_LARGE_N samples, minibatch Adam
    # (256 anchors against 1024 sampled rows) above; a setting the user gives is kept
    from jaxdml.methods.gradient._nca import NCA_LARGE_N

    X, y = _data(rng, NCA_LARGE_N + 1, d=3, c=3)
    big = jaxdml.fit(X, y, loss="nca", max_iter=2)
    assert (big.info["batch_size"], big.info["n_candidates"]) == (256, 1024)
    at = jaxdml.fit(X[:NCA_LARGE_N], y[:NCA_LARGE_N], loss="nca", max_iter=2)
    assert at.info["batch_size"] is None and at.info["n_candidates"] is None
    exact = jaxdml.fit(X, y, loss="nca", max_iter=2, optimizer="lbfgs")
    assert exact.info["batch_size"] is None and exact.info["n_candidates"] is None


@pytest.mark.slow
def test_fit_picks_the_large_data_path_by_itself(rng):
    X, y = _data(rng, 20500, d=8, c=10)
    # MCML and LDML: full batch up to COLLAPSE_LARGE_N (4096) samples, 256 anchors against 1024
    # sampled rows above; the sampled steps still lower the exact objective
    from jaxdml.methods.gradient._collapse import COLLAPSE_LARGE_N

    at = jaxdml.fit(X[:COLLAPSE_LARGE_N], y[:COLLAPSE_LARGE_N], loss="mcml", max_iter=1)
    assert at.info["batch_size"] is None and at.info["n_candidates"] is None
    for loss in ("mcml", "ldml"):
        m = jaxdml.fit(X[:COLLAPSE_LARGE_N + 1], y[:COLLAPSE_LARGE_N + 1], loss=loss, max_iter=30)
        assert m.info["batch_size"] == 256 and m.info["n_candidates"] == 1024
        sub = jaxdml.make_problem(X[:2000], y[:2000])
        f = jax.jit(getattr(losses, loss))  # one program for both evaluations
        assert float(f(jnp.asarray(m.M), sub)) < float(f(jnp.eye(8), sub))
    # LMNN's convex form: full-batch projected Adam up to 4096 samples, 256 anchors above (against
    # 1024 sampled impostor candidates above 8192); the steps lower the exact objective
    m = jaxdml.fit(X[:4097], y[:4097], loss="lmnn_metric", max_iter=2)
    assert m.info["batch_size"] == 256 and m.info["n_candidates"] is None
    assert jaxdml.fit(X[:4096], y[:4096], loss="lmnn_metric", max_iter=2).info["batch_size"] is None
    m = jaxdml.fit(X[:10500], y[:10500], loss="lmnn_metric", max_iter=30)
    assert m.info["batch_size"] == 256 and m.info["n_candidates"] == 1024
    sub = jaxdml.make_problem(X[:2000], y[:2000], n_neighbors=3)
    f = jax.jit(losses.lmnn_metric)
    assert float(f(jnp.asarray(m.M), sub)) < float(f(jnp.eye(8), sub))
    # the neighbourhood methods: every row an anchor up to 20 000 rows, 20 000 stratified anchors above
    # (their neighbourhoods searched among all rows, on the chunked device path)
    for loss in ("anmm", "dmlmj"):
        assert "n_anchors" not in jaxdml.fit(X[:20000], y[:20000], loss=loss).info
        assert jaxdml.fit(X, y, loss=loss).info["n_anchors"] == 20000


SCRIPT = textwrap.dedent("""
    import json, sys, numpy as np, jax, jax.numpy as jnp, jaxdml
    from jaxdml.solvers import minimize, make_optimizer
    rng = np.random.default_rng(0)
    X = rng.random((256, 5)); y = rng.integers(0, 3, 256); X[:, 0] += 0.4 * y
    out = {"devices": len(jax.devices())}
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    for devs in (None, "all"):
        # (a line search makes discrete choices that can amplify the round-off of a different
        # summation order, so trajectories are compared with first-order optimizers and the
        # L-BFGS fit by its loss value)
        a = minimize(jaxdml.losses.nca, jnp.eye(5), prob, optimizer=make_optimizer("adam"),
                     learning_rate=0.05, max_iter=40, devices=devs)
        b = minimize(jaxdml.losses.lmnn, jnp.eye(5), prob, optimizer=make_optimizer("adam"),
                     max_iter=30, batch_size=64, n_candidates=96, devices=devs)
        c = jaxdml.fit(X, y, loss="lmnn", max_iter=20, devices=devs)
        out[str(devs)] = [np.asarray(a.params).tolist(), np.asarray(b.params).tolist(), [c.loss]]
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_four_devices_give_the_same_result_as_one():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["devices"] == 4
    for one, four in zip(res["None"], res["all"]):
        np.testing.assert_allclose(np.asarray(four), np.asarray(one), rtol=2e-4, atol=2e-5)


CACHE_SCRIPT = textwrap.dedent("""
    import sys, jax, numpy as np, jaxdml
    from jaxdml.compilation import enable_compilation_cache
    hits = []
    jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name) if name.endswith("cache_hits") else None)
    enable_compilation_cache(sys.argv[1])
    X = np.random.default_rng(0).random((60, 4)); y = np.arange(60) % 3
    jaxdml.fit(X, y, loss="nca", max_iter=5)
    print(len(hits) + jaxdml._runtime._executable_cache.stats()["hits"])  # loads from JAX's cache or jaxdml's
""")


@pytest.mark.slow
def test_persistent_compilation_cache_serves_a_second_process(tmp_path):
    cache = str(tmp_path / "xla")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", CACHE_SCRIPT, cache], capture_output=True,
                             text=True, cwd=ROOT, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(int(out.stdout.strip().splitlines()[-1]))
    assert os.listdir(cache)  # the first process wrote executables
    assert runs[0] == 0 and runs[1] >= 1  # the second one loaded them instead of compiling


def test_entry_points_trace_their_products_at_the_configured_precision(rng, monkeypatch):
    """On GPUs JAX's default float32 products are TensorFloat-32 (wrong neighbours); jaxdml's entry
    points trace under jaxdml.config's matmul precision ("highest" unless set otherwise)."""
    import jaxdml.neighbors as nb

    seen = []
    real = nb.search
    monkeypatch.setattr(nb, "search", lambda *a, **k: seen.append(jax.config.jax_default_matmul_precision) or real(*a, **k))
    X, y = _data(rng, 60)
    with jax.default_matmul_precision("tensorfloat32"):  # a caller's context does not lower it
        knn_search(X, 2, device=True)
        with config.matmul_precision("high"):
            knn_search(X, 2, device=True)
    assert seen == ["highest", "high"]
    with pytest.raises(ValueError, match="matmul precision"):
        config.set_matmul_precision("tf32")
    with jax.default_matmul_precision("default"):  # the precision is written into the traced program
        plain = jax.jit(lambda a, b: a @ b).lower(jnp.ones((2, 2)), jnp.ones((2, 2))).as_text()
    with jax.default_matmul_precision(config.get_matmul_precision()):
        precise = jax.jit(lambda a, b: a @ b).lower(jnp.ones((2, 2)), jnp.ones((2, 2))).as_text()
    assert "HIGHEST" in precise and "HIGHEST" not in plain
