"""Retrieval metrics at scale: ``jaxdml.retrieval.retrieval_scores`` on N queries against the same N rows
(each query excludes itself), or with ``--references M`` against a separate gallery of M rows (a
query/gallery split), blockwise on the device, never a queries x references matrix; the per-query
scores of a random sample of queries are checked against a brute-force NumPy computation over all
the references.

Data: N rows of dimension d in ``n_classes`` Gaussian clusters (noise of norm ~6 around centres of
norm ~3), so that the scores are far from 0 and 1. Reports the wall time of the call (first call,
compilation included, and a second call), the device, and the largest difference from the brute
force on the sample.

    python benchmarks/bench_retrieval.py --n 20000              # a CPU
    python benchmarks/bench_retrieval.py --n 100000,1000000     # a GPU
    python benchmarks/bench_retrieval.py --n 1000000 --references 20000 --d 64 --one-call   # 10^6 queries, a CPU
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, peak_rss_mb, write_json  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_retrieval.json")


def make_data(n, d, n_classes, seed=0, noise=6.0):
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, d)).astype(np.float32) * (3.0 / np.sqrt(d))
    y = rng.integers(0, n_classes, size=n)
    X = centres[y] + rng.normal(size=(n, d)).astype(np.float32) * (noise / np.sqrt(d))
    return X.astype(np.float32), y


def brute_force(X, y, queries, ks, max_r, gallery=None):
    """Per-query scores of the sampled queries (rows of ``X``) against every row of ``X`` but the
    query itself, or against every row of ``gallery = (G, g)``; NumPy, float64 distances."""
    import numpy as np

    G, g = (X, y) if gallery is None else gallery
    counts = np.bincount(g, minlength=int(max(y.max(), g.max())) + 1)
    own = 1 if gallery is None else 0  # a query found among its own references
    out = []
    X, G = X.astype(np.float64), G.astype(np.float64)
    sq = np.einsum("ij,ij->i", G, G)
    for q in queries:
        d = sq + X[q] @ X[q] - 2.0 * (G @ X[q])
        if own:
            d[q] = np.inf
        order = np.argsort(d, kind="stable")[:len(d) - own]
        hits = (g[order] == y[q]).astype(float)
        r = min(counts[y[q]] - own, max_r) if max_r else counts[y[q]] - own
        if r == 0:
            out.append([np.nan] * (3 + len(ks)))
            continue
        prec = np.cumsum(hits[:r]) / np.arange(1, r + 1)
        out.append([hits[0], hits[:r].sum() / r, (hits[:r] * prec).sum() / r] + [hits[:k].max() for k in ks])
    return np.asarray(out)


def run(n, d, n_classes, ks, max_r, sample, seed=0, n_references=None, second_call=True):
    import numpy as np

    from jaxdml.retrieval import retrieval_scores

    X, y = make_data(n + (n_references or 0), d, n_classes, seed)
    gallery = None
    if n_references:  # the gallery: the first rows of the same clusters; the queries: the rest
        gallery, (X, y) = (X[:n_references], y[:n_references]), (X[n_references:], y[n_references:])
    refs = gallery or (None, None)
    t0 = time.perf_counter()
    s = retrieval_scores(X, y, *refs, k=ks, max_r=max_r, per_query=True)
    first = time.perf_counter() - t0
    second = float("nan")
    if second_call:
        t0 = time.perf_counter()
        retrieval_scores(X, y, *refs, k=ks, max_r=max_r)
        second = time.perf_counter() - t0
    queries = np.random.default_rng(seed + 1).choice(n, size=min(sample, n), replace=False)
    names = ["precision_at_1", "r_precision", "map_at_r", *[f"recall_at_{k}" for k in ks]]
    ours = np.stack([s["per_query"][name][queries] for name in names], axis=1)
    ref = brute_force(X, y, queries, ks, max_r, gallery)
    # float32 distances on the device: a near tie may swap two neighbours, so report, don't hide, the differences
    diff = np.nanmax(np.abs(ours - ref)) if len(queries) else 0.0
    row = dict(n=n, references=n_references or n, d=d, n_classes=n_classes, max_r=max_r, first_call_s=first,
               second_call_s=second,
               precision_at_1=s["precision_at_1"], r_precision=s["r_precision"], map_at_r=s["map_at_r"],
               sample=len(queries), max_abs_diff_vs_brute_force=float(diff),
               queries_differing=int(np.sum(np.nanmax(np.abs(ours - ref), axis=1) > 1e-6)),
               peak_rss_mib=peak_rss_mb(), queries_x_references_gib=n * (n_references or n) * 4 / 2**30)
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="20000", help="comma-separated numbers of rows")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--class-size", type=int, default=100, help="mean reference rows per class")
    ap.add_argument("--references", type=int, default=None,
                    help="a separate gallery of this many rows (default: the queries are the references)")
    ap.add_argument("--max-r", type=int, default=None)
    ap.add_argument("--sample", type=int, default=200, help="queries checked against brute force")
    ap.add_argument("--one-call", action="store_true", help="time the first call only (large N)")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    rows = []
    for n in (int(v) for v in args.n.split(",")):
        n_classes = max((args.references or n) // args.class_size, 1)
        rows.append(run(n, args.d, n_classes, (1, 10), args.max_r, args.sample, n_references=args.references,
                        second_call=not args.one_call))
    print(markdown_table(rows, [("n", "queries", "d"), ("references", "references", "d"), ("d", "dim", "d"),
                                ("n_classes", "classes", "d"),
                                ("first_call_s", "first call (s)", ".2f"), ("second_call_s", "second call (s)", ".2f"),
                                ("precision_at_1", "P@1", ".4f"), ("map_at_r", "MAP@R", ".4f"),
                                ("peak_rss_mib", "peak RSS (MiB)", ".0f"),
                                ("queries_x_references_gib", "a full float32 matrix (GiB)", ".1f"),
                                ("max_abs_diff_vs_brute_force", "max diff vs brute force", ".2g"),
                                ("queries_differing", "differing / sample", "d")]))
    write_json(args.out, dict(machine=machine(), rows=rows))


if __name__ == "__main__":
    main()
