"""Accuracy of pyDML's algorithms in jaxdml: GMML, LLDA, KLLDA (metric learners) and IMLS (a classifier).

Metric learners (issue protocol): iris, wine, breast_cancer; 10-fold stratified CV (seed 0), min-max
scaling fitted per training fold, defaults, 3-NN accuracy on the embedding, next to Euclidean 3-NN.

IMLS: (a) wine, the same protocol, accuracy of ``jaxdml.IMLS()`` (default LMNN, 3-NN) vs Euclidean 3-NN;
(b) an imbalanced KEEL data set (page-blocks or thyroid, its 10 DOB-SCV folds from ``--data``, min-max per
fold): balanced accuracy of Euclidean 3-NN, LMNN + 3-NN and IMLS (LMNN inside).

    python benchmarks/bench_pydml.py                          # everything
    python benchmarks/bench_pydml.py --part metric            # GMML / LLDA / KLLDA only
    python benchmarks/bench_pydml.py --part imls --keel page-blocks --max-folds 10

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


def _imls_wine():
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    import jaxdml
    from jaxdml.datasets import load_dataset

    X, y = load_dataset("wine")
    X = np.asarray(X, float)
    accs = {"euclidean 3-NN": [], "IMLS (LMNN)": []}
    t0 = time.perf_counter()
    for tr, te in StratifiedKFold(10, shuffle=True, random_state=0).split(X, y):
        sc = MinMaxScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        accs["euclidean 3-NN"].append(KNeighborsClassifier(3).fit(Xtr, y[tr]).score(Xte, y[te]))
        accs["IMLS (LMNN)"].append(jaxdml.IMLS().fit(Xtr, y[tr]).score(Xte, y[te]))
    secs = time.perf_counter() - t0
    return [dict(dataset="wine", method=m, metric="accuracy", value=float(np.mean(v)), folds=10,
                 seconds=secs if m.startswith("IMLS") else None) for m, v in accs.items()]


def _imls_keel(name, data_dir, max_folds):
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    import jaxdml
    from jaxdml.datasets import load_keel_folds

    folds = load_keel_folds(data_dir, name).folds[:max_folds]
    scores = {"euclidean 3-NN": [], "LMNN + 3-NN": [], "IMLS (LMNN)": []}
    secs = {k: 0.0 for k in scores}
    for Xtr, ytr, Xte, yte in folds:
        sc = MinMaxScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        t = time.perf_counter()
        scores["euclidean 3-NN"].append(balanced_accuracy_score(yte, KNeighborsClassifier(3).fit(Xtr, ytr).predict(Xte)))
        secs["euclidean 3-NN"] += time.perf_counter() - t
        t = time.perf_counter()
        lm = jaxdml.LMNN().fit(Xtr, ytr)
        pred = KNeighborsClassifier(3).fit(lm.transform(Xtr), ytr).predict(lm.transform(Xte))
        scores["LMNN + 3-NN"].append(balanced_accuracy_score(yte, pred))
        secs["LMNN + 3-NN"] += time.perf_counter() - t
        t = time.perf_counter()
        scores["IMLS (LMNN)"].append(balanced_accuracy_score(yte, jaxdml.IMLS().fit(Xtr, ytr).predict(Xte)))
        secs["IMLS (LMNN)"] += time.perf_counter() - t
        print(f"{name} fold: " + ", ".join(f"{k}={v[-1]:.4f}" for k, v in scores.items()), file=sys.stderr, flush=True)
    return [dict(dataset=name, method=m, metric="balanced accuracy", value=float(np.mean(v)), folds=len(folds),
                 seconds=secs[m]) for m, v in scores.items()]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=("all", "metric", "imls"), default="all")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--keel", default="page-blocks", help="imbalanced KEEL data set for IMLS")
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
            rows = _imls_wine() + _imls_keel(args.keel, args.data, args.max_folds)
            payload["imls"] = rows
            print(markdown_table(rows, [("dataset", "dataset", ""), ("method", "method", ""),
                                        ("metric", "metric", ""), ("value", "value", ".4f"),
                                        ("folds", "folds", "d"), ("seconds", "seconds", ".1f")]))
    write_json(args.out, payload)
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
