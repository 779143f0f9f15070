"""Kernel methods: exact vs Nystrom landmarks at 5 000 training rows on the large KEEL data sets.

For each (data set, method): fold 1 of the shared 10-fold DOB-SCV partition, min-max scaled on its
training rows, a stratified subset of ``--rows`` training rows (seed 0); the method with its defaults
fitted twice on the same rows, exactly (``n_landmarks=None``) and on landmarks (``n_landmarks="auto"``:
2000 landmarks above 4096 rows), each scored by 3-NN accuracy on the whole test fold. One process per
data set (a fit's compiled programs serve the next method); CPU seconds of each fit are reported beside
the wall time (on a shared machine the wall time depends on the others' load).

    python benchmarks/bench_landmarks.py                                  # 5 methods x 9 data sets
    python benchmarks/bench_landmarks.py --methods kda,kanmm --datasets banana,ring --markdown t.md

Output: a Markdown table (exact, landmarks, difference in points) on stdout, JSON in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, write_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = "optdigits,satimage,page-blocks,phoneme,ring,twonorm,thyroid,spambase,banana"
METHODS = "kda,kanmm,kdmlmj,kllda,klmnn"


def _data(data_dir, name, rows):
    from sklearn.model_selection import train_test_split

    from jaxdml.datasets import load_keel_folds

    Xtr, ytr, Xte, yte = load_keel_folds(data_dir, name, 10).folds[0]
    Xtr, Xte = np.asarray(Xtr, np.float64), np.asarray(Xte, np.float64)
    lo, hi = Xtr.min(0), Xtr.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    Xtr, Xte = (Xtr - lo) / scale, (Xte - lo) / scale
    codes = np.unique(np.concatenate([ytr, yte]), return_inverse=True)[1]
    ytr, yte = codes[:len(ytr)], codes[len(ytr):]
    if rows < len(ytr):
        idx = np.sort(train_test_split(np.arange(len(ytr)), train_size=rows, stratify=ytr, random_state=0)[0])
        Xtr, ytr = Xtr[idx], ytr[idx]
    return Xtr, ytr, Xte, yte


def worker(data_dir, name, rows, methods):
    import jaxdml
    from sklearn.neighbors import KNeighborsClassifier

    Xtr, ytr, Xte, yte = _data(data_dir, name, int(rows))
    euclid = KNeighborsClassifier(3).fit(Xtr, ytr).score(Xte, yte)
    for method in methods.split(","):
        out = dict(dataset=name, method=method, n_train=len(ytr), n_test=len(yte), euclidean=euclid)
        for tag, n_landmarks in (("exact", None), ("landmarks", "auto")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0, c0 = time.perf_counter(), time.process_time()
                fitted = jaxdml.fit(Xtr, ytr, loss=method, n_landmarks=n_landmarks, random_state=0)
                Ztr, Zte = fitted.transform(Xtr), fitted.transform(Xte)
                out[f"{tag}_s"], out[f"{tag}_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
            out[tag] = float(KNeighborsClassifier(3).fit(Ztr, ytr).score(Zte, yte))
            if tag == "landmarks":
                out["n_landmarks"] = int(fitted.info.get("n_landmarks", 0))
        out["diff_points"] = 100.0 * (out["landmarks"] - out["exact"])
        print(json.dumps(out), flush=True)


COLUMNS = [("dataset", "data", ""), ("method", "method", ""), ("n_train", "N", ""), ("n_landmarks", "m", ""),
           ("euclidean", "Euclidean", ".4f"), ("exact", "exact", ".4f"), ("landmarks", "landmarks", ".4f"),
           ("diff_points", "diff (points)", "+.2f"), ("exact_cpu_s", "exact CPU s", ".1f"),
           ("landmarks_cpu_s", "landmarks CPU s", ".1f")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(os.path.dirname(ROOT), "shared", "keel"))
    p.add_argument("--datasets", default=DATASETS)
    p.add_argument("--methods", default=METHODS)
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--timeout", type=float, default=7200.0, help="seconds per data set (all methods)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "landmarks.json"))
    p.add_argument("--markdown", default=None)
    p.add_argument("--worker", nargs=4, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    results = []
    script = os.path.abspath(__file__)
    for name in args.datasets.split(","):
        res = run_worker_lines(script, [args.data, name, str(args.rows), args.methods], args.timeout)
        for r in res:
            results.append(r)
            print(f"{r.get('dataset', name):12s} {r.get('method', '?'):8s} exact={r.get('exact', float('nan')):.4f} "
                  f"landmarks={r.get('landmarks', float('nan')):.4f} {r.get('status', 'ok')}", file=sys.stderr,
                  flush=True)
    table = markdown_table(results, COLUMNS)
    print(table)
    info = machine()
    write_json(args.out, {"machine": info, "args": vars(args), "results": results})
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(f"Device: {info['device']}; jax {info['jax']}; {info['cpus']} CPUs.\n\n{table}\n")


def run_worker_lines(script, worker_args, timeout):
    """Every JSON line of one worker (one per method), or one error row."""
    import subprocess

    try:
        out = subprocess.run([sys.executable, script, "--worker", *worker_args], capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return [dict(dataset=worker_args[1], status=f"timeout (> {timeout:.0f} s)")]
    rows = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0:
        err = (out.stderr.strip().splitlines() or ["no output"])[-1]
        rows.append(dict(dataset=worker_args[1], status=f"error: {err[:200]}"))
    return rows


if __name__ == "__main__":
    main()
