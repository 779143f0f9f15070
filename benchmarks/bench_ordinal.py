"""Ordinal metric learning on winequality-red: k-NN mean absolute error and fit times.

The paper's protocol on the KEEL 10-fold DOB-SCV partitions (``../shared/keel``): min-max scaling
fitted on each training fold (the whole training fold, not capped), each learner fitted with its
defaults on the training fold, then the k-NN ordinal prediction (:class:`jaxdml.KNeighborsOrdinal`:
the median grade of the k nearest training samples) scored by the mean absolute error (MAE) on the
test fold, averaged over the folds. Euclidean is the baseline. The grades are the quality scores
(integers 3..8). Nothing here is tuned: each learner runs with its defaults.

    python benchmarks/bench_ordinal.py                       # all folds, k = 5
    python benchmarks/bench_ordinal.py --folds 2 --methods Euclidean,LODML
    python benchmarks/bench_ordinal.py --dataset diabetes-5 --methods Euclidean,LODML,LODML:alpha=0.1

``diabetes-5`` (for choosing settings away from winequality-red) is scikit-learn's diabetes data
with the disease-progression target cut into 5 equal-frequency grades (the construction of the
ordinal regression benchmarks of Chu and Ghahramani, 2005), in 10 stratified folds (seed 0).
``NAME:key=value;key=value`` runs a learner with those settings instead of its defaults.

Prints a Markdown table and writes JSON (default benchmarks/results/ordinal.json). Fit times
include JAX's compile time in the first fold (column ``first_fit_s``); ``mean_fit_s`` is over
the remaining folds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, write_json  # noqa: E402

METHODS = ("Euclidean", "LODML", "KODML", "CMOML", "KCMOML")


def _learner(spec):
    """``"LODML"`` or ``"LODML:alpha=0.1;margin=2"``: the estimator with those settings (None: Euclidean)."""
    import ast

    import jaxdml

    name, _, rest = spec.partition(":")
    params = {k: ast.literal_eval(v) for k, v in (kv.split("=", 1) for kv in rest.split(";") if kv)}
    return None if name == "Euclidean" else getattr(jaxdml, name)(**params)


def diabetes_folds(n_grades=5, n_folds=10, seed=0):
    """scikit-learn's diabetes data, target cut into equal-frequency grades, stratified folds."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import StratifiedKFold

    X, t = load_diabetes(return_X_y=True)
    y = np.searchsorted(np.quantile(t, np.linspace(0, 1, n_grades + 1)[1:-1]), t, side="right")
    cv = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    return [(X[tr], y[tr], X[te], y[te]) for tr, te in cv.split(X, y)]


def run_method(name, folds, k):
    """Per-fold MAE, fit time, iterations and convergence of one learner."""
    import jaxdml
    from sklearn.preprocessing import MinMaxScaler

    rows = []
    for i, (Xtr, ytr, Xte, yte) in enumerate(folds):
        ytr, yte = ytr.astype(np.int64), yte.astype(np.int64)
        scaler = MinMaxScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        learner = _learner(name)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = jaxdml.KNeighborsOrdinal(k, metric_learner=learner).fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
        est = model.metric_learner_
        rows.append(dict(fold=i + 1, mae=-model.score(Xte, yte), fit_s=fit_s,
                         n_iter=None if est is None else int(est.n_iter_),
                         converged=None if est is None else bool(est.converged_),
                         warnings=sorted({type(w.message).__name__ for w in caught})))
    return rows


def summarise(name, rows):
    fits = [r["fit_s"] for r in rows]
    conv = [r["converged"] for r in rows if r["converged"] is not None]
    return dict(method=name, mae=float(np.mean([r["mae"] for r in rows])),
                mae_std=float(np.std([r["mae"] for r in rows])), folds=len(rows),
                first_fit_s=fits[0], mean_fit_s=float(np.mean(fits[1:])) if len(fits) > 1 else fits[0],
                mean_iter=float(np.mean([r["n_iter"] for r in rows])) if conv else None,
                converged=f"{sum(conv)}/{len(conv)}" if conv else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "keel",
                                                           "10-fold"))
    parser.add_argument("--dataset", default="winequality-red")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--folds", type=int, default=10, help="run the first N folds")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "ordinal.json"))
    args = parser.parse_args(argv)

    from jaxdml.datasets import load_keel_folds

    if args.dataset == "diabetes-5":
        folds = diabetes_folds()[: args.folds]
    else:
        folds = load_keel_folds(args.data_dir, args.dataset).folds[: args.folds]
    summary, per_fold = [], {}
    for name in args.methods.split(","):  # a method's settings use ';' (not ',')
        per_fold[name] = run_method(name, folds, args.k)
        summary.append(summarise(name, per_fold[name]))
        print(f"{name}: MAE {summary[-1]['mae']:.4f}", flush=True)
    base = next((s["mae"] for s in summary if s["method"] == "Euclidean"), None)
    for s in summary:
        s["vs_euclidean"] = None if base is None else s["mae"] - base
        s["target_met"] = None if base is None else bool(s["mae"] <= base)
    print(markdown_table(summary, [("method", "method", ""), ("mae", f"{args.k}-NN MAE", ".4f"),
                                   ("mae_std", "std", ".4f"), ("vs_euclidean", "minus Euclidean", "+.4f"),
                                   ("folds", "folds", "d"), ("converged", "converged", ""),
                                   ("mean_iter", "mean iter", ".1f"), ("first_fit_s", "first fit s", ".2f"),
                                   ("mean_fit_s", "mean fit s", ".2f")]))
    write_json(args.out, dict(dataset=args.dataset, k=args.k, protocol="KEEL 10-fold DOB-SCV, min-max per "
                              "training fold, median grade of the k nearest, mean absolute error",
                              machine=machine(), summary=summary, folds=per_fold))


if __name__ == "__main__":
    main()
