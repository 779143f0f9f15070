"""Accuracy of pyDML's algorithms in jaxdml: GMML, LLDA, KLLDA (metric learners) and IMLS (a classifier).

Metric learners (issue protocol): iris, wine, breast_cancer; 10-fold stratified CV (seed 0), min-max
scaling fitted per training fold, defaults, 3-NN accuracy on the embedding, next to Euclidean 3-NN.

IMLS: (a) wine, the same protocol, accuracy of ``jaxdml.IMLS()`` (default LMNN, 3-NN) vs Euclidean 3-NN;
(b) imbalanced KEEL data sets (``--keel``, comma-separated: page-blocks, thyroid, balance, ...; their 10
DOB-SCV folds from ``--data``, min-max per fold): balanced accuracy of Euclidean 3-NN, LMNN + 3-NN and IMLS
(LMNN inside; every LMNN with ``random_state=0``, so that two runs agree). ``--per-sample`` adds
``IMLS(per_sample=True)`` (the paper's procedure, one metric per test row and iteration: far slower) to
both.

    python benchmarks/bench_pydml.py                          # everything
    python benchmarks/bench_pydml.py --part metric            # GMML / LLDA / KLLDA only
    python benchmarks/bench_pydml.py --part imls --keel page-blocks --max-folds 10
    python benchmarks/bench_pydml.py --part imls --keel balance,wisconsin --per-sample

Prints Markdown tables and writes JSON (default benchmarks/results/pydml.json).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import cv_protocol, machine, markdown_table, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = ("iris", "wine", "breast_cancer")
METHODS = ("gmml", "llda", "kllda")


def metric_part(datasets):
    import jaxdml
    from jaxdml.datasets import load_dataset

    rows = []
    for dataset in datasets:
        X, y = load_dataset(dataset)
        base = None
        for loss in ("euclidean", *METHODS):
            def fit(Xtr, ytr, pad, loss=loss):
                return jaxdml.fit(Xtr, ytr, loss=loss).transform

            res = cv_protocol(np.asarray(X, float), y, fit)
            base = res["accuracy"] if loss == "euclidean" else base
            rows.append(dict(dataset=dataset, method=loss, accuracy=res["accuracy"],
                             vs_euclidean=res["accuracy"] - base, first_fit=res["first_fit"],
                             mean_fit=res["mean_fit"]))
            print(f"{dataset:14s} {loss:10s} acc={res['accuracy']:.4f}", file=sys.stderr, flush=True)
    return rows


def _imls_variants(per_sample):
    import jaxdml

    seeded = {"random_state": 0}  # LMNN with random_state=None draws its initial scale afresh every run
    out = {"IMLS (LMNN)": lambda: jaxdml.IMLS(learner_params=seeded)}
    if per_sample:
        out["IMLS per sample (LMNN)"] = lambda: jaxdml.IMLS(learner_params=seeded, per_sample=True)
    return out


def _imls_wine(per_sample=False):
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    from jaxdml.datasets import load_dataset

    X, y = load_dataset("wine")
    X = np.asarray(X, float)
    variants = _imls_variants(per_sample)
    accs = {"euclidean 3-NN": [], **{m: [] for m in variants}}
    secs = {m: 0.0 for m in accs}
    for tr, te in StratifiedKFold(10, shuffle=True, random_state=0).split(X, y):
        sc = MinMaxScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        accs["euclidean 3-NN"].append(KNeighborsClassifier(3).fit(Xtr, y[tr]).score(Xte, y[te]))
        for m, make in variants.items():
            t = time.perf_counter()
            accs[m].append(make().fit(Xtr, y[tr]).score(Xte, y[te]))
            secs[m] += time.perf_counter() - t
    return [dict(dataset="wine", method=m, metric="accuracy", value=float(np.mean(v)), folds=10,
                 seconds=secs[m] if m.startswith("IMLS") else None) for m, v in accs.items()]


def _imls_keel(name, data_dir, max_folds, per_sample=False):
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    import jaxdml
    from jaxdml.datasets import load_keel_folds

    folds = load_keel_folds(data_dir, name).folds[:max_folds]
    variants = _imls_variants(per_sample)
    scores = {"euclidean 3-NN": [], "LMNN + 3-NN": [], **{m: [] for m in variants}}
    secs = {k: 0.0 for k in scores}
    for Xtr, ytr, Xte, yte in folds:
        sc = MinMaxScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        t = time.perf_counter()
        scores["euclidean 3-NN"].append(balanced_accuracy_score(yte, KNeighborsClassifier(3).fit(Xtr, ytr).predict(Xte)))
        secs["euclidean 3-NN"] += time.perf_counter() - t
        t = time.perf_counter()
        lm = jaxdml.LMNN(random_state=0).fit(Xtr, ytr)
        pred = KNeighborsClassifier(3).fit(lm.transform(Xtr), ytr).predict(lm.transform(Xte))
        scores["LMNN + 3-NN"].append(balanced_accuracy_score(yte, pred))
        secs["LMNN + 3-NN"] += time.perf_counter() - t
        for m, make in variants.items():
            t = time.perf_counter()
            scores[m].append(balanced_accuracy_score(yte, make().fit(Xtr, ytr).predict(Xte)))
            secs[m] += time.perf_counter() - t
        print(f"{name} fold: " + ", ".join(f"{k}={v[-1]:.4f}" for k, v in scores.items()), file=sys.stderr, flush=True)
    return [dict(dataset=name, method=m, metric="balanced accuracy", value=float(np.mean(v)), folds=len(folds),
                 seconds=secs[m]) for m, v in scores.items()]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=("all", "metric", "imls"), default="all")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--keel", default="page-blocks", help="imbalanced KEEL data sets for IMLS (comma-separated)")
    p.add_argument("--per-sample", action="store_true", help="also IMLS(per_sample=True) (slow)")
    p.add_argument("--data", default=os.environ.get("JAXDML_KEEL_DIR", os.path.join(ROOT, "..", "shared", "keel")))
    p.add_argument("--max-folds", type=int, default=10)
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "pydml.json"))
    args = p.parse_args(argv)
    payload = {"machine": machine()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.part in ("all", "metric"):
            rows = metric_part(args.datasets.split(","))
            payload["metric_learners"] = rows
            print(markdown_table(rows, [("dataset", "dataset", ""), ("method", "method", ""),
                                        ("accuracy", "3-NN acc", ".4f"), ("vs_euclidean", "- Euclidean", "+.4f"),
                                        ("first_fit", "first fit s", ".2f"), ("mean_fit", "mean fit s", ".3f")]))
        if args.part in ("all", "imls"):
            rows = _imls_wine(args.per_sample)
            for name in args.keel.split(","):
                rows += _imls_keel(name, args.data, args.max_folds, args.per_sample)
            payload["imls"] = rows
            print(markdown_table(rows, [("dataset", "dataset", ""), ("method", "method", ""),
                                        ("metric", "metric", ""), ("value", "value", ".4f"),
                                        ("folds", "folds", "d"), ("seconds", "seconds", ".1f")]))
    write_json(args.out, payload)
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
