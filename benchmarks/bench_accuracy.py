"""Accuracy of every jaxdml method on scikit-learn's bundled data sets.

Protocol (the one the tests assert): 10-fold stratified CV (seed 0), min-max scaling fitted on
each training fold, the method fitted with its defaults (``jaxdml.fit(X, y, loss=name)``, folds
padded to one shape), 3-NN test accuracy on the learned embedding. Also reports the fit time of
the first fold (compilation included) and the mean over the others.

    python benchmarks/bench_accuracy.py                                  # all methods, iris, wine, breast_cancer
    python benchmarks/bench_accuracy.py --datasets digits --methods nca,lmnn

Prints a Markdown table (accuracy, difference to Euclidean) and writes JSON
(default benchmarks/results/accuracy.json).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import cv_protocol, machine, markdown_table, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = ("iris", "wine", "breast_cancer")


def main(argv=None):
    import jaxdml
    from jaxdml.datasets import load_dataset

    methods = [m for m in jaxdml.available_methods()]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--methods", default=",".join(methods))
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "accuracy.json"))
    args = p.parse_args(argv)
    rows = []
    for dataset in args.datasets.split(","):
        X, y = load_dataset(dataset)
        base = None
        names = args.methods.split(",")
        names = ["euclidean"] + [m for m in names if m != "euclidean"]
        for loss in names:
            def fit(Xtr, ytr, pad, loss=loss):
                return jaxdml.fit(Xtr, ytr, loss=loss, pad_to=pad).transform

            try:
                res = cv_protocol(np.asarray(X, float), y, fit)
                res["status"] = "ok"
            except Exception as exc:  # a method that fails is reported, the run goes on
                res = dict(status=f"{type(exc).__name__}: {exc}"[:120])
            if loss == "euclidean":
                base = res.get("accuracy")
            if base is not None and "accuracy" in res:
                res["vs_euclidean"] = res["accuracy"] - base
            rows.append(dict(dataset=dataset, method=loss, **res))
            r = rows[-1]
            print(f"{dataset:14s} {loss:12s} acc={r.get('accuracy', float('nan')):.4f} "
                  f"first={r.get('first_fit', float('nan')):.2f}s", file=sys.stderr, flush=True)
    cols = [("dataset", "dataset", ""), ("method", "method", ""), ("status", "status", ""),
            ("accuracy", "3-NN acc", ".4f"), ("vs_euclidean", "- Euclidean", "+.4f"),
            ("first_fit", "first fit s", ".2f"), ("mean_fit", "mean fit s", ".3f")]
    print(markdown_table(rows, cols))
    write_json(args.out, {"machine": machine(), "results": rows})
    print(f"\nJSON written to {args.out}")


if __name__ == "__main__":
    main()
