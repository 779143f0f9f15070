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
        X, y = load_csv(name)
        _check_class_labels(y, name)
        return X, y
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


def _check_class_labels(y, path) -> None:
    """Class labels, not measurements: a label column of non-integer numbers is refused, naming it."""
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        odd = y[y != np.round(y)][:3].tolist()
        raise ValueError(f"{path}: the label column (the last) holds continuous values (e.g. {odd}), not classes: "
                         "jaxdml's data sets are for classification (a regression target fits jaxdml.MLKR, with "
                         "load_csv's y).")


def _is_header(cells, target) -> bool:
    """A header row: a feature cell that is not a number, or the column numbers 0..w-1 / 1..w that a
    table with integer column names (pandas' default) writes as its header."""
    try:
        [float(c) for i, c in enumerate(cells) if i != (target % len(cells))]
    except ValueError:
        return True
    try:
        ints = [int(c) for c in cells]
    except ValueError:
        return False
    return len(cells) > 1 and ints in (list(range(len(cells))), list(range(1, len(cells) + 1)))


def load_csv(path: str, *, target: int = -1, delimiter: str | None = None):
    """Read a numeric CSV file: features in every column but ``target`` (default: the last),
    labels (any strings) in ``target``. A header row is detected and skipped: one with a
    non-numeric feature name, or the column numbers ``0 .. w-1`` (``1 .. w``) that integer column
    names (pandas' default) write. Numeric labels come back as integers when they are whole
    numbers, else as floats (a regression target).

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

    start = 1 if _is_header(rows[0], target) else 0
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
        y = y_num.astype(np.int64) if np.all(y_num == np.round(y_num)) else y_num
    except ValueError:
        pass
    return np.asarray(X, dtype=np.float64), y
