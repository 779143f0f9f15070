"""Class-stratified row sampling, shared by the methods that fit on a subset of rows (LMNN's active set,
DML-eig's anchors, SCML's triplets, the ``max_rows`` cap of the record)."""

from __future__ import annotations

import numpy as np

from ..._validation import seed_from


def stratified_subsample(codes, size: int, random_state=None, *, min_per_class: int = 1):
    """Sorted row indices of a class-stratified random subset of ``size`` rows (all rows when there
    are not more): each class keeps ``min(count, min_per_class)`` rows, and the other rows are shared
    in proportion to the classes' remaining counts (largest remainders first)."""
    codes = np.asarray(codes)
    n = codes.size
    if n <= size:
        return np.arange(n)
    rng = np.random.default_rng(seed_from(random_state))
    classes, counts = np.unique(codes, return_counts=True)
    take = np.minimum(counts, min_per_class)
    left = counts - take
    share = left * max(size - take.sum(), 0) / max(left.sum(), 1)
    take = take + np.floor(share).astype(int)
    for i in np.argsort(-(share - np.floor(share)), kind="stable"):
        if take.sum() >= size:
            break
        take[i] += take[i] < counts[i]
    keep = [rng.choice(np.flatnonzero(codes == c), t, replace=False) for c, t in zip(classes, take)]
    return np.sort(np.concatenate(keep))
