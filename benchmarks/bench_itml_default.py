"""Run-to-run spread of ITML's default constraint set: 10-fold mean 3-NN accuracy of
``jaxdml.ITML(random_state=seed)`` (min-max scaling fitted on each training fold, KEEL partitions)
for several seeds, per data set and constraint rule (``--n-constraints``: ``default`` = the
estimator's default, a number of pairs of each kind, ``scaled:N``: N pairs of each kind with the
default's slack weight ``gamma * min(20 K^2, 500) / N``, ``atleast:N``: the default's number of
pairs raised to at least N (same slack scaling), ``all``: the estimator's ``n_constraints="all"``
(every pair; the same result for every seed), or ``nn<k>``: each row's k nearest rows of its
class and of the other classes). Data sets with more than 1000 samples run the protocol's small
tier: folds 1-3 (``--large-folds``), training folds capped at 1000 rows as ``bench_defaults.py``
caps them (``--max-train``; 0: whole folds).

    python benchmarks/bench_itml_default.py --datasets sonar wine iris --seeds 0 1 2 3 4 \
        --n-constraints default 1000 --out /tmp/itml.json

Prints one JSON line per (data set, rule, seed), then a table of mean, spread (max - min) and
standard deviation over the seeds, in points, and the mean fit time of one fold.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _harness import markdown_table, write_json  # noqa: E402
from bench_defaults import load_data  # noqa: E402


def _neighbour_pairs(k):
    """Candidate rule ``nn<k>``: each row's k nearest rows of its class (similar) and of other
    classes (dissimilar), Euclidean; no randomness. Labels +1 (similar) / -1 (dissimilar), as
    ``sample_pairs`` returns them."""
    def pairs(X, codes):
        from scipy.spatial.distance import cdist

        D = cdist(X, X, "sqeuclidean")
        np.fill_diagonal(D, np.inf)
        same = codes[:, None] == codes[None, :]
        out = []
        for mask, flag in ((same, 1), (~same, -1)):
            Dm = np.where(mask, D, np.inf)
            j = np.argsort(Dm, axis=1, kind="stable")[:, :k]
            i = np.repeat(np.arange(len(codes)), k)
            j = j.ravel()
            ok = np.isfinite(Dm[i, j])
            out.append((i[ok], j[ok], np.full(ok.sum(), flag, dtype=np.int64)))
        a = np.concatenate([o[0] for o in out]); b = np.concatenate([o[1] for o in out])
        s = np.concatenate([o[2] for o in out])
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        _, first = np.unique(lo * len(codes) + hi, return_index=True)
        first = np.sort(first)
        return lo[first], hi[first], s[first]
    return pairs


from jaxdml.methods.weak._itml import itml_default_pairs as _DEFAULT_PAIRS  # noqa: E402
from jaxdml.methods.weak._pairs import sample_pairs as _SAMPLE_PAIRS  # noqa: E402


def cv(dataset, data_dir, seed, n_constraints, large_folds=(1, 2, 3), max_train=1000, tol=None):
    import jaxdml
    from jaxdml.methods.weak import _itml

    current = {}
    _itml.sample_pairs = _SAMPLE_PAIRS
    _itml.itml_default_pairs = _DEFAULT_PAIRS  # a previous rule's patch must not leak into this one
    if n_constraints.startswith("scaled:"):  # N pairs of each kind, with the default's slack scaling
        n_pairs = int(n_constraints.split(":")[1])
        _itml.itml_default_pairs = lambda n_classes, n_features, n_rows=0: n_pairs
    if n_constraints.startswith("atleast:"):  # the default's pairs, at least N of each kind
        floor = int(n_constraints.split(":")[1])
        _itml.itml_default_pairs = lambda n_classes, n_features, n_rows=0: max(
            floor, _DEFAULT_PAIRS(n_classes, n_features, n_rows))
    if n_constraints.startswith("nn"):  # a candidate rule, patched in for this process
        rule = _neighbour_pairs(int(n_constraints[2:]))
        _itml.sample_pairs = lambda codes, k1, k2, rng: rule(current["X"], codes)
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    kw = {} if n_constraints == "default" or n_constraints.startswith(("nn", "scaled:", "atleast:")) else dict(
        n_constraints=n_constraints if n_constraints == "all" else int(n_constraints))
    if tol is not None:
        kw["tol"] = tol
    accs, times = [], []
    ds, large = load_data(dataset, data_dir, 10, 1000, max_train)
    folds = [f for i, f in enumerate(ds.folds, start=1) if not large or i in large_folds]
    for Xtr, ytr, Xte, yte in folds:
        sc = MinMaxScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        current["X"] = Xtr
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = jaxdml.ITML(random_state=seed, **kw).fit(Xtr, ytr)
        times.append(time.perf_counter() - t0)
        accs.append(KNeighborsClassifier(3).fit(m.transform(Xtr), ytr).score(m.transform(Xte), yte))
    return float(np.mean(accs)), float(np.median(times))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["sonar", "wine", "iris"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--n-constraints", nargs="+", default=["default"])
    p.add_argument("--tol", type=float, default=None, help="ITML's stopping tolerance (default: its default)")
    p.add_argument("--large-folds", default="1,2,3", help="folds of data sets above 1000 samples")
    p.add_argument("--max-train", type=int, default=1000, help="cap on their training folds (0: none)")
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "keel"))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    rows, summary = [], []
    for ds in args.datasets:
        for rule in args.n_constraints:
            accs, times = [], []
            for seed in args.seeds:
                acc, t = cv(ds, args.data, seed, rule, tuple(int(f) for f in args.large_folds.split(",")),
                            args.max_train, args.tol)
                accs.append(acc)
                times.append(t)
                rows.append(dict(dataset=ds, rule=rule, seed=seed, accuracy=acc, fold_fit_s=t))
                print(json.dumps(rows[-1]), flush=True)
            a = 100 * np.asarray(accs)
            summary.append(dict(dataset=ds, rule=rule, mean=float(a.mean()), spread=float(a.max() - a.min()),
                                std=float(a.std()), fold_fit_s=float(np.median(times))))
    print(markdown_table(summary, [("dataset", "data", ""), ("rule", "n_constraints", ""), ("mean", "mean acc %", ".2f"),
                                   ("spread", "spread (pts)", ".2f"), ("std", "std (pts)", ".2f"),
                                   ("fold_fit_s", "fold fit s", ".3f")]))
    if args.out:
        write_json(args.out, dict(rows=rows, summary=summary))


if __name__ == "__main__":
    main()
