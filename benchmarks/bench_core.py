"""Core benchmark: NCA and LMNN, jaxdml vs scikit-learn, metric-learn and mlpack.

For each (method, dataset) a fresh process runs the 10-fold protocol (stratified, seed 0, min-max
scaling per training fold, 3-NN on the learned embedding): the first fit includes JAX's compile
time, a final refit of the same shape shows the warm cost. References that are not installed are
reported as such; slow ones are stopped at ``--timeout``.

    python benchmarks/bench_core.py                       # wine and digits, all methods
    python benchmarks/bench_core.py --datasets digits --timeout 900 --out results/core.json

Prints a Markdown table and writes JSON (default benchmarks/results/core.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import cv_protocol, machine, markdown_table, metric_learn_compat, run_worker, write_json  # noqa: E402

METHODS = {
    # name: (family, library)
    "jaxdml-NCA": ("NCA", "jaxdml"),
    "sklearn-NCA": ("NCA", "scikit-learn"),
    "metric_learn-NCA": ("NCA", "metric-learn"),
    "mlpack-NCA": ("NCA", "mlpack"),
    "jaxdml-LMNN": ("LMNN", "jaxdml"),
    "metric_learn-LMNN": ("LMNN", "metric-learn"),
    "mlpack-LMNN": ("LMNN", "mlpack"),
}


def load(name):
    from jaxdml.datasets import load_dataset

    return load_dataset(name)


def make_fit(method):
    import numpy as np

    if method == "jaxdml-NCA" or method == "jaxdml-LMNN":
        import jaxdml

        loss = "nca" if method.endswith("NCA") else "lmnn"

        def fit(Xtr, ytr, pad):
            return jaxdml.fit(Xtr, ytr, loss=loss, pad_to=pad).transform
        return fit
    if method == "sklearn-NCA":
        from sklearn.neighbors import NeighborhoodComponentsAnalysis

        return lambda Xtr, ytr, pad: NeighborhoodComponentsAnalysis(random_state=0).fit(Xtr, ytr).transform
    if method.startswith("metric_learn"):
        metric_learn_compat()
    if method == "metric_learn-NCA":
        from metric_learn import NCA

        return lambda Xtr, ytr, pad: NCA(random_state=0).fit(Xtr, ytr).transform
    if method == "metric_learn-LMNN":
        from metric_learn import LMNN

        return lambda Xtr, ytr, pad: LMNN(n_neighbors=3, random_state=0).fit(Xtr, ytr).transform
    if method == "mlpack-NCA":
        import mlpack

        def fit(Xtr, ytr, pad):
            codes = np.unique(ytr, return_inverse=True)[1].astype(np.int64)
            L = np.asarray(mlpack.nca(input_=Xtr, labels=codes, seed=0)["output"])
            return lambda Z: Z @ L.T
        return fit
    if method == "mlpack-LMNN":
        import mlpack

        def fit(Xtr, ytr, pad):
            codes = np.unique(ytr, return_inverse=True)[1].astype(np.int64)
            L = np.asarray(mlpack.lmnn(input_=Xtr, labels=codes, k=3, seed=0)["output"])
            return lambda Z: Z @ L.T
        return fit
    raise ValueError(method)


def worker(method, dataset, folds):
    X, y = load(dataset)
    res = cv_protocol(X, y, make_fit(method), n_splits=10, max_folds=folds)
    print(json.dumps(res), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=3, metavar=("METHOD", "DATASET", "FOLDS"), help=argparse.SUPPRESS)
    p.add_argument("--datasets", default="wine,digits")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--folds", type=int, default=10, help="evaluate only the first FOLDS of the 10 folds")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per (method, dataset)")
    p.add_argument("--device", default=None, help="JAX platform for jaxdml (cpu, gpu); default: JAX's choice")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "core.json"))
    args = p.parse_args(argv)
    if args.worker:
        m, d, f = args.worker
        return worker(m, d, int(f))
    env = {"JAX_PLATFORMS": args.device} if args.device else {}
    rows = []
    for dataset in args.datasets.split(","):
        for method in args.methods.split(","):
            family, lib = METHODS[method]
            res = run_worker(os.path.abspath(__file__), [method, dataset, str(args.folds)], args.timeout, env)
            rows.append(dict(dataset=dataset, family=family, method=method, library=lib, **res))
            r = rows[-1]
            print(f"{dataset:8s} {method:20s} {r.get('status')} total={r.get('total_fit', float('nan')):.2f}s "
                  f"acc={r.get('accuracy', float('nan')):.4f}", file=sys.stderr, flush=True)
    # ratios against the fastest finished reference of the same family and dataset
    for r in rows:
        if r["library"] != "jaxdml" or r.get("status") != "ok":
            continue
        refs = [q for q in rows if q["dataset"] == r["dataset"] and q["family"] == r["family"]
                and q["library"] != "jaxdml" and q.get("status") == "ok"]
        if refs:
            best = min(refs, key=lambda q: q["total_fit"])
            r["fastest_reference"] = best["method"]
            r["speedup_total"] = best["total_fit"] / r["total_fit"]
            r["speedup_first_fit"] = best["first_fit"] / r["first_fit"]
            r["accuracy_minus_reference"] = r["accuracy"] - best["accuracy"]
    cols = [("dataset", "dataset", ""), ("method", "method", ""), ("status", "status", ""),
            ("accuracy", "3-NN acc (10-fold)", ".4f"), ("first_fit", "first fit s (incl. compile)", ".3f"),
            ("warm_fit", "warm refit s", ".3f"), ("total_fit", "all folds s", ".2f"),
            ("speedup_total", "speed-up vs fastest ref (all folds)", ".2f"),
            ("speedup_first_fit", "speed-up (first fit)", ".2f"),
            ("accuracy_minus_reference", "acc - ref", "+.4f")]
    print(markdown_table(rows, cols))
    write_json(args.out, {"machine": machine(), "folds": args.folds, "results": rows})
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
