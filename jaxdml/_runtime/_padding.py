"""Padding to bucket sizes, so that data of similar size reuse one compiled executable.

One home for the rule (:func:`bucket_size`), for resolving a user's ``pad_to`` setting
(:func:`resolve_bucket`) and for the host-side padding of rows, square matrices and
neighbour-index arrays.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["bucket_size", "resolve_bucket", "pad_rows", "pad_square", "pad_neighbourhoods"]


def bucket_size(n: int, minimum: int = 64) -> int:
    """Round ``n`` up to a bucket: a multiple of ``max(minimum, 2**(floor(log2 n) - 3))``.

    Above 512 rows padding costs at most ~12.5 % extra rows; below, buckets are multiples of 64,
    where the padded rows cost next to nothing and a coarse grid matters more: the folds of a
    cross-validation (sizes that differ by a sample, e.g. wine's 160 and 161) and small data sets
    of similar size then land in one bucket and reuse one compiled executable (a compilation of
    a solver loop costs far more than its run on a few hundred rows). A loop whose cost grows with
    the padded length itself (ITML's sequential sweep over its constraints) asks for a finer
    ``minimum`` (32).
    """
    if n <= 0:
        return 0
    g = max(int(minimum), 2 ** max(0, int(math.floor(math.log2(n))) - 3))
    return int(-(-n // g) * g)


def resolve_bucket(n: int, pad_to, multiple: int = 1) -> int:
    """Rows after padding: ``bucket_size(n)`` ("auto"), ``n`` (None) or ``max(pad_to, n)``,
    rounded up to a multiple of ``multiple`` (e.g. the device count)."""
    if pad_to is None:
        bucket = n
    elif isinstance(pad_to, str):
        bucket = bucket_size(n)
    else:
        bucket = max(int(pad_to), n)
    if bucket % multiple:
        bucket += multiple - bucket % multiple
    return bucket


def pad_rows(X, bucket):
    """``X`` with zero rows appended up to ``bucket`` rows."""
    return np.concatenate([X, np.zeros((bucket - X.shape[0], X.shape[1]))]) if bucket > X.shape[0] else X


def pad_square(K, bucket):
    """A square matrix embedded in the top-left corner of a ``bucket`` x ``bucket`` zero matrix."""
    n = K.shape[0]
    if bucket == n:
        return K
    Kp = np.zeros((bucket, bucket))
    Kp[:n, :n] = K
    return Kp


def pad_neighbourhoods(n, bucket, *arrays):
    """Pad (n, k) index/mask arrays (alternating) to ``bucket`` rows: padding rows point at
    themselves, with mask 0."""
    out = []
    for i, a in enumerate(arrays):
        if i % 2 == 0:  # indices
            pad = np.tile(np.arange(n, bucket, dtype=np.int32)[:, None], (1, a.shape[1]))
            out.append(np.concatenate([a.astype(np.int32), pad]))
        else:
            out.append(np.concatenate([a.astype(np.float64), np.zeros((bucket - n, a.shape[1]))]))
    return out
