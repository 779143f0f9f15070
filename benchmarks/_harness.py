"""Shared benchmark plumbing: every (method, dataset) runs in a fresh subprocess (so the first fit
pays JAX's compilation, as a user's first call does), under a timeout, and prints one JSON line;
the parent collects the lines, prints a Markdown table and writes JSON.

Timings are wall-clock seconds on whatever machine runs the script; compare ratios measured in the
same invocation only.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def metric_learn_compat() -> None:
    """Let metric-learn 0.7 run on current scikit-learn (benchmark references only).

    metric-learn passes ``force_all_finite=`` to scikit-learn's ``check_array``/``check_X_y``;
    scikit-learn renamed it ``ensure_all_finite`` (1.6) and removed the old name, so every
    metric-learn estimator fails with a TypeError. Wrap the two functions to accept the old name;
    call this before ``import metric_learn``.
    """
    import functools
    import inspect

    import sklearn.utils
    import sklearn.utils.validation as validation

    if "force_all_finite" in inspect.signature(validation.check_array).parameters:
        return

    def accept_old_name(f):
        @functools.wraps(f)
        def wrapped(*args, force_all_finite=None, **kwargs):
            if force_all_finite is not None:
                kwargs.setdefault("ensure_all_finite", force_all_finite)
            return f(*args, **kwargs)
        return wrapped

    validation.check_array = sklearn.utils.check_array = accept_old_name(validation.check_array)
    validation.check_X_y = sklearn.utils.check_X_y = accept_old_name(validation.check_X_y)


def run_worker(script: str, args: list[str], timeout: float, env_extra: dict | None = None) -> dict:
    """Run ``python script --worker ARGS`` and parse its last JSON line."""
    env = dict(os.environ)
    env.update(env_extra or {})
    t0 = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, script, "--worker", *args], capture_output=True,
                             text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout (> {timeout:.0f} s)", "wall": time.perf_counter() - t0}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        err = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": f"error: {err[:200]}", "wall": time.perf_counter() - t0}
    res = json.loads(lines[-1])
    res.setdefault("status", "ok")
    res["wall"] = time.perf_counter() - t0
    return res


def peak_rss_mb() -> float:
    """Peak resident set size of this process (MiB)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2**20


def cv_protocol(X, y, fit_transform, *, n_splits=10, seed=0, k=3, max_folds=None):
    """10-fold stratified CV, min-max scaling fitted per training fold, k-NN on the embedding.

    ``fit_transform(Xtr, ytr, pad_to) -> transform``. Returns per-fold fit seconds, test accuracy
    and the time of one more fit of fold 1's shape (a warm, same-shape refit).
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler

    folds = list(StratifiedKFold(n_splits, shuffle=True, random_state=seed).split(X, y))
    if max_folds:
        folds = folds[:max_folds]
    pad = max(len(tr) for tr, _ in folds)
    times, accs = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tr, te in folds:
            sc = MinMaxScaler().fit(X[tr])
            Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
            t0 = time.perf_counter()
            tf = fit_transform(Xtr, y[tr], pad)
            times.append(time.perf_counter() - t0)
            accs.append(KNeighborsClassifier(k).fit(tf(Xtr), y[tr]).score(tf(Xte), y[te]))
            print(json.dumps({"fold_time": times[-1], "fold_acc": accs[-1]}), file=sys.stderr, flush=True)
        tr, _ = folds[0]
        sc = MinMaxScaler().fit(X[tr])
        t0 = time.perf_counter()
        fit_transform(sc.transform(X[tr]), y[tr], pad)
        warm = time.perf_counter() - t0
    return dict(first_fit=times[0], warm_fit=warm, total_fit=float(np.sum(times)),
                mean_fit=float(np.mean(times)), accuracy=float(np.mean(accs)), folds=len(folds),
                peak_rss_mb=peak_rss_mb())


def machine() -> dict:
    import jax

    return dict(python=platform.python_version(), platform=platform.platform(),
                cpus=os.cpu_count(), jax=jax.__version__, device=str(jax.devices()[0]))


def markdown_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """``columns``: (key, header, format)."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = []
    for r in rows:
        cells = []
        for key, _, fmt in columns:
            v = r.get(key)
            cells.append("" if v is None else (format(v, fmt) if isinstance(v, (int, float)) else str(v)))
        body.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, sep, *body])


#: the generated benchmark pages of the documentation site (docs/benchmarks/*.md)
DOCS_PAGES = os.path.join(os.path.dirname(HERE), "docs", "benchmarks")


def page_head(info: dict, argv=None, date=None) -> str:
    """The line above a generated table: the machine, JAX, the date and the command that wrote it."""
    import datetime
    import shlex

    argv = sys.argv if argv is None else argv
    command = "python benchmarks/" + " ".join([os.path.basename(argv[0]), *(shlex.quote(a) for a in argv[1:])])
    date = date or datetime.date.today().isoformat()
    return (f"Device: {info['device']} ({info['cpus']} CPUs), jax {info['jax']}, {date}; "
            f"`{command.replace('`', '')}`.")


def update_docs_page(page: str, block: str, text: str | None, folder: str = DOCS_PAGES) -> str:
    """Replace the lines between ``<!-- BLOCK:start -->`` and ``<!-- BLOCK:end -->`` of
    ``docs/benchmarks/PAGE.md`` with ``text``; the page and the block must exist (the prose around a
    table is written by hand). ``text=None`` only checks that they do (before a long run). Returns the
    page's path."""
    path = os.path.join(folder, f"{page}.md")
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    if not os.path.exists(path):
        raise SystemExit(f"{path} does not exist (the benchmark pages are in docs/benchmarks/)")
    with open(path) as fh:
        doc = fh.read()
    if start not in doc or end not in doc:
        raise SystemExit(f"{path} has no {start} ... {end} block")
    if text is None:
        return path
    before, rest = doc.split(start, 1)
    after = rest.split(end, 1)[1]
    with open(path, "w") as fh:
        fh.write(f"{before}{start}\n{text.strip()}\n{end}{after}")
    print(f"{path}: block {block!r} updated", file=sys.stderr)
    return path


def write_json(path: str, payload: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(payload, fh, indent=2, default=float)
