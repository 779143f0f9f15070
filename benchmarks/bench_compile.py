"""What a first fit compiles, how large each program is, and what XLA's compile options cost.

Each row is one fresh Python process with empty compilation caches (a private folder), fitting one estimator with
its defaults (``random_state=0``) on 90 % of a data set that ships with scikit-learn (min-max
scaled), then three more fits of the same shape (other rows, other seeds: the warm run time). Every
program the fit compiles through the executable cache is reported: its name, its size (StableHLO
operations of the lowered program, HLO instructions after XLA's optimisation) and its compile
seconds; programs compiled outside that cache (small helpers) appear in ``other_compile_s`` (JAX's
compile events).

``--options`` picks how the programs are compiled:

* ``default``: XLA's default options for every program;
* ``quick``: :data:`jaxdml._runtime._device.QUICK_COMPILE_OPTIONS` for every program;
* ``auto``: jaxdml's rule (quick up to :data:`jaxdml._runtime._device.QUICK_COMPILE_MAX_ELEMENTS` elements
  of traced arguments, the defaults above).

    python benchmarks/bench_compile.py                                    # NCA, LMNN, ITML ... on wine, cancer, digits
    python benchmarks/bench_compile.py --methods NCA --datasets wine --options default quick

Prints JSON and a table (first fit, compile, warm fit in seconds, and first + 9 warm fits: a
10-fold cross-validation's cost in one process; compare within one run only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, run_worker, write_json  # noqa: E402

DATASETS = ("wine", "cancer", "digits")
METHODS = ("NCA", "LMNN", "ITML", "MMC", "LSML", "SCML", "SDML", "LSI", "MCML", "LFDA")
OPTIONS = ("default", "quick", "auto")


def load(name: str):
    """A bundled data set, or ``synth-NxD``: ``make_classification`` with N rows, D features (up to 8
    informative), 3 classes, seed 0."""
    from sklearn import datasets
    from sklearn.preprocessing import MinMaxScaler

    if name.startswith("synth-"):
        n, d = (int(v) for v in name[len("synth-"):].split("x"))
        X, y = datasets.make_classification(n, d, n_informative=min(d, 8), n_redundant=0, n_classes=3,
                                            random_state=0)
    else:
        loader = {"wine": datasets.load_wine, "cancer": datasets.load_breast_cancer,
                  "digits": datasets.load_digits}[name]
        X, y = loader(return_X_y=True)
    return MinMaxScaler().fit_transform(X), y


def worker(method: str, dataset: str, options: str) -> dict:
    import numpy as np

    import jaxdml
    from jaxdml._runtime import _device as _runtime
    from jaxdml._runtime import _executable_cache

    if options == "default":
        _runtime.QUICK_COMPILE_MAX_ELEMENTS = -1
    elif options == "quick":
        _runtime.QUICK_COMPILE_MAX_ELEMENTS = 2**62
    programs, events = [], []
    fresh = _executable_cache._compile_fresh

    def recording(lowered):
        t0 = time.perf_counter()
        out = fresh(lowered)
        seconds = time.perf_counter() - t0
        hlo, text = out[0].as_text() or "", lowered.as_text()
        name = text.split("module @", 1)[-1].split(" ", 1)[0] if "module @" in text else "?"
        programs.append(dict(name=name, compile_s=seconds, stablehlo_ops=sum(" = " in ln for ln in text.splitlines()),
                             hlo_instructions=sum(" = " in ln for ln in hlo.splitlines())))
        return out

    import jax

    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: events.append(secs) if event.endswith("/backend_compile_duration") else None)
    _executable_cache._compile_fresh = recording
    X, y = load(dataset)
    n = int(0.9 * len(y))
    est = getattr(jaxdml, method)
    seeded = "random_state" in est().get_params()  # LFDA and the closed forms take no seed

    def cls(random_state):
        return est(random_state=random_state) if seeded else est()

    t0 = time.perf_counter()
    cls(random_state=0).fit(X[:n], y[:n])
    first = time.perf_counter() - t0
    warm = []
    for s in range(1, 4):
        t0 = time.perf_counter()
        cls(random_state=s).fit(X[s:n + s], y[s:n + s])
        warm.append(time.perf_counter() - t0)
    ours = sum(p["compile_s"] for p in programs)
    d = int(X.shape[1])
    return dict(method=method, dataset=dataset, options=options, n=n, d=d, elements=n * d, first_s=first,
                warm_s=float(np.median(warm)), cv10_s=first + 9 * float(np.median(warm)), compile_s=ours,
                other_compile_s=max(0.0, sum(events) - ours), programs=programs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), help=f"{', '.join(DATASETS)} or synth-NxD")
    p.add_argument("--options", nargs="+", default=list(OPTIONS), choices=OPTIONS)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--out", default=None)
    p.add_argument("--worker", nargs=3, metavar=("METHOD", "DATASET", "OPTIONS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker), default=float))
        return
    rows = []
    for dataset in args.datasets:
        for method in args.methods:
            for options in args.options:
                with tempfile.TemporaryDirectory() as folder:  # empty caches: a first process
                    res = run_worker(os.path.abspath(__file__), [method, dataset, options], args.timeout,
                                     {"JAXDML_CACHE_DIR": folder, "JAXDML_COMPILATION_CACHE": "1"})
                res.update(method=method, dataset=dataset, options=options)
                progs = res.get("programs") or []
                big = max(progs, key=lambda q: q["compile_s"], default={})
                res.update(n_programs=len(progs), largest=big.get("name"), largest_s=big.get("compile_s"),
                           largest_stablehlo=big.get("stablehlo_ops"), largest_hlo=big.get("hlo_instructions"))
                rows.append(res)
                num = {k: res.get(k, float("nan")) for k in ("first_s", "compile_s", "warm_s")}
                print(f"{dataset:7s} {method:6s} {options:8s} {res['status']:8s} first {num['first_s']:6.2f}s "
                      f"compile {num['compile_s']:5.2f}s warm {num['warm_s']:6.3f}s", file=sys.stderr, flush=True)
    payload = dict(machine=machine(), rows=rows)
    print(json.dumps(payload, default=float))
    print(markdown_table(rows, [("dataset", "data", ""), ("method", "method", ""), ("options", "options", ""),
                                ("elements", "n x d", "d"), ("first_s", "first fit s", ".2f"),
                                ("compile_s", "compile s", ".2f"),
                                ("other_compile_s", "other compile s", ".2f"), ("warm_s", "warm fit s", ".3f"),
                                ("cv10_s", "first + 9 warm s", ".2f"),
                                ("n_programs", "programs", "d"), ("largest", "largest program", ""),
                                ("largest_stablehlo", "StableHLO ops", "d"), ("largest_hlo", "HLO after opt.", "d"),
                                ("status", "status", "")]))
    if args.out:
        write_json(args.out, payload)


if __name__ == "__main__":
    main()
