"""The protocol for choosing defaults (benchmarks/PROTOCOL.md): per method, mean k-NN test accuracy
on the tuning or the confirmation half of the shared KEEL data sets, against the published column.

The paper's protocol: KEEL 10-fold DOB-SCV partitions (5-fold where only those exist: satimage),
min-max scaling fitted on each training fold, the method fitted on the training fold with its
defaults, k-NN test accuracy at k = 3, 5, 7. A method is fitted once per fold and scored at the
three k, except where its parameters depend on k (LMNN's and DMLMJ's ``n_neighbors = k``, as in
the paper's experiments; metric-learn's LMNN likewise): those are fitted once per k.

Training folds of the large data sets (more than 1000 samples) are capped at ``--max-train``
samples by a class-stratified random subset (seeded by data set and fold), applied identically
to every method and reference; the test fold is always complete. The paper also ran its large
data sets on a class-stratified subset (of a size it does not give), so compare those rows loosely.

    python benchmarks/bench_defaults.py --half tuning --methods Euclidean,NCA,sklearn-NCA
    python benchmarks/bench_defaults.py --half confirmation                 # every basic method
    python benchmarks/bench_defaults.py --half tuning --methods NCA --variant "NCA:max_iter=50"
    python benchmarks/bench_defaults.py --tier full --half tuning --methods NCA,sklearn-NCA  # full size
    python benchmarks/bench_defaults.py --tier full --sizes full --datasets phoneme --methods sklearn-NCA  # whole folds
    python benchmarks/bench_defaults.py --tier full --half all --k 3 --methods labels  # every method's gain check

Methods: the basic experiment's columns (Euclidean, LDA, ITML, DMLMJ, NCA, LMNN, LSI, DML_eig,
MCML, LDML), any other registered method by name with its estimator's defaults (``lfda``, ``kda``,
...; ``--methods labels``: every registered method that learns from labels) and the references ``sklearn-NCA`` (scikit-learn's NCA, defaults), ``ml-LMNN``,
``ml-ITML``, ``ml-MMC`` (metric-learn 0.7, supervised versions, defaults). ``--variant
"LABEL:key=value;key=value"`` adds a candidate setting of a basic method (values are Python
literals). ``--merge A.json B.json`` summarises earlier runs together (e.g. the small and the
large data sets of a half, run with different ``--folds``). Results are cached per fold (jaxdml.experiments.ResultCache; a record is reused only
while the method's code, settings and fold data are unchanged). Prints JSON and a table.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import signal
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _harness import (machine, markdown_table, metric_learn_compat, page_head, update_docs_page,  # noqa: E402
                      write_json)

SPLIT_FILE = os.path.join(HERE, "defaults_split.json")
#: the full-size tier: data sets with at least this many samples, fitted on whole training folds
FULL_MIN_SAMPLES = 4000
#: ... and on a stratified subset of this many rows of the same training fold
SUBSET_ROWS = 2000
#: a gain over Euclidean on the subset may shrink on the whole fold, but not fall below this
LOSS_TOLERANCE = 0.003
PUBLISHED = "basic-{k}nn-test.csv"
REFERENCES = ("sklearn-NCA", "ml-LMNN", "ml-ITML", "ml-MMC")
PER_K = ("LMNN", "DMLMJ", "ml-LMNN")  # methods whose parameters depend on the k of the k-NN


def make_split(n_samples: dict, seed: int = 0, small_max: int = 1000) -> dict:
    """The tuning/confirmation split: within each size stratum (small: at most ``small_max``
    samples; large: more), the sorted names are permuted by ``numpy.random.default_rng(seed)`` and
    the first ``floor(n / 2)`` go to the tuning half."""
    rng = np.random.default_rng(seed)
    tuning, confirmation = [], []
    for small in (True, False):
        names = sorted(n for n, s in n_samples.items() if (s <= small_max) == small)
        perm = [names[i] for i in rng.permutation(len(names))]
        tuning += sorted(perm[: len(names) // 2])
        confirmation += sorted(perm[len(names) // 2:])
    return dict(tuning=tuning, confirmation=confirmation)


def load_split(path: str = SPLIT_FILE) -> dict:
    with open(path) as fh:
        return json.load(fh)


def read_published(paper_dir: str, k: int) -> dict:
    """``{dataset: {method: accuracy}}`` of the published basic k-NN test table (empty cells left out)."""
    import csv

    p = os.path.join(paper_dir, PUBLISHED.format(k=k))
    if not os.path.isfile(p):
        return {}
    with open(p) as fh:
        rows = list(csv.reader(fh))
    head = rows[0][1:]
    return {r[0]: {m: float(v) for m, v in zip(head, r[1:]) if v.strip()} for r in rows[1:]}


# --------------------------------------------------------------------------- methods
def parse_variant(text: str):
    """``"NCA:max_iter=50;tol=1e-6"`` -> ``("NCA", {"max_iter": 50, "tol": 1e-6})``."""
    label, _, rest = text.partition(":")
    params = {}
    for item in filter(None, (s.strip() for s in rest.split(";"))):
        key, _, value = item.partition("=")
        try:
            params[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key.strip()] = value.strip()
    return label.strip(), params


def variant_label(label: str, params: dict) -> str:
    return label if not params else label + "{" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "}"


def jaxdml_algorithm(label: str, k: int, params: dict):
    """The basic experiment's column ``label`` or, for another registered method (``lfda``,
    ``kda``, ...), that method's estimator with its defaults, scored by ``k``-NN."""
    import jaxdml
    from jaxdml.experiments import get_experiment, select_algorithms
    from jaxdml.experiments._config import Algorithm

    basic = get_experiment("basic").algorithms(k)
    if label.lower() in {a.label.lower() for a in basic}:
        alg = select_algorithms(basic, [label])[0]
    else:
        record = jaxdml.methods().get(label.lower())
        if record is None:
            raise ValueError(f"unknown method {label!r}: neither a basic column nor a registered method "
                             f"({', '.join(sorted(jaxdml.methods()))}).")
        alg = Algorithm(label, record.name, record.estimator, {}, ("knn", k))
    return alg.with_params(**params) if params else alg


def label_methods() -> list:
    """``--methods labels``: every registered method that learns from the labels (class labels,
    pairs built from them, or ordinal targets), named as the basic experiment's column where it
    has one (so the two share cached folds); Euclidean first."""
    import jaxdml
    from jaxdml.experiments import get_experiment

    column = {a.method: a.label for a in get_experiment("basic").algorithms(3) if a.method != "identity"}
    learners = [n for n, r in jaxdml.methods().items() if (r.labels or r.supervised) and n != "euclidean"]
    return ["Euclidean"] + [column.get(n, n) for n in learners]


def method_units(text: str, variants) -> list:
    """``[(label, params), ...]`` of ``--methods`` (a comma list, or ``labels``) and ``--variant``."""
    names = [m.strip() for m in text.split(",") if m.strip()]
    if names == ["labels"]:
        names = label_methods()
    return [(m, {}) for m in names] + [parse_variant(v) for v in variants]


def reference_fit(label: str, X, codes, k: int, seed: int):
    """Fit a reference implementation with its defaults; returns the transform."""
    if label == "sklearn-NCA":
        from sklearn.neighbors import NeighborhoodComponentsAnalysis

        return NeighborhoodComponentsAnalysis(random_state=seed).fit(X, codes).transform
    metric_learn_compat()
    import metric_learn

    if label == "ml-LMNN":
        est = metric_learn.LMNN(n_neighbors=k, random_state=seed)
    elif label == "ml-ITML":
        est = metric_learn.ITML_Supervised(random_state=seed)
    elif label == "ml-MMC":
        est = metric_learn.MMC_Supervised(random_state=seed)
    else:
        raise ValueError(f"unknown reference {label!r}; have {REFERENCES}.")
    return est.fit(X, codes).transform


def reference_versions() -> dict:
    import sklearn

    out = {"sklearn": sklearn.__version__}
    try:
        metric_learn_compat()  # before metric-learn's first import
        import metric_learn

        out["metric_learn"] = metric_learn.__version__
    except ImportError:  # pragma: no cover
        out["metric_learn"] = None
    return out


# --------------------------------------------------------------------------- data
def cap_training(X, y, max_train: int, seed: int):
    """A class-stratified random subset of at most ``max_train`` rows (every class keeps at
    least one row; proportional allocation, largest remainders first)."""
    n = len(y)
    if not max_train or n <= max_train:
        return X, y
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    share = counts * max_train / n
    take = np.maximum(1, np.floor(share).astype(int))
    for i in np.argsort(-(share - np.floor(share))):
        if take.sum() >= max_train:
            break
        if take[i] < counts[i]:
            take[i] += 1
    keep = np.concatenate([rng.choice(np.flatnonzero(y == c), t, replace=False) for c, t in zip(classes, take)])
    keep.sort()
    return X[keep], y[keep]


def load_data(name: str, data_dir, n_folds: int, small_max: int, max_train: int):
    """Folds of ``name`` (10-fold, else 5-fold) with the training folds capped as documented."""
    from jaxdml.datasets import load_folds

    try:
        ds = load_folds(name, data_dir, n_folds=n_folds)
    except FileNotFoundError:
        ds = load_folds(name, data_dir, n_folds=5)
    large = ds.n_samples > small_max
    folds = []
    for f, (Xtr, ytr, Xte, yte) in enumerate(ds.folds, start=1):
        if large:
            Xtr, ytr = cap_training(Xtr, ytr, max_train, seed=1000 * f + len(name))
        folds.append((Xtr, ytr, Xte, yte))
    return ds._replace(folds=folds), large


class Timeout(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - timing dependent
    raise Timeout()


# --------------------------------------------------------------------------- one unit
def valid_fold_record(rec) -> bool:
    """Whether a cached record has this script's schema: a status, and when ok a test accuracy
    in [0, 1] at every k it lists (the experiment runner's schema is another one)."""
    if not isinstance(rec, dict) or rec.get("status") not in ("ok", "failed") or not isinstance(rec.get("fold"), int):
        return False
    if rec["status"] == "ok":
        acc = rec.get("test_accuracy")
        return isinstance(acc, dict) and bool(acc) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0 for v in acc.values())
    return True


def run_unit(label, params, ds, fold_ids, ks, args, cache, code, stem="defaults"):
    """Every selected fold of one (method, data set): ``{fold: record}``; a record holds the test
    accuracy at each k of ``ks`` and the fit seconds (summed over the fits of that fold). Records
    are cached under ``stem`` (one per training size: a fold's subset and its whole training rows
    are different records)."""
    from sklearn.preprocessing import MinMaxScaler

    from jaxdml.experiments import fit_transform, knn_scores
    from jaxdml.experiments._cache import data_hash, fingerprint

    index = {c: i for i, c in enumerate(ds.classes)}
    pad_to = max(len(f[1]) for f in ds.folds)
    name = variant_label(label, params)
    per_k = label in PER_K
    versions = reference_versions() if label in REFERENCES else code
    out, deadline = {}, time.perf_counter() + args.timeout
    for f in fold_ids:
        Xtr, ytr, Xte, yte = ds.folds[f - 1]
        ctr = np.array([index[v] for v in ytr])
        cte = np.array([index[v] for v in yte])
        config = dict(method=name, dataset=ds.name, fold=f, ks=list(ks), code=versions, seed=args.seed,
                      data=data_hash(Xtr, ctr, Xte, cte), protocol="minmax/knn-test/2")
        fp = fingerprint(config)
        rec = cache.load(stem, ds.name, name, f, fp, validate=valid_fold_record)
        if rec is None or (rec["status"] != "ok" and args.retry_failed):
            rec = dict(experiment=stem, dataset=ds.name, cache_key=name, fold=f, fingerprint=fp,
                       n_train=int(len(ctr)), n_test=int(len(cte)), status="ok", error=None)
            left = deadline - time.perf_counter()
            try:
                if left <= 0:
                    raise Timeout()
                signal.signal(signal.SIGALRM, _alarm)
                signal.alarm(max(1, int(left)))
                rec.update(_fit_score(label, params, Xtr, ctr, Xte, cte, ks, len(ds.classes), per_k, pad_to,
                                      args.seed, fit_transform, knn_scores, MinMaxScaler))
            except Timeout:
                rec.update(status="timeout", error=f"over {args.timeout:.0f} s for the data set")
            except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                rec.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:500])
            finally:
                signal.alarm(0)
            if rec["status"] != "timeout":
                cache.store(rec)
        out[f] = rec
        if rec["status"] == "timeout":
            break
    return out


def _fit_score(label, params, Xtr, ctr, Xte, cte, ks, n_classes, per_k, pad_to, seed,
               fit_transform, knn_scores, MinMaxScaler):
    scaler = MinMaxScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    acc, fit_time, info = {}, 0.0, {}
    transform = None
    for k in ks:
        if transform is None or per_k:
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if label in REFERENCES:
                    transform = reference_fit(label, Xtr, ctr, k, seed)
                else:
                    alg = jaxdml_algorithm(label, k, params)
                    transform, info = fit_transform(alg, Xtr, ctr, pad_to=pad_to, seed=seed)
                Ztr = np.asarray(transform(Xtr), dtype=np.float64)
            fit_time += time.perf_counter() - t0
            Zte = np.asarray(transform(Xte), dtype=np.float64)
            if not (np.all(np.isfinite(Ztr)) and np.all(np.isfinite(Zte))):
                raise FloatingPointError("the learned transformation produced non-finite values.")
        acc[str(k)] = knn_scores(Ztr, ctr, Zte, cte, k, n_classes)[1]
    info = {key: (v.item() if hasattr(v, "item") else v) for key, v in info.items()}
    return dict(test_accuracy=acc, fit_time=fit_time, n_iter=info.get("n_iter"), converged=info.get("converged"),
                warnings=sorted({f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught})[:5])


# --------------------------------------------------------------------------- summary
def summarise(per_ds: dict, published: dict, ks, datasets, fit_s=None, problems=None) -> list:
    """Rows per method: over the data sets where the method completed every selected fold and the
    published column exists, the mean of ours and of the published accuracy, per k (``ours{k}``,
    ``pub{k}``, ``diff{k}``); ``mean{k}``: our mean over every completed data set."""
    rows = []
    for name, by_ds in per_ds.items():
        base = name.split("{")[0]
        column = base.split("-", 1)[1] if base in REFERENCES else base  # sklearn-NCA -> NCA
        row = dict(method=name, n_sets=0, n_pub=0)
        for k in ks:
            ours = [(d, by_ds[d][str(k)]) for d in datasets if by_ds.get(d, {}).get(str(k)) is not None]
            pub = [(a, published[k][d][column]) for d, a in ours if column in (published.get(k, {}).get(d) or {})]
            row[f"mean{k}"] = float(np.mean([a for _, a in ours])) if ours else None
            if pub:
                row[f"ours{k}"] = float(np.mean([a for a, _ in pub]))
                row[f"pub{k}"] = float(np.mean([p for _, p in pub]))
                row[f"diff{k}"] = row[f"ours{k}"] - row[f"pub{k}"]
            row["n_sets"], row["n_pub"] = len(ours), len(pub)
        if fit_s:
            row["fit_s"] = float(sum(fit_s.get(name, {}).get(d, 0.0) for d in datasets))
        if problems:
            row["problems"] = problems.get(name, "")
        rows.append(row)
    return rows


def print_tables(payload: dict) -> str:
    ks, rows = payload["ks"], payload["summary"]
    cols = [("method", "method", "")]
    for k in ks:
        cols += [(f"ours{k}", f"{k}-NN ours", ".4f"), (f"pub{k}", f"{k}-NN published", ".4f"),
                 (f"diff{k}", "diff", "+.4f")]
    cols += [("n_pub", "sets", "d"), (f"mean{ks[0]}", f"{ks[0]}-NN all sets", ".4f"), ("n_sets", "all sets", "d"),
             ("fit_s", "fit s", ".1f"), ("problems", "problems", "")]
    print(json.dumps(payload, default=float))
    table = markdown_table(rows, cols)
    print(table)
    return table


def merge(paths: list, datasets=None) -> dict:
    """Combine the JSON of several runs (e.g. small and large data sets run separately)."""
    per_ds, fit_s, published, ds_all, ks = {}, {}, {}, [], None
    for path in paths:
        with open(path) as fh:
            run = json.load(fh)
        ks = [int(k) for k in run["ks"]] if ks is None else [k for k in ks if k in [int(x) for x in run["ks"]]]
        ds_all += [d for d in run["datasets"] if d not in ds_all]
        for m, v in run["per_dataset"].items():
            per_ds.setdefault(m, {}).update(v)
        for m, v in run["fit_seconds"].items():
            fit_s.setdefault(m, {}).update(v)
        for k, v in run["published"].items():
            published.setdefault(int(k), {}).update(v)
    datasets = datasets or ds_all
    return dict(merged=paths, datasets=datasets, ks=ks, per_dataset=per_ds, fit_seconds=fit_s,
                summary=summarise(per_ds, published, ks, datasets, fit_s),
                published={k: {d: published[k].get(d) for d in datasets} for k in ks})


def docs_block(args) -> str:
    """The block of docs/benchmarks/defaults.md that ``--update-docs`` rewrites: one per tier and half."""
    return f"defaults-{'full-' if args.tier == 'full' else ''}{args.half}"


def main(argv=None):
    split = load_split()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--half", choices=("tuning", "confirmation", "all"), default="tuning")
    p.add_argument("--datasets", default=None, help="comma-separated; overrides --half")
    p.add_argument("--methods", default="Euclidean,LDA,ITML,DMLMJ,NCA,LMNN,LSI,DML_eig,MCML,LDML",
                   help="comma-separated basic columns, registered method names (lfda, kda, ...) or references; "
                        "'labels': every registered method that learns from labels")
    p.add_argument("--variant", action="append", default=[], help='"LABEL:key=value;key=value"')
    p.add_argument("--k", default="3,5,7")
    p.add_argument("--folds", default=None, help="fold numbers to run, e.g. 1,2,3 (default: all)")
    p.add_argument("--max-train", type=int, default=1000, help="cap on large data sets' training folds (0: none)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per (method, data set)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retry-failed", action="store_true")
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "keel"))
    p.add_argument("--paper", default=os.path.join(ROOT, "..", "shared", "paper-results"))
    p.add_argument("--cache", default=os.path.join(HERE, "results", "defaults-cache"))
    p.add_argument("--out", default=None)
    p.add_argument("--merge", nargs="+", default=None, help="summarise the JSON of earlier runs instead")
    p.add_argument("--update-docs", action="store_true",
                   help="write the table into docs/benchmarks/defaults.md (block defaults-[full-]HALF)")
    p.add_argument("--tier", choices=("small", "full"), default="small",
                   help="small: training folds capped at --max-train (the paper's subsets); full: the data sets "
                        f"with at least {FULL_MIN_SAMPLES} samples, whole training folds (default folds 1-3), each "
                        f"method also fitted on a stratified {SUBSET_ROWS}-row subset of the same fold, and the "
                        "check that a gain over Euclidean on the subset is not a loss on the whole fold")
    p.add_argument("--sizes", default="subset,full",
                   help="--tier full: which training sizes to fit (subset, full or both; default both)")
    args = p.parse_args(argv)
    if args.update_docs:  # the page's block must exist before the run, not after it
        update_docs_page("defaults", docs_block(args), None)
    if args.tier == "full":
        return main_full(args, split)
    if args.merge:
        payload = merge(args.merge, args.datasets.split(",") if args.datasets else
                        None if args.half == "all" else split[args.half])
        table = print_tables(payload)
        if args.out:
            write_json(args.out, payload)
        if args.update_docs:
            update_docs_page("defaults", docs_block(args), f"{page_head(machine())}\n\n{table}")
        return
    from jaxdml.experiments import ResultCache
    from jaxdml.experiments._cache import code_hash

    ks = [int(k) for k in args.k.split(",")]
    datasets = (args.datasets.split(",") if args.datasets else
                split["tuning"] + split["confirmation"] if args.half == "all" else split[args.half])
    units = method_units(args.methods, args.variant)
    published = {k: read_published(args.paper, k) for k in ks}
    cache, code = ResultCache(args.cache), code_hash()
    results = {variant_label(lab, par): {} for lab, par in units}
    t_start = time.perf_counter()
    for name in datasets:
        ds, large = load_data(name, args.data, 10, split["small_max_samples"], args.max_train)
        fold_ids = list(range(1, len(ds.folds) + 1))
        if args.folds:
            fold_ids = [f for f in (int(s) for s in args.folds.split(",")) if f <= len(ds.folds)]
        for label, params in units:
            t0 = time.perf_counter()
            recs = run_unit(label, params, ds, fold_ids, ks, args, cache, code)
            results[variant_label(label, params)][name] = recs
            ok = [r for r in recs.values() if r["status"] == "ok"]
            acc = np.mean([r["test_accuracy"][str(ks[0])] for r in ok]) if ok else float("nan")
            print(f"{name:16s} {variant_label(label, params):40s} {ks[0]}-NN {acc:.4f} "
                  f"fit {sum(r['fit_time'] for r in ok):7.2f}s  wall {time.perf_counter() - t0:6.1f}s "
                  f"{'' if len(ok) == len(recs) else recs[max(recs)]['status']}", file=sys.stderr, flush=True)
    per_ds = {m: {d: {str(k): (float(np.mean([r["test_accuracy"][str(k)] for r in recs.values()]))
                               if recs and all(r["status"] == "ok" for r in recs.values()) else None)
                      for k in ks} for d, recs in v.items()} for m, v in results.items()}
    fit_s = {m: {d: float(sum(r.get("fit_time") or 0.0 for r in recs.values())) for d, recs in v.items()}
             for m, v in results.items()}
    problems = {m: ", ".join(sorted({f"{d}:{r['status']}" for d, recs in v.items() for r in recs.values()
                                     if r["status"] != "ok"}))[:200] for m, v in results.items()}
    payload = dict(machine=machine(), versions=reference_versions(), half=args.half, datasets=datasets, ks=ks,
                   folds=args.folds or "all", max_train=args.max_train, wall=time.perf_counter() - t_start,
                   summary=summarise(per_ds, published, ks, datasets, fit_s, problems), per_dataset=per_ds,
                   fit_seconds=fit_s, published={k: {d: published[k].get(d) for d in datasets} for k in ks})
    table = print_tables(payload)
    out = args.out or os.path.join(HERE, "results", f"defaults-{args.half}.json")
    write_json(out, payload)
    if args.update_docs:
        update_docs_page("defaults", docs_block(args), f"{page_head(payload['machine'])}\n\n{table}")
    print(f"\nJSON written to {out}", file=sys.stderr)


# --------------------------------------------------------------------------- the full-size tier
def full_tier_datasets(half: str, split: dict, data_dir) -> list:
    from jaxdml.datasets import load_folds

    names = split["tuning"] + split["confirmation"] if half == "all" else split[half]
    out = []
    for name in names:
        try:
            n = load_folds(name, data_dir, n_folds=10).n_samples
        except FileNotFoundError:
            n = load_folds(name, data_dir, n_folds=5).n_samples
        if n >= FULL_MIN_SAMPLES:
            out.append(name)
    return out


def gain_check(per_size: dict, ks) -> list:
    """Per method and data set: 3-NN (first k) accuracy on the subset and on the whole fold, each
    minus Euclidean's, and whether a gain on the subset became a loss on the whole fold."""
    k = str(ks[0])
    rows = []
    for name in per_size["full"]:
        if name.split("{")[0] == "Euclidean":
            continue
        for d, acc_full in per_size["full"][name].items():
            acc_sub = per_size["subset"].get(name, {}).get(d, {}).get(k)
            e_full = per_size["full"].get("Euclidean", {}).get(d, {}).get(k)
            e_sub = per_size["subset"].get("Euclidean", {}).get(d, {}).get(k)
            row = dict(method=name, dataset=d, subset=acc_sub, full=acc_full.get(k), eucl_subset=e_sub,
                       eucl_full=e_full)
            if None not in (acc_sub, acc_full.get(k), e_sub, e_full):
                row.update(gain_subset=acc_sub - e_sub, gain_full=acc_full[k] - e_full)
                row["turned_to_loss"] = bool(row["gain_subset"] > 0 and row["gain_full"] < -LOSS_TOLERANCE)
            rows.append(row)
    return rows


def main_full(args, split):
    """``--tier full``: every method on whole training folds of the large data sets and on a
    stratified subset of each fold; the per-size summaries and the gain check."""
    from jaxdml.experiments import ResultCache
    from jaxdml.experiments._cache import code_hash

    ks = [int(k) for k in args.k.split(",")]
    datasets = args.datasets.split(",") if args.datasets else full_tier_datasets(args.half, split, args.data)
    units = method_units(args.methods, args.variant)
    if ("Euclidean", {}) not in units:
        units.insert(0, ("Euclidean", {}))
    cache, code = ResultCache(args.cache), code_hash()
    per_size, fit_s = {}, {}
    t_start = time.perf_counter()
    sizes = [sz.strip() for sz in args.sizes.split(",")]
    for size, cap in (("subset", SUBSET_ROWS), ("full", 0)):
        per_size[size], fit_s[size] = {}, {}
        if size not in sizes:
            continue
        for name in datasets:
            ds, _ = load_data(name, args.data, 10, FULL_MIN_SAMPLES - 1, cap)
            fold_ids = [int(f) for f in (args.folds or "1,2,3").split(",") if int(f) <= len(ds.folds)]
            for label, params in units:
                recs = run_unit(label, params, ds, fold_ids, ks, args, cache, code, stem=f"defaults-full-{size}")
                key = variant_label(label, params)
                ok = all(r["status"] == "ok" for r in recs.values())
                per_size[size].setdefault(key, {})[name] = {
                    str(k): float(np.mean([r["test_accuracy"][str(k)] for r in recs.values()])) if ok else None
                    for k in ks}
                fit_s[size].setdefault(key, {})[name] = float(sum(r.get("fit_time") or 0.0 for r in recs.values()))
                acc = per_size[size][key][name][str(ks[0])]
                print(f"{size:6s} {name:12s} {key:40s} {ks[0]}-NN {acc if acc is not None else float('nan'):.4f} "
                      f"fit {fit_s[size][key][name]:8.2f}s", file=sys.stderr, flush=True)
    checks = gain_check(per_size, ks)
    summary = []
    for key in dict.fromkeys([*per_size["subset"], *per_size["full"]]):  # either size may be the only one run
        row = dict(method=key)
        for size in ("subset", "full"):
            vals = [v[str(ks[0])] for v in per_size[size].get(key, {}).values()]  # {} for a size not run
            row[size] = float(np.mean(vals)) if vals and None not in vals else None
            row[f"{size}_fit_s"] = float(sum(fit_s[size].get(key, {}).values()))
        mine = [c for c in checks if c["method"] == key]
        row["turned_to_loss"] = ", ".join(c["dataset"] for c in mine if c.get("turned_to_loss")) or ("-" if mine else "")
        summary.append(row)
    payload = dict(machine=machine(), versions=reference_versions(), tier="full", datasets=datasets, ks=ks,
                   folds=args.folds or "1,2,3", subset_rows=SUBSET_ROWS, wall=time.perf_counter() - t_start,
                   per_size=per_size, fit_seconds=fit_s, summary=summary, gain_check=checks)
    print(json.dumps(payload, default=float))
    sizes = markdown_table(summary, [
        ("method", "method", ""), ("subset", f"{ks[0]}-NN, {SUBSET_ROWS} rows", ".4f"),
        ("full", f"{ks[0]}-NN, whole folds", ".4f"), ("subset_fit_s", "fit s (subset)", ".1f"),
        ("full_fit_s", "fit s (whole)", ".1f"), ("turned_to_loss", "gain turned to loss", "")])
    gains = markdown_table(checks, [
        ("method", "method", ""), ("dataset", "data set", ""), ("gain_subset", f"gain, {SUBSET_ROWS} rows", "+.4f"),
        ("gain_full", "gain, whole fold", "+.4f"), ("turned_to_loss", "turned to loss", "")])
    table = f"{sizes}\n\n{gains}"
    print(table)
    out = args.out or os.path.join(HERE, "results", f"defaults-full-{args.half}.json")
    write_json(out, payload)
    if args.update_docs:
        update_docs_page("defaults", docs_block(args), f"{page_head(payload['machine'])}\n\n{table}")
    print(f"\nJSON written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
