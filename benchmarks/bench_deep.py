"""Deep metric learning with jaxdml.losses.deep: step speed against hand-written jax.numpy, and retrieval
quality of small MLP embeddings against Euclidean and the linear metric learners.

Part ``speed``: one training step (value, gradient, Adam update; jitted, warm) of the triplet loss on
batch-hard triplets for a 256 x 128 batch of embeddings, written with ``deep.batch_hard`` +
``deep.triplet_margin`` and written by hand in ``jax.numpy`` (the same mathematics: hardest positive
and negative from the masked distance matrix). Two steps: the loss's gradient in the embeddings
themselves, and a step of a linear embedding ``X W`` (W 128 x 128) with Adam. Medians of interleaved
repeats, both measured in the same process; the ratio is the number to read. With ``--pml-python PYTHON`` (an
interpreter with torch and pytorch-metric-learning, e.g. a separate environment: ``pip install torch
pytorch-metric-learning``) PML's step of the same batch (``TripletMarginLoss`` on ``BatchHardMiner``'s triplets,
unnormalised Euclidean distances) is timed too, in a subprocess between the rounds.

Part ``train``: the digits (1797 rows, 64 features; 1200 train / 597 test) and a synthetic set of
20 000 rows (``make_classification``: 32 features, 10 informative, 20 classes of two clusters each;
15 000 train / 5 000 test). An MLP (in -> 128 -> 128 -> 32, ReLU, unit-normalised output; plain JAX,
optax Adam, P x K batches of 16 classes x 16 rows) is trained with three losses: triplet margin on
batch-hard and on semi-hard triplets, multi-similarity on the multi-similarity miner's pairs,
Proxy-Anchor (trainable proxies), and multi-similarity with its miner against a cross-batch memory
(``deep.memory_loss``, 2 048 slots, used after 1 000 steps on the batch alone or half the steps; batches from
``deep.PKSampler``, 16 classes x 16 rows). Retrieval on the test rows (each test row queries the other test rows): Recall@1 (=
precision@1), R-precision and MAP@R (``jaxdml.retrieval``), against the Euclidean distance and the
linear learners LDA, NCA and LMNN (``jaxdml.fit``, 32 components or fewer; on the synthetic set they
are fitted on ``--linear-rows`` training rows).

    python benchmarks/bench_deep.py --part speed [--pml-python /path/to/pml-env/bin/python]
    python benchmarks/bench_deep.py --part train [--datasets digits,synthetic] [--steps 2000] [--losses ...]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, page_head, update_docs_page, write_json  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_deep.json")


# ------------------------------------------------------------------------------------------ speed

def _hand_batch_hard_triplet(Z, y, margin):
    """Batch-hard triplet loss written directly in jax.numpy."""
    import jax.numpy as jnp

    sq = jnp.sum(Z * Z, axis=1)
    d2 = jnp.maximum(sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T, 0.0)
    D = jnp.where(d2 > 0, jnp.sqrt(jnp.where(d2 > 0, d2, 1.0)), 0.0)
    same = y[:, None] == y[None, :]
    pos = same & ~jnp.eye(y.shape[0], dtype=bool)
    hardest_pos = jnp.max(jnp.where(pos, D, -jnp.inf), axis=1)
    hardest_neg = jnp.min(jnp.where(~same, D, jnp.inf), axis=1)
    ok = jnp.any(pos, axis=1) & jnp.any(~same, axis=1)
    hinge = jnp.where(ok, jnp.maximum(margin + hardest_pos - hardest_neg, 0.0), 0.0)
    return jnp.sum(hinge) / jnp.maximum(jnp.sum(ok), 1)


def _library_batch_hard_triplet(Z, y, margin):
    from jaxdml.losses import deep

    return deep.triplet_margin(Z, y, triplets=deep.batch_hard(Z, y), margin=margin)


def _median_s(fn, args, repeats):
    import jax

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


#: one PML training step of the same batch, timed in PML's own environment (``--pml-python``): the triplet margin
#: loss on PML's batch-hard triplets, unnormalised Euclidean distances as jaxdml's; medians of ``repeats`` in ms
_PML_SPEED = """
import json, sys, time
import numpy as np, torch
from pytorch_metric_learning import distances, losses, miners
repeats = int(sys.argv[1])
rng = np.random.default_rng(0)
B, d = 256, 128
X = torch.tensor(rng.normal(size=(B, d)), dtype=torch.float32)
y = torch.tensor(np.repeat(np.arange(32), B // 32))
W0 = torch.tensor(rng.normal(size=(d, d)) / np.sqrt(d), dtype=torch.float32)
dist = distances.LpDistance(normalize_embeddings=False)
loss_fn, miner = losses.TripletMarginLoss(margin=0.2, distance=dist), miners.BatchHardMiner(distance=dist)
def embedding_step():
    Z = X.clone().requires_grad_(True)
    loss = loss_fn(Z, y, miner(Z, y))
    loss.backward()
    return float(loss)
W = W0.clone().requires_grad_(True)
opt = torch.optim.Adam([W], lr=1e-3)
def linear_step():
    opt.zero_grad()
    Z = X @ W
    loss = loss_fn(Z, y, miner(Z, y))
    loss.backward()
    opt.step()
    return float(loss)
out = {"torch": torch.__version__, "threads": torch.get_num_threads()}
for name, step in (("embedding gradient", embedding_step), ("linear model + Adam step", linear_step)):
    for _ in range(20):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    out[name] = 1e3 * sorted(times)[len(times) // 2]
print(json.dumps(out))
"""


def _pml_round(pml_python: str, repeats: int) -> dict:
    import subprocess

    r = subprocess.run([pml_python, "-c", _PML_SPEED, str(repeats)], capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise SystemExit(f"--pml-python: the PML timing failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _speed_steps(kind, X, y, W0, opt):
    """The jitted step of each implementation for one kind of step, its compile time and first value."""
    import jax
    import optax

    steps, compile_s, values = {}, {}, {}
    for name, loss in (("jaxdml.losses.deep", _library_batch_hard_triplet), ("hand-written jnp", _hand_batch_hard_triplet)):
        if kind == "embedding gradient":
            fn = jax.jit(jax.value_and_grad(lambda Z, loss=loss: loss(Z, y, 0.2)))
            args = (X,)
        else:
            def step(W, state, loss=loss):
                value, g = jax.value_and_grad(lambda W: loss(X @ W, y, 0.2))(W)
                updates, state = opt.update(g, state, W)
                return optax.apply_updates(W, updates), state, value

            fn = jax.jit(step)
            args = (W0, opt.init(W0))
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        compile_s[name] = time.perf_counter() - t0
        values[name] = float(out[0] if kind == "embedding gradient" else out[2])
        steps[name] = (fn, args)
    return steps, compile_s, values


def run_speed(repeats: int = 300, rounds: int = 5, pml_python: str | None = None) -> list[dict]:
    """Each kind of step by jaxdml and by hand, medians of interleaved rounds; with ``pml_python`` also PML's step,
    timed in a subprocess of that interpreter in each round (between the JAX rounds: the same machine load)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    rng = np.random.default_rng(0)
    B, d = 256, 128
    X = jnp.asarray(rng.normal(size=(B, d)), jnp.float32)
    y = jnp.asarray(np.repeat(np.arange(32), B // 32))
    W0 = jnp.asarray(rng.normal(size=(d, d)) / np.sqrt(d), jnp.float32)
    opt = optax.adam(1e-3)
    jax.block_until_ready(jax.jit(lambda A: A @ A.T)(X))  # start the backend before any timed compilation
    kinds = ("embedding gradient", "linear model + Adam step")
    built = {kind: _speed_steps(kind, X, y, W0, opt) for kind in kinds}
    med = {kind: {name: [] for name in built[kind][0]} for kind in kinds}
    pml = {kind: [] for kind in kinds}
    for _ in range(rounds):  # interleaved, so that all see the same machine load
        for kind in kinds:
            for name, (fn, args) in built[kind][0].items():
                med[kind][name].append(_median_s(fn, args, repeats))
        if pml_python:
            one = _pml_round(pml_python, repeats)
            for kind in kinds:
                pml[kind].append(one[kind] / 1e3)
    rows = []
    for kind in kinds:
        _, compile_s, values = built[kind]
        lib, hand = (float(np.median(med[kind][n])) for n in ("jaxdml.losses.deep", "hand-written jnp"))
        row = dict(step=kind, library_ms=1e3 * lib, hand_ms=1e3 * hand, ratio=lib / hand,
                   library_compile_s=compile_s["jaxdml.losses.deep"], hand_compile_s=compile_s["hand-written jnp"],
                   same_value=bool(np.isclose(values["jaxdml.losses.deep"], values["hand-written jnp"], rtol=1e-4)))
        if pml_python:
            row.update(pml_ms=1e3 * float(np.median(pml[kind])), pml_ratio=lib / float(np.median(pml[kind])))
        rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
    return rows


# ------------------------------------------------------------------------------------------ training

def load(name: str, seed: int = 0):
    import numpy as np
    from sklearn.datasets import load_digits, make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        train = 1200
    else:
        X, y = make_classification(n_samples=20000, n_features=32, n_informative=10, n_redundant=0, n_classes=20,
                                   n_clusters_per_class=2, class_sep=2.0, random_state=seed)
        train = 15000
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=train, stratify=y, random_state=seed)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr).astype(np.float32), sc.transform(Xte).astype(np.float32), ytr, yte


def init_mlp(key, sizes):
    import jax
    import numpy as np

    params = []
    for k, (m, n) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        params.append(dict(W=jax.random.normal(k, (m, n)) * np.sqrt(2.0 / m), b=jax.numpy.zeros(n)))
    return params


def mlp(params, X):
    import jax
    import jax.numpy as jnp

    for layer in params[:-1]:
        X = jax.nn.relu(X @ layer["W"] + layer["b"])
    Z = X @ params[-1]["W"] + params[-1]["b"]
    return Z / jnp.linalg.norm(Z, axis=1, keepdims=True)


def pk_batches(y, P, K, seed):
    """Endless P x K batches: P classes, K rows of each (with replacement when a class is small)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    members = {c: np.flatnonzero(y == c) for c in classes}
    while True:
        chosen = rng.choice(classes, size=min(P, len(classes)), replace=False)
        yield np.concatenate([rng.choice(members[c], size=K, replace=len(members[c]) < K) for c in chosen])


LOSSES = ("triplet + batch-hard", "triplet + semi-hard", "multi-similarity + MS miner", "proxy-anchor",
          "multi-similarity + MS miner + memory bank")
MEMORY_SLOTS = 2048
MEMORY_WARMUP = 1000  # steps on the batch alone before the memory is used (Wang et al. start it after 1k)


def loss_fn(name):
    from jaxdml.losses import deep

    if name == "triplet + batch-hard":
        return lambda p, Z, y: deep.triplet_margin(Z, y, miner=deep.batch_hard, margin=0.2)
    if name == "triplet + semi-hard":
        return lambda p, Z, y: deep.triplet_margin(Z, y, miner=deep.semi_hard, margin=0.2)
    if name == "multi-similarity + MS miner":
        return lambda p, Z, y: deep.multi_similarity(Z, y, miner=deep.multi_similarity_pairs)
    if name.endswith("memory bank"):  # (value, new memory): the batch against the memory's rows
        def against_memory(p, Z, y, memory):
            ms = functools.partial(deep.multi_similarity, miner=deep.multi_similarity_pairs)
            return deep.memory_loss(ms, Z, y, memory)

        return against_memory
    return lambda p, Z, y: deep.proxy_anchor(Z, y, p["proxies"])


def train_mlp(Xtr, ytr, name, *, steps, seed=0, dim=32, lr=1e-3):
    """Train the MLP with one loss; returns its parameters and the training seconds (compilation included)."""
    import jax
    import jax.numpy as jnp
    import optax

    key = jax.random.key(seed)
    params = dict(net=init_mlp(key, [Xtr.shape[1], 128, 128, dim]),
                  proxies=jax.random.normal(jax.random.fold_in(key, 1), (int(ytr.max()) + 1, dim)))
    opt = optax.adam(lr)
    state = opt.init(params)
    loss = loss_fn(name)
    if name.endswith("memory bank"):
        return _train_with_memory(Xtr, ytr, params, opt, state, loss, steps=steps, seed=seed, dim=dim)

    @jax.jit
    def step(params, state, X, y):
        value, g = jax.value_and_grad(lambda p: loss(p, mlp(p["net"], X), y))(params)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), state, value

    Xd, yd = jnp.asarray(Xtr), jnp.asarray(ytr)
    batches = pk_batches(ytr, 16, 16, seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        idx = jnp.asarray(next(batches))
        params, state, value = step(params, state, Xd[idx], yd[idx])
    jax.block_until_ready(params)
    return params, time.perf_counter() - t0


def _train_with_memory(Xtr, ytr, params, opt, state, loss, *, steps, seed, dim):
    """The training loop with a cross-batch memory in the jitted step's state, on PKSampler's batches."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from jaxdml.losses import deep

    @functools.partial(jax.jit, static_argnames="use")
    def step(params, state, memory, X, y, use):
        def objective(p):
            Z = mlp(p["net"], X)
            if use:
                return loss(p, Z, y, memory)
            return deep.multi_similarity(Z, y, miner=deep.multi_similarity_pairs), memory

        (value, memory), g = jax.value_and_grad(objective, has_aux=True)(params)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), state, memory, value

    Xd, yd = jnp.asarray(Xtr), jnp.asarray(ytr)
    memory = deep.memory_init(MEMORY_SLOTS, dim)
    sampler = deep.PKSampler(ytr, p=min(16, len(np.unique(ytr))), k=16, seed=seed, n_batches=steps)
    t0 = time.perf_counter()
    for i, idx in enumerate(sampler):
        idx = jnp.asarray(idx)
        params, state, memory, _ = step(params, state, memory, Xd[idx], yd[idx], use=i >= min(MEMORY_WARMUP, steps // 2))
    jax.block_until_ready(params)
    return params, time.perf_counter() - t0


def scores(Zte, yte):
    from jaxdml.retrieval import retrieval_scores

    s = retrieval_scores(Zte, yte, k=(1,))
    return dict(recall_at_1=s["recall_at_1"], r_precision=s["r_precision"], map_at_r=s["map_at_r"])


def run_train(dataset: str, steps: int, linear_rows: int, seed: int = 0, losses=LOSSES, linear=True) -> list[dict]:
    import numpy as np

    import jaxdml

    Xtr, Xte, ytr, yte = load(dataset, seed)
    rows = [dict(dataset=dataset, method="Euclidean", fit_s=0.0, **scores(Xte, yte))]
    print(json.dumps(rows[-1]), flush=True)
    sub = np.random.default_rng(seed).permutation(len(ytr))[:linear_rows]
    dim = min(32, Xtr.shape[1])
    for method, kw in (("LDA", {}), ("NCA", dict(n_components=dim)), ("LMNN", dict(n_components=dim)))[:3 * linear]:
        t0 = time.perf_counter()
        fitted = jaxdml.fit(Xtr[sub], ytr[sub], loss=method.lower(), random_state=seed, **kw)
        rows.append(dict(dataset=dataset, method=f"{method} (linear)", fit_s=time.perf_counter() - t0,
                         train_rows=len(sub), **scores(fitted.transform(Xte), yte)))
        print(json.dumps(rows[-1]), flush=True)
    for name in losses:
        params, seconds = train_mlp(Xtr, ytr, name, steps=steps, seed=seed)
        Zte = np.asarray(mlp(params["net"], Xte))
        rows.append(dict(dataset=dataset, method=f"MLP, {name}", fit_s=seconds, train_rows=len(ytr), **scores(Zte, yte)))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("speed", "train", "all"), default="all")
    ap.add_argument("--datasets", default="digits,synthetic")
    ap.add_argument("--steps", type=int, default=2000, help="MLP training steps (P x K batches of 256 rows)")
    ap.add_argument("--linear-rows", type=int, default=15000, help="training rows given to LDA/NCA/LMNN")
    ap.add_argument("--losses", default=",".join(LOSSES), help="the MLP losses to train, comma-separated")
    ap.add_argument("--no-linear", action="store_true", help="skip LDA/NCA/LMNN")
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--pml-python", default=None, metavar="PYTHON",
                    help="an interpreter with torch and pytorch-metric-learning: also time PML's step side by side")
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--update-docs", action="store_true",
                    help="write the tables into docs/benchmarks/deep.md (blocks deep-speed, deep-train)")
    args = ap.parse_args(argv)
    if args.update_docs:  # the page's blocks must exist before the run, not after it
        for block in ("deep-speed", "deep-train"):
            update_docs_page("deep", block, None)
    payload = dict(machine=machine())
    if args.part in ("speed", "all"):
        speed = run_speed(args.repeats, pml_python=args.pml_python)
        payload["speed"] = speed
        columns = [("step", "step (256 x 128, triplet + batch-hard)", ""), ("library_ms", "jaxdml (ms)", ".3f"),
                   ("hand_ms", "hand-written jnp (ms)", ".3f"), ("ratio", "ratio", ".2f")]
        if args.pml_python:
            columns += [("pml_ms", "PML (ms)", ".3f"), ("pml_ratio", "jaxdml / PML", ".2f")]
        columns += [("library_compile_s", "jaxdml compile (s)", ".2f"), ("hand_compile_s", "hand compile (s)", ".2f"),
                    ("same_value", "same value", "")]
        table = markdown_table(speed, columns)
        print(table)
        if args.update_docs:
            update_docs_page("deep", "deep-speed", f"{page_head(payload['machine'])}\n\n{table}")
    if args.part in ("train", "all"):
        train = []
        for dataset in args.datasets.split(","):
            losses = [n for n in args.losses.split(",") if n]
            unknown = sorted(set(losses) - set(LOSSES))
            if unknown:
                ap.error(f"unknown losses {unknown}; choose among {list(LOSSES)}")
            train += run_train(dataset, args.steps, args.linear_rows, losses=losses, linear=not args.no_linear)
        payload["train"] = train
        table = markdown_table(train, [("dataset", "data", ""), ("method", "method", ""),
                                       ("recall_at_1", "Recall@1", ".3f"), ("r_precision", "R-precision", ".3f"),
                                       ("map_at_r", "MAP@R", ".3f"), ("fit_s", "fit (s)", ".1f")])
        print(table)
        if args.update_docs:
            update_docs_page("deep", "deep-train", f"{page_head(payload['machine'])}\n\n{table}")
    write_json(args.out, payload)


if __name__ == "__main__":
    main()
