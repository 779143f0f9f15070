"""The real full-size tier: the data sets of ``../shared/large``, their splits and the paired test.

A case ``large-NAME:N`` (N training rows or ``full``) fits a method on each of the tier's splits of
``NAME`` in one process: split 0 is the split shipped with the data (``NAME-split.npz``), split
``s >= 1`` is a class-stratified split of the same test size drawn by
``StratifiedShuffleSplit(random_state=s)``. Min-max scaling is fitted on each split's training rows;
``N`` rows are a class-stratified subset of them (seed 0). Each split's test rows are complete.

The paired test (protocol round 16): on every test row of every split, compare the method's 3-NN
prediction and Euclidean's. ``b`` rows are right under Euclidean and wrong under the method, ``c``
the reverse; pooled over the splits (independent test sets of one data set), the method is
*significantly below* Euclidean when the exact one-sided sign test on the discordant rows gives
``P(B >= b | b + c, 1/2) < 0.05``.
"""

from __future__ import annotations

import math
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LARGE_DIR = os.path.join(ROOT, "..", "shared", "large")
SETS = ("pendigits", "eeg-eye-state", "kropt", "electricity")
ALPHA = 0.05


def read_set(name: str, folder: str = LARGE_DIR):
    """``(X, y, (train, test))``: the CSV's features as float32, its labels as codes, the shipped split."""
    from jaxdml.datasets import load_csv

    X, y = load_csv(os.path.join(folder, f"{name}.csv"))[:2]
    split = np.load(os.path.join(folder, f"{name}-split.npz"))
    codes = np.unique(np.asarray(y), return_inverse=True)[1]
    return np.asarray(X, np.float32), codes, (split["train"], split["test"])


def split_rows(y, shipped, s: int):
    """Training and test row indices of split ``s`` (0: the shipped one)."""
    if s == 0:
        return shipped
    from sklearn.model_selection import StratifiedShuffleSplit

    test_size = len(shipped[1])
    return next(StratifiedShuffleSplit(1, test_size=test_size, random_state=s).split(np.zeros(len(y)), y))


def prepare(name: str, splits, folder: str, data_dir: str = LARGE_DIR):
    """Write each split of ``name`` (min-max scaled on its training rows) to ``folder``; their paths."""
    X, y, shipped = read_set(name, data_dir)
    paths = []
    for s in splits:
        tr, te = split_rows(y, shipped, s)
        lo, hi = X[tr].min(0), X[tr].max(0)
        scale = np.where(hi > lo, hi - lo, 1.0)
        path = os.path.join(folder, f"large-{name}-split{s}.npz")
        np.savez(path, Xtr=(X[tr] - lo) / scale, ytr=y[tr], Xte=(X[te] - lo) / scale, yte=y[te])
        paths.append(path)
    return paths


def sign_test_p(b: int, c: int) -> float:
    """One-sided exact sign test: ``P(B >= b)`` for ``B ~ Binomial(b + c, 1/2)`` (1 when no discordant row)."""
    n = b + c
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(b, n + 1)) / 2**n  # exact integers: no overflow for large n


def gain_check(results, *, tolerance=0.003, alpha=ALPHA, outside=frozenset()):
    """The round-16 verdict per (method, data set) and per method, from ``large-`` results.

    A method *beats Euclidean on the subsets* of a set when its mean 3-NN accuracy over the splits
    exceeds Euclidean's there. Where it does, on all rows it must not be significantly below
    Euclidean (the pooled sign test) and, averaged over those sets, not more than ``tolerance``
    below it. Returns ``(rows, verdicts)``: one row per (method, set), one verdict per method.
    The methods in ``outside`` do not learn from class labels (they read them as ordered grades or
    regression targets: ``Method.labels`` is False), so the rule, which is about class labels, does not
    judge them: their rows are reported with the check ``"n/a"`` and their verdict's ``ok`` is None.
    """
    by_key = {(r["method"], r["dataset"], str(r["n"])): r for r in results if r.get("status") == "ok"}
    rows, gains = [], {}
    for (method, ds, n), full in sorted(by_key.items()):
        if n != "full" or not ds.startswith("large-"):
            continue
        sub = next((r for (m, d, k), r in by_key.items() if m == method and d == ds and k != "full"), None)
        b = sum(s["b"] for s in full["per_split"])
        c = sum(s["c"] for s in full["per_split"])
        p = sign_test_p(b, c)
        row = dict(method=method, dataset=ds[6:], full_gain=full["accuracy"] - full["euclidean"], b=b, c=c, p=p,
                   fit_s=full["fit_s"], peak_rss_mib=full["peak_rss_mib"])
        if sub is not None:
            row["subset_gain"] = sub["accuracy"] - sub["euclidean"]
        beats = row.get("subset_gain", 0.0) > 0
        row["check"] = ("loss" if beats and p < alpha else "ok") if beats else "-"
        if method in outside:
            row["check"] = "n/a"
        if beats:
            gains.setdefault(method, []).append(row["full_gain"])
        rows.append(row)
    verdicts = {}
    for method in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == method]
        mean = float(np.mean(gains[method])) if gains.get(method) else None
        losses = [r["dataset"] for r in mine if r["check"] == "loss"]
        ok = None if method in outside else not losses and (mean is None or mean >= -tolerance)
        verdicts[method] = dict(ok=ok, significant_losses=losses, mean_gain_where_subset_beats=mean,
                                max_fit_s=max(r["fit_s"] for r in mine),
                                max_peak_rss_mib=max(r["peak_rss_mib"] for r in mine))
    return rows, verdicts
