"""Scale benchmark: NCA and LMNN on synthetic data (make_classification, d = 32, 10 classes) at
growing N, with the references at the sizes where they still run.

For each (method, N) a fresh process generates N training and N/9 held-out samples (90/10),
fits, and reports: setup time (problem building: targets, compilation), time per epoch (training
time / epochs), time to reach 95 % of the final training-objective decrease (from the per-step
minibatch losses, smoothed over a quarter epoch), peak resident memory, and 3-NN accuracy on (up
to 10 000 of) the held-out samples, searched exactly and blockwise with ``jaxdml.neighbors``.
References get ``--timeout`` seconds and ``--memory-limit`` GiB of address space; a timeout or
an out-of-memory error is recorded as such.

    python benchmarks/bench_scale.py                          # N = 10k, 50k, 200k, 1M
    python benchmarks/bench_scale.py --sizes 10000 --epochs 3 --methods jaxdml-NCA,sklearn-NCA
    python benchmarks/bench_scale.py --device gpu --features 64 --sizes 1000000
    python benchmarks/bench_scale.py --defaults --sizes 20000 --features 16 --classes 26   # default path
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
from _harness import machine, markdown_table, metric_learn_compat, peak_rss_mb, run_worker, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = {
    "jaxdml-NCA": ("NCA", "jaxdml"),
    "jaxdml-LMNN": ("LMNN", "jaxdml"),
    "sklearn-NCA": ("NCA", "scikit-learn"),
    "metric_learn-NCA": ("NCA", "metric-learn"),
    "metric_learn-LMNN": ("LMNN", "metric-learn"),
    "mlpack-NCA": ("NCA", "mlpack"),
    "mlpack-LMNN": ("LMNN", "mlpack"),
}


def make_data(n, d, seed=0, n_classes=10):
    from sklearn.datasets import make_classification

    n_test = n // 9
    X, y = make_classification(n_samples=n + n_test, n_features=d, n_informative=d // 2,
                               n_redundant=d // 4, n_classes=n_classes, n_clusters_per_class=2,
                               class_sep=1.0, random_state=seed)
    X = X.astype(np.float32)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    return (Xtr - lo) / scale, ytr, (Xte - lo) / scale, yte


def knn_accuracy(Ztr, ytr, Zte, yte, k=3, max_test=10000):
    from jaxdml.neighbors import knn_search

    Zte, yte = Zte[:max_test], yte[:max_test]
    idx, _ = knn_search(Zte, k, Y=Ztr)
    votes = ytr[idx]
    pred = np.array([np.bincount(v, minlength=ytr.max() + 1).argmax() for v in votes])
    return float(np.mean(pred == yte))


def time_to_fraction(hist, spe, frac=0.95):
    """First step at which the smoothed loss achieved ``frac`` of its total decrease."""
    h = np.asarray(hist, dtype=float)
    h = h[np.isfinite(h)]
    if h.size < 2:
        return None
    w = max(1, spe // 4)
    sm = np.convolve(h, np.ones(w) / w, mode="valid")
    start, end = sm[0], sm[-1]
    if not start > end:
        return None
    hit = np.flatnonzero(sm <= start - frac * (start - end))
    return int(hit[0] + w) if hit.size else None


def worker(method, n, d, epochs, batch, n_classes=10, defaults=False):

    Xtr, ytr, Xte, yte = make_data(n, d, n_classes=n_classes)
    fam, lib = METHODS[method]
    out = dict(n=n, d=d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if lib == "jaxdml" and defaults:
            # the estimator exactly as a user calls it: default settings pick the path; the time
            # includes compilation (fresh process, no persistent cache)
            import jaxdml

            t0 = time.perf_counter()
            est = (jaxdml.NCA() if fam == "NCA" else jaxdml.LMNN()).fit(Xtr, ytr)
            out.update(fit_s=time.perf_counter() - t0, n_iter=int(est.n_iter_))
            L = est.components_
            Ztr, Zte = Xtr @ L.T, Xte @ L.T
        elif lib == "jaxdml":
            import jaxdml

            loss = "nca" if fam == "NCA" else "lmnn"
            spe = -(-n // batch)
            steps = epochs * spe
            # a 1-step fit compiles the training loop; the timed fit then reports how long it
            # spent building the problem (targets, impostor bookkeeping) and training
            t0 = time.perf_counter()
            jaxdml.fit(Xtr, ytr, loss=loss, max_iter=1, batch_size=batch)
            compile_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            m = jaxdml.fit(Xtr, ytr, loss=loss, max_iter=steps, batch_size=batch, tol=0.0)
            total = time.perf_counter() - t0
            train = m.info["solve_seconds"]
            per_step = train / max(m.n_iter, 1)
            hit = time_to_fraction(m.loss_history, spe)
            out.update(first_call_s=compile_s, setup_s=m.info["setup_seconds"], fit_s=total,
                       epochs=m.n_iter / spe, epoch_s=per_step * spe,
                       time_to_95_s=None if hit is None else hit * per_step,
                       n_candidates=m.info.get("n_candidates"))
            L = m.L
            Ztr, Zte = Xtr @ L.T, Xte @ L.T
        else:
            t0 = time.perf_counter()
            if method == "sklearn-NCA":
                from sklearn.neighbors import NeighborhoodComponentsAnalysis

                L = NeighborhoodComponentsAnalysis(random_state=0).fit(Xtr, ytr).components_
            elif method.startswith("metric_learn"):
                metric_learn_compat()
                import metric_learn

                est = metric_learn.NCA(random_state=0) if fam == "NCA" else metric_learn.LMNN(n_neighbors=3, random_state=0)
                L = est.fit(Xtr, ytr).components_
            else:
                import mlpack

                fn = mlpack.nca if fam == "NCA" else mlpack.lmnn
                kw = {} if fam == "NCA" else {"k": 3}
                L = np.asarray(fn(input_=Xtr.astype(np.float64), labels=ytr.astype(np.int64), seed=0, **kw)["output"])
            out.update(fit_s=time.perf_counter() - t0)
            Ztr, Zte = Xtr @ L.T, Xte @ L.T
    out["accuracy"] = knn_accuracy(Ztr, ytr, Zte, yte)
    out["euclidean_accuracy"] = knn_accuracy(Xtr, ytr, Xte, yte)
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="10000,50000,200000,1000000")
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--defaults", action="store_true",
                   help="fit jaxdml.NCA() / jaxdml.LMNN() with default settings (time includes compilation)")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds per run")
    p.add_argument("--memory-limit", type=float, default=20.0, help="GiB of address space for references")
    p.add_argument("--device", default=None, help="JAX platform for jaxdml: cpu, gpu, tpu")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "scale.json"))
    args = p.parse_args(argv)
    if args.worker:
        m, n, d, e, b, c, dflt = args.worker
        if not m.startswith("jaxdml"):
            import resource

            lim = int(float(os.environ.get("BENCH_MEMORY_LIMIT_GIB", "20")) * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        return worker(m, int(n), int(d), int(e), int(b), int(c), dflt == "1")
    env = {"BENCH_MEMORY_LIMIT_GIB": str(args.memory_limit)}
    if args.device:
        env["JAX_PLATFORMS"] = args.device
    rows, dead = [], set()
    for n in [int(s) for s in args.sizes.split(",")]:
        for method in args.methods.split(","):
            fam, lib = METHODS[method]
            if method in dead:  # failed at a smaller size: do not try larger ones
                rows.append(dict(method=method, family=fam, n=n, status="skipped (failed at a smaller N)"))
                continue
            res = run_worker(os.path.abspath(__file__),
                             [method, str(n), str(args.features), str(args.epochs), str(args.batch_size),
                              str(args.classes), "1" if args.defaults else "0"],
                             args.timeout, env)
            if res["status"] != "ok":
                if "MemoryError" in res["status"] or "memory" in res["status"].lower():
                    res["status"] = "out of memory"
                dead.add(method)
            rows.append({**dict(method=method, family=fam, n=n), **res})
            r = rows[-1]
            print(f"N={n:8d} {method:18s} {r['status']:10s} fit={r.get('fit_s', float('nan')):8.1f}s "
                  f"acc={r.get('accuracy', float('nan')):.4f}", file=sys.stderr, flush=True)
    cols = [("n", "N", "d"), ("method", "method", ""), ("status", "status", ""), ("setup_s", "setup s", ".1f"),
            ("epoch_s", "s / epoch", ".2f"), ("time_to_95_s", "s to 95% objective", ".1f"),
            ("fit_s", "fit s", ".1f"), ("peak_rss_mb", "peak RSS MiB", ".0f"), ("accuracy", "3-NN acc", ".4f"),
            ("euclidean_accuracy", "Euclidean acc", ".4f")]
    print(markdown_table(rows, cols))
    write_json(args.out, {"machine": machine(), "args": vars(args), "results": rows})
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
