"""Run an experiment: datasets x algorithms x folds, cached per fold, summarised in tables.

For every dataset and fold: the min-max scaling is fitted on the training fold (and applied to
both folds), the algorithm is fitted on the training fold only, and its classifier is scored on
the training fold (leave-one-out for k-NN) and on the test fold. Every fit of a dataset gets
``pad_to`` = its largest training fold, so all its folds share one compiled executable.

A fold whose fit or scoring raises is recorded with ``status="failed"`` and its error, and the
run goes on; the table cell of that (dataset, algorithm) is then empty. A method that this
installation does not provide (``Unknown loss``, a missing estimator or classifier) is recorded
as ``"unavailable"`` and retried on the next run; genuine failures are cached like successes
(``retry_failed=True`` recomputes them).
"""

from __future__ import annotations

import datetime
import inspect
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..datasets import default_data_dir, load_folds
from ._cache import ResultCache, code_hash, data_hash, fingerprint
from ._config import DIM_TABLE_NAMES, DIMENSIONS, Algorithm, get_experiment, resolve_dimensions, select_algorithms
from ._evaluate import Unavailable, classifier_scores
from ._tables import Table

__all__ = ["run_experiment", "evaluate_fold", "ExperimentResult", "build_tables", "fit_transform"]


@dataclass
class ExperimentResult:
    """Everything a run produced.

    ``records``: one dict per (dataset, row, algorithm, fold) (the per-fold raw results);
    ``tables``: file stem -> :class:`Table` (``"basic-3nn-test"``, ``"basic-3nn-train"``, or for
    ``dim`` ``"dim-3nn-sonar-test"``...); ``files``: what was written.
    """

    experiment: str
    k: Optional[int]
    stem: str
    records: list
    tables: dict
    files: list = field(default_factory=list)
    wall_time: float = 0.0

    def table(self, split: str = "test", dataset: Optional[str] = None) -> Table:
        """The table of ``split`` (``"test"`` or ``"train"``); with ``dataset``, that data set's table of
        the dimension experiment."""
        end = f"-{split}" if dataset is None else f"-{DIM_TABLE_NAMES.get(dataset, dataset)}-{split}"
        for name, t in self.tables.items():
            if name.endswith(end):
                return t
        raise KeyError(f"no {split!r} table{' for ' + dataset if dataset else ''}; have {list(self.tables)}")

    def failures(self) -> list:
        """The per-fold records whose algorithm failed or was unavailable."""
        return [r for r in self.records if r["status"] in ("failed", "unavailable")]


# --------------------------------------------------------------------------- fitting
def _accepts(cls, name) -> bool:
    try:
        return name in inspect.signature(cls).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


def _is_unavailable(exc: Exception) -> bool:
    return isinstance(exc, Unavailable) or (isinstance(exc, ValueError) and str(exc).startswith("Unknown loss"))


def fit_transform(alg: Algorithm, X, codes, *, pad_to=None, n_components=None, seed=0):
    """Fit ``alg`` on ``(X, codes)``; return ``(transform, info)``.

    With an existing estimator class that uses the standard fit, ``jaxdml.fit`` is called with the
    estimator's own method record and arguments plus ``pad_to``; otherwise the estimator's ``fit``;
    without the class, ``jaxdml.fit(loss=alg.method, **alg.params)``.
    """
    import jaxdml
    from jaxdml.estimators import BaseMetricLearner

    if alg.method == "identity":
        return (lambda Z: Z), {}
    if alg.method == "kpca":
        return _fit_kpca(alg, X, n_components, seed)
    params = dict(alg.params)
    if n_components is not None:
        params["n_components"] = int(n_components)
    cls = getattr(jaxdml, alg.estimator, None) if alg.estimator else None
    if cls is None:
        if alg.method not in jaxdml.available_methods():
            raise Unavailable(f"Unknown loss {alg.method!r}: jaxdml has neither the method nor the estimator "
                              f"{alg.estimator!r} yet.")
        res = jaxdml.fit(X, codes, loss=alg.method, pad_to=pad_to, random_state=seed, **params)
        return res.transform, _info(res)
    if _accepts(cls, "random_state") and params.get("random_state") is None:
        params["random_state"] = seed
    est = cls(**params)
    if type(est).fit is BaseMetricLearner.fit and hasattr(est, "_fit_kwargs") and est._method not in _OWN_FIT:
        kw = dict(est._fit_kwargs())
        kw.setdefault("pad_to", pad_to)
        kw.setdefault("random_state", seed)
        record = est._get_record()  # by name when registered under it, else the record itself
        res = jaxdml.fit(X, codes, loss=record.name if jaxdml.methods().get(record.name) is record else record, **kw)
        return res.transform, _info(res)
    est.fit(X, codes)
    info = {k: getattr(est, a) for k, a in (("n_iter", "n_iter_"), ("converged", "converged_")) if hasattr(est, a)}
    return est.transform, info


#: methods fitted through their estimator's ``fit`` (without the runner's ``pad_to``), as the published
#: tables were computed
_OWN_FIT = ("ncmc", "klmnn")


def _info(res) -> dict:
    return dict(n_iter=int(res.n_iter), converged=bool(res.converged),
                loss=None if res.loss is None or not np.isfinite(res.loss) else float(res.loss))


def _fit_kpca(alg, X, n_components, seed):
    from sklearn.decomposition import KernelPCA

    from ..kernels import kernel_matrix

    kp = {k: v for k, v in alg.params.items() if k in ("kernel", "gamma", "degree", "coef0")}
    model = KernelPCA(n_components=n_components, kernel="precomputed", random_state=seed)
    model.fit(kernel_matrix(X, kernel=kp.get("kernel", "rbf"), gamma=kp.get("gamma"), degree=kp.get("degree", 3),
                            coef0=kp.get("coef0", 1.0)))

    def transform(Z):
        return model.transform(kernel_matrix(Z, X, kernel=kp.get("kernel", "rbf"), gamma=kp.get("gamma"),
                                             degree=kp.get("degree", 3), coef0=kp.get("coef0", 1.0)))

    return transform, {}


def evaluate_fold(alg: Algorithm, X_train, codes_train, X_test, codes_test, n_classes: int, *,
                  pad_to=None, n_components=None, seed=0) -> dict:
    """Scale, fit, transform and score one fold; returns the result fields of a record.

    Exceptions propagate (the runner records them).
    """
    from sklearn.preprocessing import MinMaxScaler

    scaler = MinMaxScaler().fit(X_train)
    Xtr, Xte = scaler.transform(X_train), scaler.transform(X_test)
    t0 = time.perf_counter()
    transform, info = fit_transform(alg, Xtr, codes_train, pad_to=pad_to, n_components=n_components, seed=seed)
    Ztr = np.asarray(transform(Xtr), dtype=np.float64)
    fit_time = time.perf_counter() - t0
    Zte = np.asarray(transform(Xte), dtype=np.float64)
    if not (np.all(np.isfinite(Ztr)) and np.all(np.isfinite(Zte))):
        raise FloatingPointError("the learned transformation produced non-finite values.")
    t1 = time.perf_counter()
    train, test = classifier_scores(alg.classifier, Ztr, codes_train, Zte, codes_test, n_classes, seed=seed)
    return dict(train_accuracy=train, test_accuracy=test, fit_time=fit_time,
                eval_time=time.perf_counter() - t1, n_components_out=int(Ztr.shape[1]), **info)


# --------------------------------------------------------------------------- running
def _units(exp, algs, data, dims):
    """``[(folds, row label, algorithm, n_components, cache key, applicable)]`` in run order."""
    units = []
    for ds in data:
        if exp.rows == "dimensions":
            rows = resolve_dimensions(dims, ds.n_features, ds.n_classes)
            if not rows:
                raise ValueError(f"none of the dimensions {dims} applies to {ds.name!r} ({ds.n_features} features, "
                                 f"{ds.n_classes} classes).")
            for row, d in rows:
                for a in algs:
                    ok = not (a.max_components == "classes-1" and d > ds.n_classes - 1)
                    units.append((ds, row, a, d, f"{a.label}@d={d}", ok))
        else:
            for a in algs:
                units.append((ds, ds.name, a, None, a.label, True))
    return units


def _fold_record(stem, ds, row, alg, d, key, applicable, f, fold, cache, done, *, code, seed, rerun,
                 retry_failed) -> dict:
    """The record of one (dataset, row, algorithm, fold): from the cache, or computed and cached."""
    Xtr, ytr, Xte, yte = fold
    index = {c: i for i, c in enumerate(ds.classes)}
    pad_to = ds.max_train_size
    ctr = np.array([index[v] for v in ytr], dtype=np.int64)
    cte = np.array([index[v] for v in yte], dtype=np.int64)
    config = dict(algorithm=alg.key(), n_components=d, dataset=ds.name, fold=f, code=code,
                  data=data_hash(Xtr, ctr, Xte, cte), scaling="minmax", seed=seed,
                  train_score="leave-one-out" if alg.classifier[0] == "knn" else "resubstitution")
    fp = fingerprint(config)
    rec = done.get((ds.name, key, f))  # one fit serves two rows (dim: "1" and "N. Clases - 1")
    if rec is None and not rerun:
        rec = cache.load(stem, ds.name, key, f, fp)
        if rec is not None and (rec["status"] == "unavailable" or (rec["status"] == "failed" and retry_failed)):
            rec = None
    if rec is not None:
        return {**rec, "row": row}
    rec = dict(experiment=stem, dataset=ds.name, row=row, algorithm=alg.label, cache_key=key,
               fold=f, n_folds=len(ds.folds), n_components=d, classifier=list(alg.classifier),
               n_train=int(len(ytr)), n_test=int(len(yte)), n_features=ds.n_features,
               n_classes=ds.n_classes, pad_to=pad_to, fingerprint=fp, error=None,
               timestamp=datetime.datetime.now().isoformat(timespec="seconds"))
    if not applicable:
        rec.update(status="n/a", error=f"{alg.label} learns at most n_classes-1 = {ds.n_classes - 1} dimensions")
        return rec
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec.update(evaluate_fold(alg, Xtr, ctr, Xte, cte, ds.n_classes, pad_to=pad_to, n_components=d, seed=seed))
            rec["status"] = "ok"
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            rec["status"] = "unavailable" if _is_unavailable(exc) else "failed"
            rec["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    msgs = sorted({f"{w.category.__name__}: {w.message}"[:300] for w in caught})
    rec["warnings"] = msgs[:10]
    cache.store(rec)
    return rec


def run_experiment(name: str, *, data_dir=None, datasets=None, k: Optional[int] = None, algorithms=None,
                   out_dir=None, cache_dir="auto", n_folds: int = 10, dims=None, rerun: bool = False,
                   retry_failed: bool = False, progress: bool = True, seed: int = 0, split_seed: int = 28,
                   write: bool = True) -> ExperimentResult:
    """Run one of the experiments of :data:`EXPERIMENTS`.

    Parameters
    ----------
    name : {"basic", "ncm", "kernel", "dim"}
    data_dir : path, optional
        The KEEL folder (holding ``10-fold/``); default :func:`jaxdml.datasets.default_data_dir`.
    datasets : list of str, optional
        Default: the experiment's datasets. Names are resolved by :func:`jaxdml.datasets.load_folds`
        (KEEL folds, an unsplit ``.arff``/``.dat`` in ``data_dir``, or a scikit-learn data set).
    k : int, optional
        Neighbours of the k-NN classifier (and of the neighbour-based methods). Default 3.
    algorithms : list of str, optional
        Column labels to run (``"NCA"``; ``"KDA"`` selects all its kernels). Default: all. A name
        that is no column of the experiment but a registered method (see
        :func:`jaxdml.register_method`) adds a column of that method, scored by k-NN.
    out_dir : path, optional
        Where the tables (CSV, Markdown, LaTeX) and the per-fold JSON go.
    cache_dir : path, "auto" or None
        Per-fold result cache; "auto" is ``out_dir/cache`` (no cache without ``out_dir``).
    n_folds : int, default=10
    dims : list, optional
        Dimensions of the ``dim`` experiment (default :data:`DIMENSIONS`).
    rerun : bool, default=False
        Ignore cached results (and overwrite them).
    retry_failed : bool, default=False
        Recompute cached failures.
    progress : bool, default=True
        Show a progress bar with ETA (tqdm, on stderr).
    seed : int, default=0
        ``random_state`` of every stochastic method and classifier.
    split_seed : int, default=28
        Seed of the stratified split of datasets without KEEL folds (28 as in the paper).
    write : bool, default=True
        Write the output files when ``out_dir`` is given.

    Returns
    -------
    ExperimentResult
    """
    from tqdm.auto import tqdm

    exp = get_experiment(name)
    k = exp.default_k if k is None else int(k)
    if k < 1:
        raise ValueError(f"k must be a positive integer; got {k}.")
    stem = exp.stem(k)
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ValueError(f"the output folder {out_dir} exists and is not a folder; name a folder for --out.")
    algs = select_algorithms(exp.algorithms(k), algorithms, k=k)
    chosen = data_dir is not None  # a folder the user named must hold the data sets asked for
    if data_dir is None:
        data_dir = default_data_dir()
    elif not Path(data_dir).is_dir():
        raise FileNotFoundError(f"data folder not found: {data_dir}")
    names = list(exp.datasets if datasets is None else datasets)
    if not names:
        raise ValueError("no datasets to run.")
    data = [load_folds(n, data_dir, n_folds=n_folds, seed=split_seed, bundled_fallback=not chosen) for n in names]
    dims = list(DIMENSIONS if dims is None else dims)
    bad = [d for d in dims if d not in ("max", "classes-1") and (isinstance(d, bool) or not isinstance(d, int) or d < 1)]
    if bad:
        raise ValueError(f"dims must be positive integers, 'max' or 'classes-1'; got {bad}.")
    if exp.uses_k:
        smallest = min(min(len(f[1]) for f in ds.folds) for ds in data)
        if k >= smallest:
            raise ValueError(f"k={k} neighbours need more training samples than the smallest training fold has "
                             f"({smallest}); choose k < {smallest}.")
    if cache_dir == "auto":
        cache_dir = None if out_dir is None else Path(out_dir) / "cache"
    cache = ResultCache(cache_dir)
    units = _units(exp, algs, data, dims)
    code = code_hash()
    t_start = time.perf_counter()
    records, done = [], {}
    total = sum(len(u[0].folds) for u in units)
    bar = tqdm(total=total, desc=stem, unit="fold", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    try:
        for ds, row, alg, d, key, applicable in units:
            bar.set_postfix_str(f"{ds.name} {key}", refresh=False)
            for f, fold in enumerate(ds.folds, start=1):
                rec = _fold_record(stem, ds, row, alg, d, key, applicable, f, fold, cache, done, code=code, seed=seed,
                                   rerun=rerun, retry_failed=retry_failed)
                done[(ds.name, key, f)] = rec
                records.append(rec)
                bar.update(1)
    finally:
        bar.close()
    result = ExperimentResult(name, k if exp.uses_k else None, stem, records, build_tables(exp, k, records, data, algs))
    result.wall_time = time.perf_counter() - t_start
    if out_dir is not None and write:
        result.files = write_outputs(result, out_dir)
    return result


def build_tables(exp, k, records, data, algs) -> dict:
    """Mean accuracy per (row, algorithm) over folds; a cell is empty unless every fold succeeded."""
    stem = exp.stem(k)
    cols = [a.label for a in algs]
    groups: dict = {}
    for r in records:
        groups.setdefault((r["dataset"], r["row"], r["algorithm"]), []).append(r)

    def cell(ds_name, row, col, split):
        recs = groups.get((ds_name, row, col), [])
        if not recs or any(r["status"] != "ok" for r in recs) or len(recs) != recs[0]["n_folds"]:
            return np.nan, sum(r["status"] == "ok" for r in recs)
        return float(np.mean([r[f"{split}_accuracy"] for r in recs])), len(recs)

    tables = {}
    for split in ("test", "train"):
        if exp.rows == "dimensions":
            for ds in data:
                rows = list(dict.fromkeys(r["row"] for r in records if r["dataset"] == ds.name))
                vals = np.array([[cell(ds.name, row, c, split)[0] for c in cols] for row in rows]).reshape(len(rows),
                                                                                                           len(cols))
                name = f"{stem}-{DIM_TABLE_NAMES.get(ds.name, ds.name)}-{split}"  # the published file names
                tables[name] = Table(rows, cols, vals, title=f"{exp.name} {ds.name} {k}-NN {split}", summary=False)
        else:
            rows = [ds.name for ds in data]
            vals = np.array([[cell(n, n, c, split)[0] for c in cols] for n in rows]).reshape(len(rows), len(cols))
            title = f"{exp.name} {split}" + (f" {k}-NN" if exp.uses_k else "")
            tables[f"{stem}-{split}"] = Table(rows, cols, vals, title=title, summary=True)
    return tables


def write_outputs(result: ExperimentResult, out_dir) -> list:
    """Write every table as ``.csv``, ``.md`` and ``.tex`` and the records as ``<stem>-folds.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, t in result.tables.items():
        for ext, fn in (("csv", t.to_csv), ("md", t.to_markdown), ("tex", t.to_latex)):
            p = out / f"{name}.{ext}"
            fn(p)
            files.append(p)
    p = out / f"{result.stem}-folds.json"
    keep = ("experiment", "dataset", "row", "algorithm", "fold", "n_components", "status", "train_accuracy",
            "test_accuracy", "fit_time", "eval_time", "n_train", "n_test", "n_features", "n_classes",
            "n_components_out", "n_iter", "converged", "loss", "error", "warnings", "classifier", "pad_to")
    p.write_text(json.dumps([{k: r.get(k) for k in keep if k in r} for r in result.records], indent=1,
                            default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    files.append(p)
    return files
