"""The Euclidean blend on KEEL's whole training folds (protocol round 17).

The paper's experiments fit whole training folds; on the KEEL sets whose folds hold more than 4 096 rows
(banana, optdigits, page-blocks, phoneme, ring, spambase, thyroid, twonorm, satimage) the blend applies. Each
basic method is fitted once per fold with its defaults (``random_state=0``; min-max scaling fitted on the
training fold) and scored at k = 3, 5, 7 twice on the same test fold: with the metric the fit returned and with
the method's own (``info["euclidean_blend"]["own_L"]``, the same fit before blending). Prints a table; JSON in
``--out``.

    python benchmarks/bench_blend_keel.py --folds 1,2,3 --out blend_keel.json
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the KEEL sets whose training folds hold more than 4 096 rows, and their partitions
SETS = {"banana": 10, "optdigits": 10, "page-blocks": 10, "phoneme": 10, "ring": 10, "spambase": 10, "thyroid": 10,
        "twonorm": 10, "satimage": 5}
METHODS = ("lda", "itml", "dmlmj", "nca", "lmnn", "lsi", "dml_eig", "mcml", "ldml")
KS = (3, 5, 7)


def knn_accuracies(Ztr, ytr, Zte, yte):
    from sklearn.neighbors import KNeighborsClassifier

    return [float(KNeighborsClassifier(k).fit(Ztr, ytr).score(Zte, yte)) for k in KS]


def fold(data, name, n_folds, f):
    """Min-max scaled training and test rows of fold ``f`` (1-based)."""
    from jaxdml.datasets import load_keel
    from jaxdml.datasets._folds import keel_fold_files

    tra, tst = keel_fold_files(data, name, n_folds)[f - 1]
    Xtr, ytr = load_keel(tra)[:2]
    Xte, yte = load_keel(tst)[:2]
    Xtr, Xte = np.asarray(Xtr, float), np.asarray(Xte, float)
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    return (Xtr - lo) / scale, np.asarray(ytr), (Xte - lo) / scale, np.asarray(yte)


def run(data, folds, methods):
    import jaxdml

    rows = []
    for name, n_folds in SETS.items():
        for f in folds:
            Xtr, ytr, Xte, yte = fold(data, name, n_folds, f)
            euclidean = knn_accuracies(Xtr, ytr, Xte, yte)
            for method in methods:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    fitted = jaxdml.fit(Xtr, ytr, loss=method, random_state=0)
                    fit_s = time.perf_counter() - t0
                blend = fitted.info.get("euclidean_blend")
                own = np.asarray(blend["own_L"]) if blend is not None and "own_L" in blend else fitted.L
                rows.append(dict(dataset=name, fold=f, n_train=len(ytr), method=method, fit_s=fit_s,
                                 weight=None if blend is None else blend["weight"], euclidean=euclidean,
                                 blend=knn_accuracies(Xtr @ fitted.L.T, ytr, Xte @ fitted.L.T, yte),
                                 own=knn_accuracies(Xtr @ own.T, ytr, Xte @ own.T, yte)))
                print(f"{name:12s} fold {f} {method:8s} weight={rows[-1]['weight']} "
                      f"blend={np.round(rows[-1]['blend'], 4)} own={np.round(rows[-1]['own'], 4)}",
                      file=sys.stderr, flush=True)
    return rows


def summary(rows, methods):
    out = []
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        blend, own = np.mean([r["blend"] for r in mine], 0), np.mean([r["own"] for r in mine], 0)
        out.append(dict(method=method, **{f"blend_{k}": b for k, b in zip(KS, blend)},
                        **{f"own_{k}": o for k, o in zip(KS, own)},
                        **{f"diff_{k}": 100 * (b - o) for k, b, o in zip(KS, blend, own)},
                        blended=f"{sum(r['weight'] is not None and r['weight'] < 1 for r in mine)} of {len(mine)}"))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "keel"), help="KEEL folder")
    p.add_argument("--folds", default="1,2,3", help="folds of each set (1-based; default 1,2,3)")
    p.add_argument("--methods", default=",".join(METHODS), help="registered method names")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "blend_keel.json"))
    args = p.parse_args(argv)
    if not os.path.isdir(args.data):
        raise SystemExit(f"{args.data}: no KEEL folder (the shared data sets are not here)")
    methods = args.methods.split(",")
    rows = run(args.data, [int(f) for f in args.folds.split(",")], methods)
    table = summary(rows, methods)
    write_json(args.out, {"machine": machine(), "args": vars(args), "rows": rows, "summary": table})
    columns = [("method", "method", "")] + [(f"{what}_{k}", f"{label} {k}-NN", fmt) for what, label, fmt in
                                            (("blend", "blend", ".4f"), ("own", "own", ".4f"),
                                             ("diff", "blend - own, points", "+.2f")) for k in KS]
    print(markdown_table(table, columns + [("blended", "fits blended", "")]))
    euclidean = np.mean([r["euclidean"] for r in rows if r["method"] == methods[0]], 0)
    print(f"\nEuclidean {' / '.join(f'{e:.4f}' for e in euclidean)}; JSON written to {args.out}")


if __name__ == "__main__":
    main()
