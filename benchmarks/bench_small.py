"""Small data without the compile tax: jaxdml's NCA, LMNN and ITML against the fastest references.

Every row is one fresh Python process (a subprocess) running a 10-fold cross-validation on the
KEEL partitions (``--data``, default ../shared/keel; min-max scaling fitted on each training fold),
estimators with their defaults (``random_state=0``), 3-NN accuracy on the learned embedding.
Imports (and JAX's backend start) are excluded from the time, compilation is included. For
jaxdml every (method, data set) runs twice with one private cache folder that starts empty:

* ``first``: the first process on the machine (empty persistent compilation cache),
* ``second``: a second process (loads the compiled programs the first one stored),

and the time JAX spends on tracing, lowering and XLA compilation (or loading from the cache) is
reported separately (``compile_s``, from ``jax.monitoring`` event durations) from the rest
(``run_s``). References: scikit-learn's NCA, mlpack's LMNN and metric-learn's ITML_Supervised
(``--extra`` adds metric-learn's LMNN).

    python benchmarks/bench_small.py [--datasets wine sonar] [--repeat 1] [--out results.json]

Timings are wall-clock seconds on whatever machine runs the script; compare the ratios measured in
one invocation only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import (machine, markdown_table, metric_learn_compat, page_head, run_worker,  # noqa: E402
                      update_docs_page, write_json)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = ("NCA", "LMNN", "ITML")
#: family -> reference library names (the first is the one the targets compare with)
REFERENCES = {"NCA": ("scikit-learn",), "LMNN": ("mlpack",), "ITML": ("metric-learn",)}
EXTRA = {"LMNN": ("metric-learn",)}
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")


def _codes(y):
    return np.unique(y, return_inverse=True)[1].astype(np.int64)


def _factory(family, library):
    """``(import_fn, fit_fn)``: imports done outside the timed region; ``fit(X, y) -> transform``."""
    if library == "jaxdml":
        def imp():
            import jax

            import jaxdml  # noqa: F401
            jax.devices()  # start the backend (part of the import, not of the fit)

        def fit(X, y):
            import jaxdml

            return getattr(jaxdml, family)(random_state=0).fit(X, y).transform
        return imp, fit
    if library == "scikit-learn":
        def imp():
            from sklearn.neighbors import NeighborhoodComponentsAnalysis  # noqa: F401

        def fit(X, y):
            from sklearn.neighbors import NeighborhoodComponentsAnalysis

            return NeighborhoodComponentsAnalysis(random_state=0).fit(X, y).transform
        return imp, fit
    if library == "mlpack":
        def imp():
            import mlpack  # noqa: F401

        def fit(X, y):
            import mlpack

            L = np.asarray(mlpack.lmnn(input_=X, labels=_codes(y), k=3, seed=0)["output"])
            return lambda Z: Z @ L.T
        return imp, fit
    if library == "metric-learn":
        name = {"ITML": "ITML_Supervised", "LMNN": "LMNN", "NCA": "NCA"}[family]

        def imp():
            metric_learn_compat()
            import metric_learn  # noqa: F401

        def fit(X, y):
            import metric_learn

            kw = dict(n_neighbors=3) if family == "LMNN" else {}
            return getattr(metric_learn, name)(random_state=0, **kw).fit(X, y).transform
        return imp, fit
    raise ValueError(f"unknown library {library!r}")


def _compile_listener(store):
    def on_duration(event, duration, **_):
        if event in COMPILE_EVENTS:
            store[event] = store.get(event, 0.0) + duration
        elif event.endswith("cache_retrieval_time_sec"):
            store["cache_load"] = store.get("cache_load", 0.0) + duration

    def on_event(event, **_):
        if event.endswith(("cache_hits", "cache_misses")):
            key = event.rsplit("/", 1)[-1]
            store[key] = store.get(key, 0) + 1
    return on_duration, on_event


def worker(family, library, dataset, data_dir):
    t0 = time.perf_counter()
    imp, fit = _factory(family, library)
    imp()
    from jaxdml.datasets import load_keel_folds
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    folds = load_keel_folds(data_dir, dataset, 10).folds
    import_s = time.perf_counter() - t0
    store = {}
    if library == "jaxdml":
        import jax

        on_duration, on_event = _compile_listener(store)
        jax.monitoring.register_event_duration_secs_listener(on_duration)
        jax.monitoring.register_event_listener(on_event)
    times, accs = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for Xtr, ytr, Xte, yte in folds:
            # integer labels for every library (metric-learn's ITML_Supervised rejects strings)
            classes = np.unique(np.concatenate([ytr, yte]))
            ytr, yte = np.searchsorted(classes, ytr), np.searchsorted(classes, yte)
            sc = MinMaxScaler().fit(Xtr)
            Xtr_s, Xte_s = sc.transform(Xtr), sc.transform(Xte)
            t1 = time.perf_counter()
            tf = fit(Xtr_s, ytr)
            times.append(time.perf_counter() - t1)
            accs.append(KNeighborsClassifier(3).fit(tf(Xtr_s), ytr).score(tf(Xte_s), yte))
    total = float(np.sum(times))
    compile_s = float(sum(store.get(e, 0.0) for e in COMPILE_EVENTS))
    out = dict(fit_s=total, first_fold_s=times[0], accuracy=float(np.mean(accs)), import_s=import_s)
    if library == "jaxdml":
        out.update(compile_s=compile_s, run_s=total - compile_s,
                   trace_s=store.get(COMPILE_EVENTS[0], 0.0), lower_s=store.get(COMPILE_EVENTS[1], 0.0),
                   xla_s=store.get(COMPILE_EVENTS[2], 0.0), cache_load_s=store.get("cache_load", 0.0),
                   cache_hits=store.get("cache_hits", 0), cache_misses=store.get("cache_misses", 0),
                   exec_cache_hits=__import__("jaxdml")._executable_cache.stats()["hits"])
    print(json.dumps(out), flush=True)


def _rows(datasets, data_dir, extra, timeout, baseline=None):
    script = os.path.abspath(__file__)
    rows = []
    env_base = {"PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for ds in datasets:
        for fam in FAMILIES:
            if baseline:  # another checkout of jaxdml with its own defaults, in a fresh process
                env = {"PYTHONPATH": os.path.abspath(baseline), "JAXDML_CACHE_DIR": tempfile.mkdtemp()}
                r = run_worker(script, [fam, "jaxdml", ds, data_dir], timeout, env)
                shutil.rmtree(env["JAXDML_CACHE_DIR"], ignore_errors=True)
                rows.append(dict(dataset=ds, method=fam, library="jaxdml", process="baseline", **r))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            cache = tempfile.mkdtemp(prefix=f"jaxdml-bench-{ds}-{fam}-")
            try:
                env = dict(env_base, JAXDML_COMPILATION_CACHE="1", JAXDML_CACHE_DIR=cache)
                for proc in ("first", "second"):
                    r = run_worker(script, [fam, "jaxdml", ds, data_dir], timeout, env)
                    rows.append(dict(dataset=ds, method=fam, library="jaxdml", process=proc, **r))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            for lib in REFERENCES[fam] + (EXTRA.get(fam, ()) if extra else ()):
                # references never touch JAX's cache; keep them off the user's folder all the same
                r = run_worker(script, [fam, lib, ds, data_dir], timeout, dict(env_base, JAXDML_COMPILATION_CACHE="0"))
                rows.append(dict(dataset=ds, method=fam, library=lib, process="fresh", **r))
            for r in rows[-(2 + len(REFERENCES[fam]) + (len(EXTRA.get(fam, ())) if extra else 0)):]:
                print(json.dumps(r), file=sys.stderr, flush=True)
    return rows


def _ratios(rows):
    """Time of each jaxdml row / the first reference's time, measured in the same invocation."""
    ref = {(r["dataset"], r["method"]): r for r in rows
           if r["library"] == REFERENCES[r["method"]][0] and r.get("status") == "ok"}
    for r in rows:
        base = ref.get((r["dataset"], r["method"]))
        if r["library"] == "jaxdml" and base and r.get("status") == "ok":
            r["ratio"] = r["fit_s"] / base["fit_s"]
            r["target"] = {"second": 1.0, "first": 2.0}.get(r["process"])
            r["acc_diff"] = r["accuracy"] - base["accuracy"]
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=4, metavar=("FAMILY", "LIBRARY", "DATASET", "DATA_DIR"))
    p.add_argument("--datasets", nargs="+", default=["wine", "sonar"])
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "keel"))
    p.add_argument("--repeat", type=int, default=1, help="run the whole table this many times")
    p.add_argument("--extra", action="store_true", help="also metric-learn's LMNN")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--baseline", default=None,
                   help="also time the jaxdml found at this checkout (its defaults, fresh process)")
    p.add_argument("--out", default=None)
    p.add_argument("--update-docs", action="store_true",
                   help="write the tables into docs/benchmarks/latency.md (block small-latency)")
    args = p.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return
    if args.update_docs:  # the page's block must exist before the run, not after it
        update_docs_page("latency", "small-latency", None)
    data_dir = os.path.abspath(args.data)
    runs, tables = [], []
    for rep in range(args.repeat):
        rows = _ratios(_rows(args.datasets, data_dir, args.extra, args.timeout, args.baseline))
        for r in rows:
            r["repeat"] = rep
        runs.extend(rows)
        print(f"\n### run {rep + 1} of {args.repeat}\n")
        tables.append(markdown_table(rows, [
            ("dataset", "data", ""), ("method", "method", ""), ("library", "library", ""),
            ("process", "process", ""), ("fit_s", "10-fold fit s", ".2f"), ("compile_s", "compile s", ".2f"),
            ("run_s", "run s", ".2f"), ("ratio", "ratio", ".2f"), ("target", "target", ".0f"),
            ("accuracy", "3-NN acc", ".4f"), ("cache_hits", "cache hits", "d"), ("exec_cache_hits", "exec hits", "d"),
            ("status", "status", ""),
        ]))
        print(tables[-1])
    if args.update_docs:
        update_docs_page("latency", "small-latency", page_head(machine()) + "".join(
            f"\n\nRun {i + 1} of {len(tables)}:\n\n{t}" for i, t in enumerate(tables)))
    if args.out:
        import platform

        write_json(args.out, dict(machine=dict(python=platform.python_version(), platform=platform.platform(),
                                               cpus=os.cpu_count(),
                                               load_average=os.getloadavg()), rows=runs))


if __name__ == "__main__":
    main()
