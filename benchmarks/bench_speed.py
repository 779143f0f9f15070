"""Speed benchmark (one train/test fold per dataset): jaxdml vs scikit-learn, metric-learn, mlpack.

Datasets: wine, optdigits (5620 x 64) and twonorm (7400 x 20) use fold 1 of their KEEL 10-fold
partitions (``--data``, default ../shared/keel); digits is scikit-learn's (stratified 90/10 split,
seed 0). Min-max scaling is fitted on the training part. For every (method, dataset) a fresh
process measures: the first fit (for jaxdml this includes compilation; with ``--cache`` JAX's
persistent cache is used and warmed by a previous process first), a second (warm) fit, the peak
resident memory of the process, and the 3-NN test accuracy. Ratios compare each jaxdml method with
the fastest reference of its family measured in the same invocation.

    python benchmarks/bench_speed.py                               # everything
    python benchmarks/bench_speed.py --datasets digits --methods jaxdml-NCA,sklearn-NCA
    python benchmarks/bench_speed.py --device gpu                  # jaxdml on a GPU
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


def _codes(y):
    return np.unique(y, return_inverse=True)[1].astype(np.int64)


def _jaxdml(loss, **kw):
    def fit(X, y):
        import jaxdml

        return jaxdml.fit(X, y, loss=loss, **kw).transform
    return fit


def _sk(cls_path, **kw):
    def fit(X, y):
        mod, name = cls_path.rsplit(".", 1)
        if mod == "metric_learn":
            metric_learn_compat()
        cls = getattr(__import__(mod, fromlist=[name]), name)
        return cls(**kw).fit(X, y).transform
    return fit


def _mlpack(name, **kw):
    def fit(X, y):
        import mlpack

        L = np.asarray(getattr(mlpack, name)(input_=X, labels=_codes(y), seed=0, **kw)["output"])
        return lambda Z: Z @ L.T
    return fit


# name: (family, library, factory)
METHODS = {
    "jaxdml-NCA": ("NCA", "jaxdml", lambda: _jaxdml("nca")),
    "sklearn-NCA": ("NCA", "scikit-learn", lambda: _sk("sklearn.neighbors.NeighborhoodComponentsAnalysis", random_state=0)),
    "metric_learn-NCA": ("NCA", "metric-learn", lambda: _sk("metric_learn.NCA", random_state=0)),
    "mlpack-NCA": ("NCA", "mlpack", lambda: _mlpack("nca")),
    "jaxdml-LMNN": ("LMNN", "jaxdml", lambda: _jaxdml("lmnn")),
    "metric_learn-LMNN": ("LMNN", "metric-learn", lambda: _sk("metric_learn.LMNN", n_neighbors=3, random_state=0)),
    "mlpack-LMNN": ("LMNN", "mlpack", lambda: _mlpack("lmnn", k=3)),
    "jaxdml-ITML": ("ITML", "jaxdml", lambda: _jaxdml("itml")),
    "metric_learn-ITML": ("ITML", "metric-learn", lambda: _sk("metric_learn.ITML_Supervised", random_state=0)),
    "jaxdml-LSI": ("LSI", "jaxdml", lambda: _jaxdml("lsi")),
    "metric_learn-MMC": ("LSI", "metric-learn", lambda: _sk("metric_learn.MMC_Supervised", random_state=0)),
    "jaxdml-PCA": ("PCA", "jaxdml", lambda: _jaxdml("pca")),
    "sklearn-PCA": ("PCA", "scikit-learn", lambda: _sk("sklearn.decomposition.PCA")),
    "jaxdml-LDA": ("LDA", "jaxdml", lambda: _jaxdml("lda")),
    "sklearn-LDA": ("LDA", "scikit-learn", lambda: _sk("sklearn.discriminant_analysis.LinearDiscriminantAnalysis")),
    "jaxdml-ANMM": ("ANMM", "jaxdml", lambda: _jaxdml("anmm")),
    "jaxdml-DMLMJ": ("DMLMJ", "jaxdml", lambda: _jaxdml("dmlmj")),
    "jaxdml-KDA": ("KDA", "jaxdml", lambda: _jaxdml("kda")),
    "jaxdml-KANMM": ("KANMM", "jaxdml", lambda: _jaxdml("kanmm")),
    "jaxdml-KDMLMJ": ("KDMLMJ", "jaxdml", lambda: _jaxdml("kdmlmj")),
    # no public reference package for these (pyDML is GPL and not a dependency)
    "jaxdml-NCMML": ("NCMML", "jaxdml", lambda: _jaxdml("ncmml")),
    "jaxdml-NCMC": ("NCMC", "jaxdml", lambda: _jaxdml("ncmc")),
    "jaxdml-MCML": ("MCML", "jaxdml", lambda: _jaxdml("mcml")),
    "jaxdml-LDML": ("LDML", "jaxdml", lambda: _jaxdml("ldml")),
    "jaxdml-DML_eig": ("DML_eig", "jaxdml", lambda: _jaxdml("dml_eig")),
    "jaxdml-KLMNN": ("KLMNN", "jaxdml", lambda: _jaxdml("klmnn")),
}
DATASETS = ("wine", "digits", "optdigits", "twonorm")


def load_split(name, data_dir):
    if name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        X, y = load_digits(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.1, stratify=y, random_state=0)
    else:
        from jaxdml.datasets import load_keel_folds

        Xtr, ytr, Xte, yte = load_keel_folds(data_dir, name, 10).folds[0]
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    return (Xtr - lo) / scale, ytr, (Xte - lo) / scale, yte


def worker(method, dataset, data_dir, cache):
    if cache:
        from jaxdml.compilation import enable_compilation_cache

        enable_compilation_cache(cache)
    from sklearn.neighbors import KNeighborsClassifier

    Xtr, ytr, Xte, yte = load_split(dataset, data_dir)
    fit = METHODS[method][2]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        tf = fit(Xtr, ytr)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        fit(Xtr, ytr)
        warm = time.perf_counter() - t0
    acc = KNeighborsClassifier(3).fit(tf(Xtr), ytr).score(tf(Xte), yte)
    print(json.dumps(dict(first_fit=first, warm_fit=warm, accuracy=acc, peak_rss_mb=peak_rss_mb(),
                          n_train=len(ytr), n_features=Xtr.shape[1])), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "keel"))
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--cache", default=None, help="persistent compilation cache dir (warmed by a first process)")
    p.add_argument("--device", default=None, help="JAX platform for jaxdml: cpu, gpu, tpu")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "speed.json"))
    args = p.parse_args(argv)
    if args.worker:
        m, d, data, cache = args.worker
        return worker(m, d, data, None if cache == "-" else cache)
    env = {"JAX_PLATFORMS": args.device} if args.device else {}
    rows = []
    for dataset in args.datasets.split(","):
        for method in args.methods.split(","):
            family, lib, _ = METHODS[method]
            wargs = [method, dataset, args.data, args.cache or "-"]
            if args.cache and lib == "jaxdml":  # a first process fills the cache
                run_worker(os.path.abspath(__file__), wargs, args.timeout, env)
            res = run_worker(os.path.abspath(__file__), wargs, args.timeout, env)
            rows.append(dict(dataset=dataset, family=family, method=method, library=lib, **res))
            r = rows[-1]
            print(f"{dataset:10s} {method:18s} {r['status']:8s} first={r.get('first_fit', float('nan')):8.3f}s "
                  f"acc={r.get('accuracy', float('nan')):.4f}", file=sys.stderr, flush=True)
    for r in rows:
        if r["library"] != "jaxdml" or r["status"] != "ok":
            continue
        refs = [q for q in rows if q["dataset"] == r["dataset"] and q["family"] == r["family"]
                and q["library"] != "jaxdml" and q["status"] == "ok"]
        if refs:
            best = min(refs, key=lambda q: q["first_fit"])
            r.update(fastest_reference=best["method"], speedup_first=best["first_fit"] / r["first_fit"],
                     speedup_warm=best["warm_fit"] / r["warm_fit"],
                     accuracy_minus_reference=r["accuracy"] - best["accuracy"])
    cols = [("dataset", "dataset", ""), ("method", "method", ""), ("status", "status", ""),
            ("n_train", "n", "d"), ("accuracy", "3-NN acc", ".4f"), ("first_fit", "first fit s", ".3f"),
            ("warm_fit", "warm fit s", ".3f"), ("peak_rss_mb", "peak RSS MiB", ".0f"),
            ("fastest_reference", "fastest ref", ""), ("speedup_first", "speed-up first", ".2f"),
            ("speedup_warm", "speed-up warm", ".2f"), ("accuracy_minus_reference", "acc - ref", "+.4f")]
    print(markdown_table(rows, cols))
    write_json(args.out, {"machine": machine(), "cache": args.cache, "results": rows})
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
