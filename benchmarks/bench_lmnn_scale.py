"""LMNN at scale: the default (active set of impostors) against the exact full-batch objective,
metric-learn's LMNN, the former sampled minibatch path and Euclidean.

Three parts, each (method, data set, fold) in a fresh process (compilation included in the time):

* ``keel``: the shared KEEL data sets with at least 4 000 samples, DOB-SCV folds (``--folds``,
  default fold 1 only), min-max scaled per training fold, 3-NN test accuracy;
* ``synthetic``: ``--n`` x ``--features``, ``--classes`` classes (default 20 000 x 16, 26
  classes, letter-like: ``make_classification`` with seed 0, 5d/8 informative, d/4 redundant and
  d/8 noise features, one cluster per class, class_sep 2; 90/10 train/test, min-max scaled on
  train; Euclidean 3-NN about 0.92), accuracy, time, peak RSS;
* ``epoch``: the active-set solver (forced: the default uses it up to 100 000 samples) on the
  synthetic data at ``--sizes`` (e.g. 200000,1000000) x 32 features, 10 classes, with
  ``max_iter`` set to one refresh period (target search, scale, two impostor searches and 50
  full-batch L-BFGS steps, each visiting every anchor's terms: 50 epochs), reporting wall and
  CPU time and peak RSS. Above 100 000 samples each refresh searches one 25 000-row reference
  chunk (all anchors against those rows), so the two searches cover 50 000 references.

    python benchmarks/bench_lmnn_scale.py keel --datasets twonorm,ring --folds 1 --timeout 900
    python benchmarks/bench_lmnn_scale.py synthetic
    python benchmarks/bench_lmnn_scale.py epoch --sizes 200000

Methods (``--methods``): ``default`` (``jaxdml.LMNN()``), ``exact`` (``optimizer="lbfgs",
max_iter=200``: L-BFGS on the full objective, no sampling), ``sampled`` (``optimizer="adam"``: the
former large-data path, minibatch Adam with sampled impostors), ``euclidean``, ``metric_learn``
(``metric_learn.LMNN(n_neighbors=3)``, run under ``--timeout``; a timeout is recorded as such),
``active`` (the active-set solver at any size).
Prints one JSON document and a Markdown table; ``--out`` also writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, metric_learn_compat, peak_rss_mb, run_worker, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEL = os.environ.get("JAXDML_KEEL", os.path.join(os.path.dirname(ROOT), "shared", "keel"))
LARGE_SETS = ["optdigits", "satimage", "page-blocks", "phoneme", "ring", "twonorm", "thyroid", "spambase", "banana"]
METHODS = ["default", "exact", "metric_learn", "euclidean"]


def keel_fold(name: str, fold: int):
    """Training and test partitions of ``fold`` (10-fold when available, else 5-fold), min-max
    scaled on the training part."""
    from jaxdml.datasets import load_keel

    kind = "10" if os.path.isdir(os.path.join(KEEL, "10-fold", name)) else "5"
    base = os.path.join(KEEL, f"{kind}-fold", name, f"{name}-{kind}dobscv-{fold}")
    Xtr, ytr, _ = load_keel(base + "tra.dat")
    Xte, yte, _ = load_keel(base + "tst.dat")
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    return (Xtr - lo) / scale, ytr, (Xte - lo) / scale, yte, f"{kind}-fold"


def synthetic(n: int, d: int, classes: int, seed: int = 0):
    """``make_classification`` (fixed seed), 90 % train / 10 % test, min-max scaled on train."""
    from sklearn.datasets import make_classification

    n_test = n // 9
    X, y = make_classification(n_samples=n + n_test, n_features=d, n_informative=max(2, (5 * d) // 8),
                               n_redundant=d // 4, n_classes=classes, n_clusters_per_class=1,
                               class_sep=2.0, random_state=seed)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    return (Xtr - lo) / scale, ytr, (Xte - lo) / scale, yte


def knn_accuracy(Ztr, ytr, Zte, yte, k=3):
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(k).fit(Ztr, ytr).score(Zte, yte))


def fit_method(method: str, Xtr, ytr, max_iter=None):
    """Return ``(transform, info)``."""
    import jaxdml

    if method == "euclidean":
        return (lambda X: X), {}
    if method == "metric_learn":
        metric_learn_compat()
        import metric_learn

        est = metric_learn.LMNN(n_neighbors=3, random_state=0).fit(Xtr, ytr)
        return est.transform, {"n_iter": int(getattr(est, "n_iter_", -1))}
    if method == "active":  # the active-set solver at any size (the default stops at max_n samples)
        from jaxdml.solvers._lmnn_active import ACTIVE_SET_DEFAULTS

        ACTIVE_SET_DEFAULTS["max_n"] = float("inf")
        method = "default"
    kw = {"default": {}, "exact": dict(optimizer="lbfgs", max_iter=200), "sampled": dict(optimizer="adam")}[method]
    if max_iter is not None:
        kw["max_iter"] = max_iter
    est = jaxdml.LMNN(**kw).fit(Xtr, ytr)
    m = est.result_
    info = dict(n_iter=m.n_iter, converged=m.converged, loss=m.loss,
                refreshes=m.info.get("refreshes"), pairs=(m.info.get("active_pairs") or [None])[-1],
                full_searches=m.info.get("full_searches"), backtracks=m.info.get("backtracks"),
                setup_s=m.info.get("setup_seconds"), solve_s=m.info.get("solve_seconds"))
    return est.transform, info


def worker(args):
    import jax

    warnings.simplefilter("ignore")
    if args.part == "keel":
        Xtr, ytr, Xte, yte, kind = keel_fold(args.dataset, args.fold)
    else:
        Xtr, ytr, Xte, yte = synthetic(args.n, args.features, args.classes)
        kind = "synthetic"
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = ru.ru_utime + ru.ru_stime
    t0 = time.perf_counter()
    tf, info = fit_method(args.method, Xtr, ytr, max_iter=args.max_iter)
    Ztr = np.asarray(tf(Xtr))
    fit_s = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out = dict(fit_s=fit_s, cpu_s=ru.ru_utime + ru.ru_stime - cpu0, load_avg_1min=os.getloadavg()[0],
               n_train=len(Xtr), n_features=Xtr.shape[1],
               n_classes=len(np.unique(ytr)),
               partition=kind, peak_rss_mb=peak_rss_mb(), device=str(jax.devices()[0]), **info)
    if args.part != "epoch":
        nt = min(len(Xte), 20000)
        out["accuracy"] = knn_accuracy(Ztr, ytr, np.asarray(tf(Xte[:nt])), yte[:nt])
    print(json.dumps(out, default=float))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("part", choices=["keel", "synthetic", "epoch"])
    p.add_argument("--datasets", default=",".join(LARGE_SETS))
    p.add_argument("--folds", default="1", help="comma-separated fold numbers (1-based)")
    p.add_argument("--methods", default=None)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per reference run")
    p.add_argument("--jaxdml-timeout", type=float, default=1800.0)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--classes", type=int, default=26)
    p.add_argument("--sizes", default="200000")
    p.add_argument("--out", default=None)
    p.add_argument("--worker", action="store_true")
    p.add_argument("--dataset", default=None)
    p.add_argument("--fold", type=int, default=1)
    p.add_argument("--method", default=None)
    p.add_argument("--max-iter", type=int, default=None)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)
    script = os.path.abspath(__file__)
    env = {"PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    rows = []

    def run(method, extra, label):
        timeout = args.timeout if method == "metric_learn" else args.jaxdml_timeout
        res = run_worker(script, [args.part, "--method", method, *extra], timeout, env)
        res.update(label, method=method)
        rows.append(res)
        print(json.dumps(res, default=float), file=sys.stderr, flush=True)

    if args.part == "keel":
        methods = (args.methods or ",".join(METHODS)).split(",")
        for name in args.datasets.split(","):
            for fold in [int(f) for f in args.folds.split(",")]:
                for method in methods:
                    run(method, ["--dataset", name, "--fold", str(fold)], dict(data=name, fold=fold))
    elif args.part == "synthetic":
        methods = (args.methods or "default,exact,euclidean").split(",")
        for method in methods:
            run(method, ["--n", str(args.n), "--features", str(args.features), "--classes", str(args.classes)],
                dict(data=f"synthetic {args.n}x{args.features}, {args.classes} classes"))
    else:
        from jaxdml.solvers._lmnn_active import ACTIVE_SET_DEFAULTS

        for n in [int(s) for s in args.sizes.split(",")]:
            run("active", ["--n", str(n), "--features", "32", "--classes", "10",
                            "--max-iter", str(ACTIVE_SET_DEFAULTS["refresh_every"])],
                dict(data=f"synthetic {n}x32 (one refresh period)"))
    cols = [("data", "data", ""), ("fold", "fold", "d"), ("method", "method", ""), ("status", "status", ""),
            ("accuracy", "3-NN acc", ".4f"), ("fit_s", "fit s", ".1f"), ("cpu_s", "CPU s", ".1f"),
            ("wall", "wall s", ".1f"),
            ("load_avg_1min", "load", ".1f"), ("n_iter", "iters", "d"), ("full_searches", "searches", ".2f"),
            ("converged", "conv", ""), ("refreshes", "refreshes", "d"),
            ("pairs", "active pairs", "d"), ("peak_rss_mb", "peak RSS MiB", ".0f")]
    payload = dict(machine=machine(), part=args.part, rows=rows)
    print(json.dumps(payload, indent=1, default=float))
    print(markdown_table(rows, cols))
    if args.out:
        write_json(args.out, payload)


if __name__ == "__main__":
    main()
