"""Retrieval metrics at scale: ``jaxdml.retrieval.retrieval_scores`` on N queries against the same N rows
(each query excludes itself), blockwise on the device, never an N x N matrix; the per-query scores of a
random sample of queries are checked against a brute-force NumPy computation over all N references.

Data: N rows of dimension d in ``n_classes`` Gaussian clusters (noise of norm ~6 around centres of
norm ~3), so that the scores are far from 0 and 1. Reports the wall time of the call (first call,
compilation included, and a second call), the device, and the largest difference from the brute
force on the sample.

    python benchmarks/bench_retrieval.py --n 20000              # a CPU
    python benchmarks/bench_retrieval.py --n 100000,1000000     # a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, write_json  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_retrieval.json")


def make_data(n, d, n_classes, seed=0, noise=6.0):
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, d)).astype(np.float32) * (3.0 / np.sqrt(d))
    y = rng.integers(0, n_classes, size=n)
    X = centres[y] + rng.normal(size=(n, d)).astype(np.float32) * (noise / np.sqrt(d))
    return X.astype(np.float32), y


def brute_force(X, y, queries, ks, max_r):
    """Per-query scores of the sampled queries against every row, NumPy, float64 distances."""
    import numpy as np

    counts = np.bincount(y)
    out = []
    X = X.astype(np.float64)
    sq = np.einsum("ij,ij->i", X, X)
    for q in queries:
        d = sq + sq[q] - 2.0 * (X @ X[q])
        d[q] = np.inf
        order = np.argsort(d, kind="stable")[:-1]
        hits = (y[order] == y[q]).astype(float)
        r = min(counts[y[q]] - 1, max_r) if max_r else counts[y[q]] - 1
        if r == 0:
            out.append([np.nan] * (3 + len(ks)))
            continue
        prec = np.cumsum(hits[:r]) / np.arange(1, r + 1)
        out.append([hits[0], hits[:r].sum() / r, (hits[:r] * prec).sum() / r] + [hits[:k].max() for k in ks])
    return np.asarray(out)


def run(n, d, n_classes, ks, max_r, sample, seed=0):
    import numpy as np

    from jaxdml.retrieval import retrieval_scores

    X, y = make_data(n, d, n_classes, seed)
    t0 = time.perf_counter()
    s = retrieval_scores(X, y, k=ks, max_r=max_r, per_query=True)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    retrieval_scores(X, y, k=ks, max_r=max_r)
    second = time.perf_counter() - t0
    queries = np.random.default_rng(seed + 1).choice(n, size=min(sample, n), replace=False)
    names = ["precision_at_1", "r_precision", "map_at_r", *[f"recall_at_{k}" for k in ks]]
    ours = np.stack([s["per_query"][name][queries] for name in names], axis=1)
    ref = brute_force(X, y, queries, ks, max_r)
    # float32 distances on the device: a near tie may swap two neighbours, so report, don't hide, the differences
    diff = np.nanmax(np.abs(ours - ref)) if len(queries) else 0.0
    row = dict(n=n, d=d, n_classes=n_classes, max_r=max_r, first_call_s=first, second_call_s=second,
               precision_at_1=s["precision_at_1"], r_precision=s["r_precision"], map_at_r=s["map_at_r"],
               sample=len(queries), max_abs_diff_vs_brute_force=float(diff),
               queries_differing=int(np.sum(np.nanmax(np.abs(ours - ref), axis=1) > 1e-6)))
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="20000", help="comma-separated numbers of rows")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--class-size", type=int, default=100, help="mean rows per class")
    ap.add_argument("--max-r", type=int, default=None)
    ap.add_argument("--sample", type=int, default=200, help="queries checked against brute force")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    rows = []
    for n in (int(v) for v in args.n.split(",")):
        rows.append(run(n, args.d, max(n // args.class_size, 1), (1, 10), args.max_r, args.sample))
    print(markdown_table(rows, [("n", "queries = references", "d"), ("d", "dim", "d"), ("n_classes", "classes", "d"),
                                ("first_call_s", "first call (s)", ".2f"), ("second_call_s", "second call (s)", ".2f"),
                                ("precision_at_1", "P@1", ".4f"), ("map_at_r", "MAP@R", ".4f"),
                                ("max_abs_diff_vs_brute_force", "max diff vs brute force", ".2g"),
                                ("queries_differing", "differing / sample", "d")]))
    write_json(args.out, dict(machine=machine(), rows=rows))


if __name__ == "__main__":
    main()
