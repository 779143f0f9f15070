"""Kernel methods with and without dense eigensolves: KDA, KANMM, KDMLMJ, KLLDA on digits.

Data: scikit-learn's digits, min-max scaled, the first 1617 rows (the size of a 10-fold training
part), RBF kernel (gamma = 1/64). For every (method, eigensolver) a fresh process measures the first
fit (compilation included, import excluded) and the warm fit (best of two more), with
``n_components=10`` (KDA: 9, its maximum) and ``eigen_solver`` "dense" or "truncated"; the largest
principal angle between the truncated and the dense embeddings of the training points is reported.
Also: the full-dimension fit (``n_components=None``, the dense path) next to one dense ``eigh`` of the
same size (n x n, float64, warm).

    python benchmarks/bench_kernels.py
    python benchmarks/bench_kernels.py --methods kanmm --n 800

Prints a Markdown table and writes JSON (default benchmarks/results/kernels.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, run_worker, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ("kda", "kanmm", "kdmlmj", "kllda")


def _data(n):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return X[:n], y[:n]


def worker(method, solver, n):
    import jaxdml

    X, y = _data(n)
    kw = dict(n_components=9 if method == "kda" else 10)
    if solver == "full":
        kw = {}
    elif method != "kda":
        kw["eigen_solver"] = solver
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = jaxdml.fit(X, y, loss=method, **kw)
        first = time.perf_counter() - t0
        warm = []
        for _ in range(2):
            t0 = time.perf_counter()
            res = jaxdml.fit(X, y, loss=method, **kw)
            warm.append(time.perf_counter() - t0)
    K = jaxdml.kernels.kernel_matrix(X, kernel="rbf", gamma=1.0 / X.shape[1])
    np.save(os.path.join(os.environ["BENCH_TMP"], f"{method}-{solver}.npy"), K @ np.asarray(res.L).T)
    how = res.info.get("eigen_solver", {"solver": "dense"}) if isinstance(res.info, dict) else {}
    return dict(first=first, warm=min(warm), solver_used=str(how.get("solver", "dense")))


def eigh_worker(n):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    A = rng.normal(size=(n, n))
    A = jnp.asarray(A @ A.T)
    f = jax.jit(jnp.linalg.eigh)
    f(A)[0].block_until_ready()
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        f(A)[0].block_until_ready()
        times.append(time.perf_counter() - t0)
    return dict(warm=min(times))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", action="store_true")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--n", type=int, default=1617)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "kernels.json"))
    args, rest = p.parse_known_args(argv)
    if args.worker:
        method, solver = rest
        out = eigh_worker(args.n) if method == "eigh" else worker(method, solver, args.n)
        print(json.dumps(out))
        return
    import tempfile

    import scipy.linalg as sla

    tmp = tempfile.mkdtemp(prefix="bench_kernels_")
    env = {"BENCH_TMP": tmp}
    rows = []
    eigh = run_worker(__file__, ["--n", str(args.n), "eigh", "-"], args.timeout, env)
    rows.append(dict(method="one dense eigh (n x n)", solver="-", warm=eigh.get("warm"), status=eigh["status"]))
    for method in args.methods.split(","):
        solvers = ("dense",) if method == "kda" else ("dense", "truncated", "full")
        for solver in solvers:
            r = run_worker(__file__, ["--n", str(args.n), method, solver], args.timeout, env)
            row = dict(method=method, solver=solver if solver != "full" else "full dimension (dense)", **r)
            if solver == "truncated" and r["status"] == "ok":
                E0 = np.load(os.path.join(tmp, f"{method}-dense.npy"))
                E1 = np.load(os.path.join(tmp, f"{method}-truncated.npy"))
                row["max_angle_deg"] = float(np.degrees(sla.subspace_angles(E0, E1)).max())
            if solver == "full" and eigh.get("warm"):
                row["vs_one_eigh"] = r.get("warm", np.nan) / eigh["warm"]
            rows.append(row)
            print(f"{method} {solver}: {r}", file=sys.stderr, flush=True)
    cols = [("method", "method", ""), ("solver", "eigensolver", ""), ("solver_used", "ran", ""),
            ("status", "status", ""), ("first", "first fit s", ".3f"), ("warm", "warm fit s", ".3f"),
            ("max_angle_deg", "max angle to dense (deg)", ".2e"), ("vs_one_eigh", "warm / one eigh", ".2f")]
    print(markdown_table(rows, cols))
    write_json(args.out, {"machine": machine(), "n": args.n, "results": rows})
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
