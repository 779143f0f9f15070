"""Loaders for data that ships with dependencies (scikit-learn) and for CSV files."""

from __future__ import annotations

import csv
import os

import numpy as np

__all__ = ["load_dataset", "load_csv", "BUNDLED"]

BUNDLED = ("iris", "wine", "breast_cancer", "digits")


def load_dataset(name: str):
    """``(X, y)`` for a scikit-learn bundled data set (iris, wine, breast_cancer, digits) or, if
    ``name`` is a path to a ``.csv`` file, for that file (last column = label)."""
    if os.path.exists(name) or name.endswith(".csv"):
        return load_csv(name)
    from sklearn import datasets as skd

    loaders = {
        "iris": skd.load_iris,
        "wine": skd.load_wine,
        "breast_cancer": skd.load_breast_cancer,
        "digits": skd.load_digits,
    }
    if name not in loaders:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {BUNDLED} or give a CSV path.")
    return loaders[name](return_X_y=True)


def load_csv(path: str, *, target: int = -1, delimiter: str | None = None):
    """Read a numeric CSV file: features in every column but ``target`` (default: the last),
    labels (any strings) in ``target``. A header row is detected and skipped.

    Raises ``ValueError`` naming the file, line and column of the first non-numeric feature.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"CSV file not found: {path}")
    if os.path.isdir(path):
        raise ValueError(f"{path} is a folder, not a CSV file.")
    try:
        with open(path, newline="") as fh:
            sample = fh.read(4096)
            fh.seek(0)
            if delimiter is None:
                try:
                    delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t ").delimiter
                except csv.Error:
                    delimiter = ","
            rows = [r for r in csv.reader(fh, delimiter=delimiter) if any(c.strip() for c in r)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable text CSV file ({exc}).") from None
    if not rows:
        raise ValueError(f"{path}: the file is empty.")

    def numeric(cells):
        try:
            [float(c) for i, c in enumerate(cells) if i != (target % len(cells))]
            return True
        except ValueError:
            return False

    start = 0 if numeric(rows[0]) else 1
    if start >= len(rows):
        raise ValueError(f"{path}: the file has a header line but no data rows.")
    width = len(rows[start])
    if width < 2:
        raise ValueError(f"{path}: expected at least two columns (features and a label); found {width}.")
    X, y = [], []
    for lineno, row in enumerate(rows[start:], start=start + 1):
        if len(row) != width:
            raise ValueError(f"{path}, line {lineno}: expected {width} columns, found {len(row)}.")
        t = target % width
        feats = []
        for j, c in enumerate(row):
            if j == t:
                continue
            try:
                feats.append(float(c))
            except ValueError:
                raise ValueError(f"{path}, line {lineno}, column {j + 1}: {c!r} is not a number.") from None
        X.append(feats)
        y.append(row[t].strip())
    y = np.asarray(y)
    try:
        y_num = y.astype(np.float64)
        if np.all(y_num == np.round(y_num)):
            y = y_num.astype(np.int64)
    except ValueError:
        pass
    return np.asarray(X, dtype=np.float64), y
