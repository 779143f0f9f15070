"""A data-parallel deep metric learning step on four simulated CPU devices equals the one-device step.

The device count must be set before jax is imported, so the comparison runs in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=4``; float64, so that only the order of sums differs."""

import functools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = textwrap.dedent("""
    import json
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp, numpy as np, optax
    from jaxdml.losses import deep

    rng = np.random.default_rng(0)
    B, d_in, d_out = 32, 10, 4
    x_all = rng.normal(size=(3, B, d_in))
    y_all = np.stack([rng.permutation(np.arange(B) % 6) for _ in range(3)])
    params = {"W1": 0.3 * rng.normal(size=(d_in, 16)), "W2": 0.3 * rng.normal(size=(16, d_out))}
    opt = optax.adam(1e-2)

    def embed(p, x):
        return jnp.tanh(x @ p["W1"]) @ p["W2"]

    def objective(p, x, y, mem):
        z = embed(p, x)
        loss = deep.contrastive(z, y, miner=deep.pair_margin)
        loss += deep.triplet_margin(z, y, miner=deep.batch_hard)
        loss += deep.triplet_margin(z, y, miner=deep.semi_hard, reduction="avg_non_zero")
        loss += deep.multi_similarity(z, y, miner=deep.multi_similarity_pairs)
        loss += deep.supervised_contrastive(z, y)
        bank, mem = deep.memory_loss(deep.ntxent, z, y, mem)
        return loss + bank, mem

    def step(p, x, y, opt_state, mem):
        (value, mem), g = jax.value_and_grad(objective, has_aux=True)(p, x, y, mem)
        updates, opt_state = opt.update(g, opt_state)
        return optax.apply_updates(p, updates), opt_state, mem, value

    def train(run):
        p, s, m = params, opt.init(params), deep.memory_init(64, d_out)
        values = []
        for x, y in zip(x_all, y_all):
            p, s, m, v = run(p, x, y, s, m)
            values.append(float(v))
        return p, m, values

    one = train(jax.jit(step))
    run = deep.data_parallel(step, batch_argnums=(1, 2))
    four = train(run)
    x_sharded = run.shard_batch(x_all[0])
    # the loss of each device's own rows (what a data-parallel step must NOT compute)
    z = embed(params, x_all[0])
    per_device = np.mean([float(deep.triplet_margin(z[k:k + 8], y_all[0][k:k + 8], miner=deep.batch_hard))
                          for k in range(0, B, 8)])
    print(json.dumps(dict(
        devices=jax.device_count(), shards=len(x_sharded.addressable_shards),
        shard_rows=x_sharded.addressable_shards[0].data.shape[0],
        one=[np.asarray(one[0][k]).tolist() for k in ("W1", "W2")] + [np.asarray(one[1].embeddings).tolist()],
        four=[np.asarray(four[0][k]).tolist() for k in ("W1", "W2")] + [np.asarray(four[1].embeddings).tolist()],
        values_one=one[2], values_four=four[2],
        whole_batch=float(deep.triplet_margin(z, y_all[0], miner=deep.batch_hard)), per_device=float(per_device))))
""")


def _run(script):
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_data_parallel_step_equals_one_device():
    """Three adam steps of an MLP under five losses with miners and a cross-batch memory: the batch split
    over 4 devices gives the parameters, memory and losses of one device; the split is real (4 shards of
    8 rows), and a per-device loss would differ from the whole batch's."""
    res = _run(SCRIPT)
    assert res["devices"] == 4 and res["shards"] == 4 and res["shard_rows"] == 8
    for a, b in zip(res["one"], res["four"]):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res["values_four"], res["values_one"], rtol=1e-10)
    assert abs(res["per_device"] - res["whole_batch"]) > 1e-3


def test_data_parallel_input_errors():
    import jax

    from jaxdml.losses import deep

    run = deep.data_parallel(lambda w, x: w + x.sum(), batch_argnums=1)
    n = jax.device_count()
    assert float(run(1.0, np.ones((2 * n, 3)))) == 1.0 + 6 * n
    if n > 1:
        with pytest.raises(ValueError, match="multiple of"):
            run(1.0, np.ones((2 * n + 1, 3)))
    with pytest.raises(ValueError, match="name arguments the step was not given"):
        deep.data_parallel(lambda w: w, batch_argnums=(1,))(1.0)
    with pytest.raises(ValueError, match="batch_argnums must be"):
        deep.data_parallel(lambda w: w, batch_argnums=())
    with pytest.raises(TypeError, match="step must be a function"):
        deep.data_parallel(3)


def test_data_parallel_on_the_default_devices():
    """On this machine's own devices (one CPU here, the GPU in benchmarks/gpu_check.sh), in float32:
    the data-parallel step with triplets, batch-hard mining and a memory gives the jitted step's result."""
    import jax
    import jax.numpy as jnp

    from jaxdml.losses import deep

    n = jax.device_count()
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16 * n, 6)).astype(np.float32)
    y = np.arange(16 * n) % 4

    def step(W, x, y, mem):
        def objective(W):
            return deep.memory_loss(functools.partial(deep.triplet_margin, miner=deep.batch_hard), x @ W, y, mem)

        (value, mem), g = jax.value_and_grad(objective, has_aux=True)(W)
        return W - 0.05 * g, mem, value

    W0 = jnp.asarray(0.5 * rng.normal(size=(6, 3)), jnp.float32)
    results = []
    for run in (jax.jit(step), deep.data_parallel(step, batch_argnums=(1, 2))):
        W, mem = W0, deep.memory_init(48 * n, 3, dtype=jnp.float32)
        values = []
        for _ in range(3):
            W, mem, v = run(W, x, y, mem)
            values.append(float(v))
        results.append((np.asarray(W), np.asarray(mem.embeddings), values))
    (W1, M1, v1), (W2, M2, v2) = results
    np.testing.assert_allclose(W2, W1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(M2, M1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(v2, v1, rtol=1e-4)
    assert v1[-1] < v1[0]
