"""jaxdml's L-BFGS (``optimizer="lbfgs"``, the default) against ``optax.lbfgs()`` in the same driver.

Each (data set, method, optimizer) runs in a fresh process: the first fit pays tracing and
compilation as a user's first call does; the second fit (same shapes) is the compiled loop alone.
Reported: both wall times, the final training objective, steps, the convergence flag, and the 3-NN
accuracy on a stratified held-out third (min-max scaling fitted on the training part).

    python benchmarks/bench_lbfgs.py --datasets wine breast_cancer digits --methods nca lmnn mcml ncmml \
        --out benchmarks/results/lbfgs.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _harness import markdown_table, run_worker, write_json  # noqa: E402


def worker(dataset: str, method: str, which: str) -> None:
    warnings.simplefilter("ignore")
    import numpy as np
    import optax
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    import jaxdml
    from jaxdml.datasets import load_dataset

    X, y = load_dataset(dataset)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=1 / 3, stratify=y, random_state=0)
    lo, span = Xtr.min(0), np.maximum(Xtr.max(0) - Xtr.min(0), 1e-12)
    Xtr, Xte = (Xtr - lo) / span, (Xte - lo) / span
    optimizer = optax.lbfgs() if which == "optax" else "lbfgs"
    t0 = time.perf_counter()
    jaxdml.fit(Xtr, ytr, loss=method, optimizer=optimizer)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = jaxdml.fit(Xtr, ytr, loss=method, optimizer=optimizer)
    second = time.perf_counter() - t0
    knn = KNeighborsClassifier(3).fit(m.transform(Xtr), ytr)
    print(json.dumps(dict(dataset=dataset, method=method, optimizer=which, first_fit_s=first, second_fit_s=second,
                          objective=float(m.loss), n_iter=int(m.n_iter), converged=bool(m.converged),
                          accuracy=float(knn.score(m.transform(Xte), yte)))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["wine", "breast_cancer", "digits"])
    ap.add_argument("--methods", nargs="+", default=["nca", "lmnn", "mcml", "ncmml"])
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", action="store_true")
    args, rest = ap.parse_known_args()
    if args.worker:
        worker(*rest)
        return
    rows = []
    for d in args.datasets:
        for m in args.methods:
            pair = {}
            for which in ("optax", "jaxdml"):
                r = run_worker(__file__, [d, m, which], args.timeout, {"JAXDML_COMPILATION_CACHE": "0"})
                r.update(dataset=d, method=m, optimizer=which)
                print(json.dumps(r), flush=True)
                rows.append(r)
                pair[which] = r
            o, j = pair["optax"], pair["jaxdml"]
            if o.get("status") == "ok" and j.get("status") == "ok":
                rows.append(dict(dataset=d, method=m, optimizer="jaxdml / optax",
                                 first_fit_s=j["first_fit_s"] / o["first_fit_s"],
                                 second_fit_s=j["second_fit_s"] / o["second_fit_s"],
                                 objective=j["objective"] - o["objective"], n_iter=None, converged=None,
                                 accuracy=j["accuracy"] - o["accuracy"]))
    cols = [("dataset", "data", ""), ("method", "method", ""), ("optimizer", "optimizer", ""),
            ("first_fit_s", "first fit", ".3g"), ("second_fit_s", "second fit", ".3g"),
            ("objective", "objective", ".6g"), ("n_iter", "steps", ""), ("converged", "converged", ""),
            ("accuracy", "3-NN test", ".4f")]
    print(markdown_table(rows, cols))
    print("(rows 'jaxdml / optax': time ratios; objective and accuracy as differences, jaxdml minus optax)")
    if args.out:
        write_json(args.out, {"rows": rows})


if __name__ == "__main__":
    main()
