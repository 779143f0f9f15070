"""Scale matrix: every registered method, with its defaults, at growing N.

For each (method, case) a fresh process fits ``jaxdml.fit(X, y, loss=name, random_state=0)`` on
the case's training rows (compilation included, no persistent cache), and reports the fit time
(wall, and the process's CPU time over all its threads: the fair number on a shared machine),
the peak resident memory (and the device's peak bytes on an accelerator), the 3-NN test accuracy
under the learned metric and the Euclidean 3-NN accuracy on the same rows. A run that exceeds
``--timeout`` seconds or ``--memory-limit`` GiB is stopped and recorded as such.

Cases are ``DATASET:N`` (N training rows):

- ``synth-dD-cC[-iI][-rR][-sS]``: ``make_classification`` with D features (I informative, default
  3D/8; R redundant, default D/8), C classes, two clusters per class, class separation S (default
  1), seed 0, min-max scaled on the training rows. ``synth-d16-c26-i12-r4-s2`` stands in for a
  letter-like set (Euclidean 3-NN 0.78 on 2 000 rows, 0.90 on 18 000); ``synth-d32-c10`` at
  200 000 rows is a hard one (16 noise features; Euclidean 0.50). The generator is
  run once for the largest N of the data set; a smaller N is a stratified subset of the same
  training rows, and every N is tested on the same held-out rows (2 000 for up to 20 000 training
  rows, else 10 000), so that the rows of one data set differ only in how much data the method saw.
  The k-NN reference set is the first 50 000 training rows (the learned map is fitted on all).
- ``keel-NAME``: fold 1 of the shared KEEL 10-fold partition (``--data``); ``N`` may be ``full``.
- ``large-NAME``: a real data set of ``../shared/large`` (pendigits, eeg-eye-state, kropt, electricity), fitted
  on each split of ``--splits`` (default 0,1,2: the shipped split and two drawn by the rule of
  ``benchmarks/_large.py``) in one process; ``N`` may be ``full``. The row reports the means over the splits, the
  first split's fit time (compilation included) and the discordant test rows against Euclidean, and the run ends
  with protocol round 16's gain check (``--plan all=large:2000,large:full`` names all four sets).

    python benchmarks/bench_scale_matrix.py                                 # the default matrix
    python benchmarks/bench_scale_matrix.py --plan nca,itml=synth-d16-c26:2000,synth-d16-c26:18000
    python benchmarks/bench_scale_matrix.py --plan nca,lmnn=synth-d64-c10:1000000 \\
        --plan rest=synth-d32-c10:200000 --device gpu --jobs 2 --deadline 300
    python benchmarks/bench_scale_matrix.py --markdown table.md             # also write the table
    python benchmarks/bench_scale_matrix.py --plan "all=large:2000,large:full"  # the real full-size tier

``--plan METHODS=CASES[@SECONDS]`` may repeat; METHODS is ``all``, ``rest`` (every method no other
plan names) or a comma list of registered names, each optionally with settings that replace its
defaults, ``NAME:key=value;key=value`` (values as Python literals: ``dmlmj:max_anchors=None``);
``@SECONDS`` sets that plan's time limit per fit. Results: a Markdown table on stdout, JSON in ``--out``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _large  # noqa: E402
from _harness import machine, markdown_table, peak_rss_mb, update_docs_page, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PLAN = "all=synth-d16-c26-i12-r4-s2:2000,synth-d16-c26-i12-r4-s2:18000,synth-d32-c10:200000"
KNN_REFERENCE_ROWS = 50_000


# ----------------------------------------------------------------------------------------- data
def synthetic(name: str, n_train: int, seed: int = 0):
    """``synth-dD-cC[-iI][-rR][-sS]`` with ``n_train`` training rows and its held-out rows (min-max
    scaled): D features of which I informative (default 3D/8) and R redundant (default D/8), C
    classes of two clusters each, class separation S (default 1)."""
    from sklearn.datasets import make_classification

    parts = {p[0]: float(p[1:]) for p in name.split("-")[1:]}
    d, c = int(parts["d"]), int(parts["c"])
    n_test = 2000 if n_train <= 20_000 else 10_000
    X, y = make_classification(n_samples=n_train + n_test, n_features=d,
                               n_informative=int(parts.get("i", max(2, 3 * d // 8))),
                               n_redundant=int(parts.get("r", d // 8)), n_classes=c, n_clusters_per_class=2,
                               class_sep=parts.get("s", 1.0), random_state=seed)
    X = X.astype(np.float32)
    return _scaled(X[:n_train], y[:n_train], X[n_train:], y[n_train:])


def keel(name: str, data_dir: str):
    from jaxdml.datasets import load_keel_folds

    Xtr, ytr, Xte, yte = load_keel_folds(data_dir, name, 10).folds[0]
    return _scaled(np.asarray(Xtr, np.float32), ytr, np.asarray(Xte, np.float32), yte)


def _scaled(Xtr, ytr, Xte, yte):
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    codes = np.unique(np.concatenate([ytr, yte]), return_inverse=True)[1]
    return (Xtr - lo) / scale, codes[:len(ytr)], (Xte - lo) / scale, codes[len(ytr):]


def subset(X, y, n, seed=0):
    """A stratified subset of ``n`` rows (all of them when ``n >= len(y)``)."""
    if n >= len(y):
        return X, y
    from sklearn.model_selection import train_test_split

    idx = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)[0]
    idx = np.sort(idx)
    return X[idx], y[idx]


def prepare_data(cases, data_dir, folder, splits=(0,)):
    """Generate or read every data set once (at its largest N) into ``folder``; returns its paths (a
    comma-separated list of one file per split for ``large-`` sets)."""
    largest = {}
    for ds, n in cases:
        largest[ds] = max(largest.get(ds, 0), n if n != "full" else 0)
    paths = {}
    for ds, n in largest.items():
        if ds.startswith("large-"):
            paths[ds] = ",".join(_large.prepare(ds[6:], splits, folder))
            continue
        Xtr, ytr, Xte, yte = synthetic(ds, n) if ds.startswith("synth-") else keel(ds[5:], data_dir)
        paths[ds] = os.path.join(folder, ds + ".npz")
        np.savez(paths[ds], Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte)
    return paths


# --------------------------------------------------------------------------------------- worker
def knn_accuracy(Ztr, ytr, Zte, yte, k=3, per_row=False):
    """k-NN accuracy (majority vote, ties to the nearest label) by jaxdml's exact blockwise search; with
    ``per_row`` the boolean vector of test rows predicted right."""
    from jaxdml.methods.core._blend import vote_nearest_tie
    from jaxdml.neighbors import knn_search

    Ztr, ytr = Ztr[:KNN_REFERENCE_ROWS], ytr[:KNN_REFERENCE_ROWS]
    idx, _ = knn_search(np.asarray(Zte, np.float32), k, Y=np.asarray(Ztr, np.float32))
    pred = vote_nearest_tie(ytr[np.asarray(idx)], int(ytr.max()) + 1)  # the blend's own vote
    return (pred == yte) if per_row else float(np.mean(pred == yte))


def device_peak_mib():
    import jax

    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:  # backends without memory statistics
        stats = {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2**20


def method_settings(spec):
    """``(name, settings)`` of a plan's method ``NAME[:key=value;...]`` (values as Python literals, else
    strings)."""
    name, _, rest = spec.partition(":")
    settings = {}
    for item in filter(None, rest.split(";")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"--plan: setting {item!r} of {spec!r} is not key=value")
        try:
            settings[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            settings[key] = value
    return name, settings


def worker(method, paths, n):
    """Fit ``method`` on each data file of ``paths`` (comma-separated) in turn; print one JSON line: the
    first file's fit time and the means over the files, with each file's own numbers in ``per_split``."""
    import jax

    method, settings = method_settings(method)
    per_split, notes = [], set()
    for path in paths.split(","):
        one, caught = _fit_one(method, settings, path, n)
        per_split.append(one)
        notes.update(str(w.message)[:120] for w in caught)
    first = per_split[0]
    out = dict(n_train=first["n_train"], n_features=first["n_features"], n_classes=first["n_classes"],
               fit_s=first["fit_s"], cpu_s=first["cpu_s"],
               accuracy=float(np.mean([s["accuracy"] for s in per_split])),
               euclidean=float(np.mean([s["euclidean"] for s in per_split])),
               converged=all(s["converged"] for s in per_split), n_iter=first["n_iter"],
               peak_rss_mib=peak_rss_mb(), device_peak_mib=device_peak_mib(), backend=jax.default_backend(),
               warnings=sorted(notes)[:3], per_split=per_split)
    if all("own_accuracy" in s for s in per_split):  # the method's own metric, where the fit blended it
        out["own_accuracy"] = float(np.mean([s["own_accuracy"] for s in per_split]))
    print(json.dumps(out), flush=True)


def _fit_one(method, settings, path, n):
    import jaxdml

    data = np.load(path)
    Xtr, ytr = subset(data["Xtr"], data["ytr"], len(data["ytr"]) if n == "full" else int(n))
    Xte, yte = data["Xte"], data["yte"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0, c0 = time.perf_counter(), time.process_time()
        fitted = jaxdml.fit(Xtr, ytr, loss=method, **{"random_state": 0, **settings})
        Ztr, Zte = np.asarray(fitted.transform(Xtr)), np.asarray(fitted.transform(Xte))
        fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    right = knn_accuracy(Ztr, ytr, Zte, yte, per_row=True)
    base = knn_accuracy(Xtr, ytr, Xte, yte, per_row=True)
    one = dict(n_train=len(ytr), n_features=Xtr.shape[1], n_classes=int(ytr.max()) + 1, fit_s=fit_s, cpu_s=cpu_s,
               accuracy=float(right.mean()), euclidean=float(base.mean()), b=int(np.sum(base & ~right)),
               c=int(np.sum(right & ~base)), converged=bool(getattr(fitted, "converged", True)),
               n_iter=int(getattr(fitted, "n_iter", 0) or 0))
    blend = getattr(fitted, "info", {}).get("euclidean_blend")
    if blend is not None:  # the weight the fit chose, and the method's own metric's test rows beside the blend's
        one["blend_weight"] = blend["weight"]
        own = right
        if "own_L" in blend:
            L = np.asarray(blend["own_L"])
            own = knn_accuracy(Xtr @ L.T, ytr, Xte @ L.T, yte, per_row=True)
        one.update(own_accuracy=float(own.mean()), own_b=int(np.sum(base & ~own)), own_c=int(np.sum(own & ~base)))
    return one, caught


# --------------------------------------------------------------------------------------- parent
def parse_plans(plans, registered):
    named = set()
    parsed = []
    for plan in plans:
        plan, _, seconds = plan.partition("@")
        timeout = float(seconds) if seconds else None
        methods, _, cases = plan.rpartition("=")  # settings may hold "=", cases never do
        names = methods.split(",")
        for m in names:
            if m not in ("all", "rest") and method_settings(m)[0] not in registered:
                raise SystemExit(f"--plan: {m!r} is not a registered method (jaxdml methods lists them)")
        named.update(m for m in names if m not in ("all", "rest"))
        parsed.append((names, [case for c in cases.split(",") for case in _cases(c)], timeout))
    rows, timeouts = [], {}
    for names, cases, timeout in parsed:
        if names == ["all"]:
            names = registered
        elif names == ["rest"]:
            names = [m for m in registered if m not in named]
        rows += [(m, ds, n) for ds, n in cases for m in names]
        timeouts.update({(m, ds, n): timeout for ds, n in cases for m in names if timeout})
    return rows, timeouts


def _cases(text):
    """The cases of one plan entry: ``large:N`` is every set of the real full-size tier at N."""
    ds, _, n = text.partition(":")
    if ds == "large":
        return [_case(f"large-{name}:{n}") for name in _large.SETS]
    return [_case(text)]


def _case(text):
    ds, _, n = text.partition(":")
    if not ds.startswith(("synth-d", "keel-", "large-")) or not n:
        raise SystemExit(f"--plan: case {text!r} is not DATASET:N (synth-dD-cC:N, keel-NAME:N|full or "
                         "large-NAME:N|full)")
    return ds, n if n == "full" else int(n)


class Run:
    """One worker process, watched for its time and memory."""

    def __init__(self, key, argv, env, timeout, memory_limit):
        self.key, self.timeout, self.memory_limit = key, timeout, memory_limit
        self.t0 = time.perf_counter()
        self.peak_watch = 0.0
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.killed = None

    def poll(self):
        if self.proc.poll() is not None:
            return True
        elapsed = time.perf_counter() - self.t0
        rss = _tree_rss_gib(self.proc.pid)
        self.peak_watch = max(self.peak_watch, rss)
        if elapsed > self.timeout:
            self.killed = f"timeout (> {self.timeout:.0f} s)"
        elif self.memory_limit and rss > self.memory_limit:
            self.killed = f"over memory limit ({rss:.1f} > {self.memory_limit:g} GiB)"
        if self.killed:
            self.proc.kill()
            self.proc.wait()
            return True
        return False

    def result(self):
        wall = time.perf_counter() - self.t0
        out, err = self.proc.communicate()
        if self.killed:
            return dict(status=self.killed, wall=wall)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if self.proc.returncode != 0 or not lines:
            last = [ln for ln in err.strip().splitlines() if ln.strip()] or ["no output"]
            return dict(status="error: " + last[-1][:240], wall=wall)
        res = json.loads(lines[-1])
        res.update(status="ok", wall=wall)
        return res


def _tree_rss_gib(pid):
    try:
        import psutil
    except ImportError:
        return 0.0
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 2**30
    except psutil.Error:
        return 0.0


def run_matrix(rows, timeouts, paths, args, env):
    pending = list(rows)
    running, results = [], []
    start = time.perf_counter()
    while pending or running:
        while pending and len(running) < args.jobs:
            method, ds, n = pending.pop(0)
            key = (method, ds, n)
            if args.deadline and time.perf_counter() - start > args.deadline:
                results.append(dict(method=method, dataset=ds, n=n, status="skipped (deadline)"))
                continue
            argv = [sys.executable, os.path.abspath(__file__), "--worker", method, paths[ds], str(n)]
            running.append(Run(key, argv, env, timeouts.get(key, args.timeout), args.memory_limit))
        time.sleep(0.1)
        for run in [r for r in running if r.poll()]:
            running.remove(run)
            method, ds, n = run.key
            res = dict(method=method, dataset=ds, n=n, **run.result())
            res["watched_peak_gib"] = run.peak_watch
            results.append(res)
            print(f"{ds:16s} {str(n):>8s} {method:12s} {res['status'][:60]:12s} "
                  f"fit={res.get('fit_s', float('nan')):7.1f}s cpu={res.get('cpu_s', float('nan')):7.1f}s acc={res.get('accuracy', float('nan')):.4f} "
                  f"eucl={res.get('euclidean', float('nan')):.4f}", file=sys.stderr, flush=True)
    order = {key: i for i, key in enumerate(rows)}
    return sorted(results, key=lambda r: order[(r["method"], r["dataset"], r["n"])])


#: the pages of docs/benchmarks/ that hold each table block ``--update-docs`` writes
DOCS_BLOCKS = {"scale-matrix": "scale", "scale-matrix-blend": "scale", "gpu-check": "gpu"}

COLUMNS = [("dataset", "data", ""), ("n", "N", ""), ("method", "method", ""), ("status", "status", ""),
           ("fit_s", "fit s", ".1f"), ("cpu_s", "CPU s", ".1f"), ("peak_rss_mib", "peak RSS MiB", ".0f"),
           ("device_peak_mib", "device peak MiB", ".0f"), ("accuracy", "3-NN", ".4f"),
           ("euclidean", "Euclidean 3-NN", ".4f"), ("gain", "gain", "+.4f")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--plan", action="append", help=f"METHODS=CASES (repeatable; default {DEFAULT_PLAN})")
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "keel"), help="KEEL folder")
    p.add_argument("--splits", default="0,1,2", help="splits of each large- set (default 0,1,2; 0 is the shipped one)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per fit (default 600)")
    p.add_argument("--memory-limit", type=float, default=8.0, help="GiB of resident memory per fit (default 8)")
    p.add_argument("--jobs", type=int, default=1, help="fits run at once (default 1: timings undisturbed)")
    p.add_argument("--deadline", type=float, default=None, help="start no fit after this many seconds")
    p.add_argument("--device", default=None, help="JAX platform for the fits: cpu, gpu, tpu")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "scale_matrix.json"))
    p.add_argument("--markdown", default=None, help="also write the Markdown table to this file")
    p.add_argument("--update-docs", nargs="?", const="scale-matrix", default=None, metavar="BLOCK",
                   choices=sorted(DOCS_BLOCKS),
                   help="rewrite the block between <!-- BLOCK:start --> and <!-- BLOCK:end --> of its page in "
                        "docs/benchmarks/ with the table (default block: scale-matrix, in scale.md; gpu-check, "
                        "in gpu.md, for a GPU run)")
    p.add_argument("--from-json", nargs="+", default=None,
                   help="make the table (and docs page block) from earlier runs' JSON; a later file's "
                        "(method, data, N) replaces an earlier one's (a rerun of some methods after a fix)")
    args = p.parse_args(argv)
    if args.update_docs:  # before the run, not after it
        update_docs_page(DOCS_BLOCKS[args.update_docs], args.update_docs, None)
    if args.from_json:
        merged, runs = {}, []
        for path in args.from_json:
            with open(path) as fh:
                runs.append(json.load(fh))
            merged.update({(r["method"], r["dataset"], str(r["n"])): r for r in runs[-1]["results"]})
        plans = [p for run in runs for p in (run["args"].get("plan") or [])]
        jobs = "/".join(str(run["args"].get("jobs", 1)) for run in runs)  # each run's fits at a time
        return report(list(merged.values()), runs[-1]["machine"], {**runs[-1]["args"], "plan": plans, "jobs": jobs},
                      args)
    if args.worker:
        return worker(*args.worker)

    import jaxdml

    registered = [m for m in jaxdml.methods() if m != "euclidean"]
    rows, timeouts = parse_plans(args.plan or [DEFAULT_PLAN], registered)
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", JAXDML_COMPILATION_CACHE="0")
    if args.device:  # JAX names NVIDIA GPUs "cuda" (its "gpu" alias also asks for ROCm on newer releases)
        env["JAX_PLATFORMS"] = {"gpu": "cuda"}.get(args.device, args.device)
    if args.jobs > 1:
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{0.9 / args.jobs:.3f}"
    with tempfile.TemporaryDirectory(prefix="jaxdml-scale-") as folder:
        splits = [int(s) for s in args.splits.split(",")]
        paths = prepare_data(sorted({(ds, n) for _, ds, n in rows}, key=str), args.data, folder, splits)
        results = run_matrix(rows, timeouts, paths, args, env)
    info = machine()
    write_json(args.out, {"machine": info, "args": vars(args), "results": results})
    print(f"JSON written to {args.out}", file=sys.stderr)
    report(results, info, vars(args), args)


def report(results, info, run_args, args):
    """Print the table; write it to ``--markdown`` and into its docs page's block (``--update-docs``)."""
    import datetime

    for r in results:
        if r.get("status") == "ok":
            r["gain"] = r["accuracy"] - r["euclidean"]
    rows = [{**r, "status": r["status"] if len(r["status"]) <= 60 else r["status"][:57] + "..."} for r in results]
    table = markdown_table(rows, COLUMNS)
    block = table
    if all(str(r["dataset"]).startswith("large-") for r in results):  # the real tier: its gain check says it all
        block = gain_check_table(results)
        table += "\n\n" + block
    print(table)
    plans = " ".join(f'--plan "{p}"' for p in (run_args.get("plan") or [DEFAULT_PLAN]))
    head = (f"Device: {info['device']} ({info['cpus']} CPUs), jax {info['jax']}, "
            f"{run_args.get('jobs', 1)} fit(s) at a time, {datetime.date.today().isoformat()}; "
            f"`python benchmarks/bench_scale_matrix.py {plans}`.")
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(f"{head}\n\n{table}\n")
    if args.update_docs:
        update_docs_page(DOCS_BLOCKS[args.update_docs], args.update_docs, f"{head}\n\n{block}")


CHECK_COLUMNS = [("method", "method", ""), ("dataset", "data", ""), ("subset_gain", "gain, 2000 rows", "+.4f"),
                 ("full_gain", "gain, all rows", "+.4f"), ("b", "b", "d"), ("c", "c", "d"), ("p", "p", ".3g"),
                 ("check", "check", ""), ("fit_s", "fit s", ".1f"), ("peak_rss_mib", "peak RSS MiB", ".0f")]


def own_metrics(results):
    """The results as the methods' own metrics scored them, where a fit returned a Euclidean blend
    (protocol round 17: ``own_accuracy`` and each split's ``own_b``/``own_c``); other results unchanged."""
    out = []
    for r in results:
        if "own_accuracy" in r:
            r = {**r, "accuracy": r["own_accuracy"],
                 "per_split": [{**s, "b": s["own_b"], "c": s["own_c"]} for s in r["per_split"]]}
        out.append(r)
    return out


def _verdict_line(verdicts):
    failing = [f"{m} (significantly below on {', '.join(v['significant_losses']) or 'no set'}; mean all-rows gain "
               f"where the subsets beat Euclidean {v['mean_gain_where_subset_beats'] * 100:+.2f} points)"
               for m, v in verdicts.items() if v["ok"] is False]
    return f"fails for {'; '.join(failing)}." if failing else "every method that learns from class labels passes."


def gain_check_table(results):
    """Protocol round 16's gain check: per (method, set) the gains (means over the splits), the discordant
    rows (b: only Euclidean right, c: only the method), the sign test's p and the verdict; then the methods
    that fail it. Where fits returned a Euclidean blend (round 17), the methods' own metrics' all-rows gain
    and verdict beside it."""
    import jaxdml

    outside = frozenset(name for name, record in jaxdml.methods().items() if not record.labels)
    rows, verdicts = _large.gain_check(results, outside=outside)
    columns = CHECK_COLUMNS
    blended = any("own_accuracy" in r for r in results)
    own_line = ""
    if blended:
        own_rows, own_verdicts = _large.gain_check(own_metrics(results), outside=outside)
        own = {(r["method"], r["dataset"]): r for r in own_rows}
        for r in rows:
            mine = own[(r["method"], r["dataset"])]
            r.update(own_gain=mine["full_gain"], own_check=mine["check"])
        columns = CHECK_COLUMNS[:4] + [("own_gain", "own metric, all rows", "+.4f"),
                                       ("own_check", "own check", "")] + CHECK_COLUMNS[4:]
        own_line = f" The methods' own metrics (without the Euclidean blend): {_verdict_line(own_verdicts)}"
    grades = sorted(m for m, v in verdicts.items() if v["ok"] is None)
    slow = [f"{m} ({v['max_fit_s']:.0f} s)" for m, v in verdicts.items() if v["max_fit_s"] > 60]
    big = [f"{m} ({v['max_peak_rss_mib'] / 1024:.1f} GiB)" for m, v in verdicts.items() if v["max_peak_rss_mib"] > 4096]
    return (markdown_table(rows, columns) + "\n\nGain check (round 16): " + _verdict_line(verdicts) + own_line
            + (f" Not judged (they read the class codes as ordered grades or regression targets): {', '.join(grades)}."
               if grades else "")
            + f" Over 60 s: {', '.join(slow) or 'none'}. Over 4 GiB: {', '.join(big) or 'none'}.")


if __name__ == "__main__":
    main()
