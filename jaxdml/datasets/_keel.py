"""Readers for KEEL ``.dat`` and Weka ARFF files (fold discovery: :mod:`._folds`).

Nothing is downloaded: the files are read from a folder the user gives (``--data DIR`` on the
command line). The KEEL layout is ``DIR/10-fold/<name>/<name>-10dobscv-<k>tra.dat`` and
``...tst.dat`` (``k = 1..10``; likewise ``5-fold``); plain KEEL cross-validation files
(``<name>-10-<k>tra.dat``) and a folder that holds the fold files directly are found too.

Every reader returns ``(X, y, feature_names)``: ``X`` a float64 array, ``y`` the class labels as
strings (labels are matched as strings, never cast: ``"1.0"`` and ``"1"`` are different classes)
and ``feature_names`` the input attributes in column order. Malformed input raises
:class:`DataFormatError` (a ``ValueError``) whose message names the file and the line.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = [
    "DataFormatError",
    "DatasetHeader",
    "load_keel",
    "load_arff",
    "read_table",
    "sort_labels",
    "DATA_DIR_ENV",
]

#: environment variable that points at the KEEL folder (the one holding ``10-fold/``)
DATA_DIR_ENV = "JAXDML_KEEL_DIR"

_MISSING = {"?", "<null>", ""}


class DataFormatError(ValueError):
    """A data file does not follow its format; the message names the file and the line."""

    def __init__(self, path, lineno: Optional[int], message: str):
        where = f"{path}, line {lineno}" if lineno is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.lineno = lineno


@dataclass
class DatasetHeader:
    """What the header of a KEEL / ARFF file declares.

    Attributes
    ----------
    relation : str
        The ``@relation`` name.
    attributes : list of str
        Every attribute, in column order (the class attribute included).
    types : dict
        ``name -> "real" | "integer" | "numeric" | "nominal" | ...``.
    ranges : dict
        ``name -> (low, high)`` for KEEL numeric attributes that declare a range.
    nominal : dict
        ``name -> [values...]`` in declared order for nominal attributes.
    inputs : list of str
        The input attributes, in column order.
    output : str
        The class attribute.
    """

    relation: str = ""
    attributes: list = field(default_factory=list)
    types: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    nominal: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    output: str = ""

    @property
    def classes(self) -> list:
        """The declared class values, in declared order (may include classes without samples)."""
        return list(self.nominal.get(self.output, []))


# --------------------------------------------------------------------------- KEEL .dat
_KEEL_ATTR = re.compile(
    r"^@attribute\s+(?P<name>\S+?)\s*(?:(?P<type>real|integer|numeric)\s*(?:\[(?P<range>[^\]]*)\])?"
    r"|\{(?P<values>[^}]*)\})\s*$",
    re.IGNORECASE,
)


def _split_names(text: str) -> list:
    return [t.strip() for t in text.split(",") if t.strip()]


def _parse_keel_header(path, lines):
    """Parse the header; return ``(header, index of the first data line)``."""
    head = DatasetHeader()
    inputs = outputs = None
    for i, raw in enumerate(lines):
        lineno = i + 1
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        low = line.lower()
        if low.startswith("@relation"):
            head.relation = line[len("@relation"):].strip()
        elif low.startswith("@attribute"):
            m = _KEEL_ATTR.match(line)
            if m is None:
                raise DataFormatError(path, lineno, f"cannot parse the attribute declaration {line!r} "
                                      "(expected '@attribute NAME real[min,max]', 'integer[...]' or '{v1,v2,...}').")
            name = m.group("name")
            if name in head.types:
                raise DataFormatError(path, lineno, f"attribute {name!r} is declared twice.")
            head.attributes.append(name)
            if m.group("values") is not None:
                values = _split_names(m.group("values"))
                if not values:
                    raise DataFormatError(path, lineno, f"nominal attribute {name!r} declares no values.")
                head.types[name] = "nominal"
                head.nominal[name] = values
            else:
                head.types[name] = m.group("type").lower()
                if m.group("range") is not None:
                    try:
                        lo, hi = (float(v) for v in m.group("range").split(","))
                    except ValueError:
                        raise DataFormatError(path, lineno, f"bad range [{m.group('range')}] for attribute "
                                              f"{name!r}.") from None
                    head.ranges[name] = (lo, hi)
        elif low.startswith("@inputs"):
            inputs = _split_names(line[len("@inputs"):])
            lineno_inputs = lineno
        elif low.startswith("@outputs") or low.startswith("@output"):
            outputs = _split_names(line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else "")
            lineno_outputs = lineno
        elif low.startswith("@data"):
            break
        elif line.startswith("@"):
            raise DataFormatError(path, lineno, f"unknown header directive {line.split()[0]!r}.")
        else:
            raise DataFormatError(path, lineno, "data before the '@data' line.")
    else:
        raise DataFormatError(path, None, "no '@data' line found.")
    if not head.attributes:
        raise DataFormatError(path, None, "no '@attribute' declarations.")
    if outputs is not None:
        if len(outputs) != 1:
            raise DataFormatError(path, lineno_outputs, f"expected exactly one output attribute, got {outputs}.")
        head.output = outputs[0]
        if head.output not in head.types:
            raise DataFormatError(path, lineno_outputs, f"output {head.output!r} is not a declared attribute.")
    else:
        head.output = head.attributes[-1]
    if inputs is not None:
        unknown = [a for a in inputs if a not in head.types]
        if unknown:
            raise DataFormatError(path, lineno_inputs, f"input(s) {unknown} are not declared attributes.")
        if head.output in inputs:
            raise DataFormatError(path, lineno_inputs, f"the output {head.output!r} is also listed as an input.")
        wanted = set(inputs)
        head.inputs = [a for a in head.attributes if a in wanted]  # column order
    else:
        head.inputs = [a for a in head.attributes if a != head.output]
    for a in head.inputs:
        if head.types[a] == "nominal":
            raise DataFormatError(path, None, f"input attribute {a!r} is nominal; only numeric inputs are "
                                  "supported (encode it numerically first).")
    return head, i + 1


def _parse_rows(path, lines, start, head, split):
    """Convert data lines to ``(X, y)``; ``split(line) -> list of fields``."""
    cols = head.attributes
    n_cols = len(cols)
    in_idx = [cols.index(a) for a in head.inputs]
    out_idx = cols.index(head.output)
    allowed = set(head.nominal[head.output]) if head.output in head.nominal else None
    X, y = [], []
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith("%"):
            continue
        lineno = i + 1
        if line.startswith("{"):
            raise DataFormatError(path, lineno, "sparse rows ('{index value, ...}') are not supported.")
        fields = split(line)
        if len(fields) != n_cols:
            raise DataFormatError(path, lineno, f"expected {n_cols} values ({len(head.inputs)} inputs + class), "
                                  f"found {len(fields)}.")
        row = []
        for j in in_idx:
            v = fields[j]
            try:
                row.append(float(v))
            except ValueError:
                if v in _MISSING:
                    raise DataFormatError(path, lineno, f"missing value {v!r} in attribute {cols[j]!r}; "
                                          "missing values are not supported.") from None
                raise DataFormatError(path, lineno, f"value {v!r} of attribute {cols[j]!r} is not a "
                                      "number.") from None
            if not np.isfinite(row[-1]):
                raise DataFormatError(path, lineno, f"value {v!r} of attribute {cols[j]!r} is not finite.")
        label = fields[out_idx]
        if label in _MISSING:
            raise DataFormatError(path, lineno, f"missing class label {label!r}.")
        if allowed is not None and label not in allowed:
            raise DataFormatError(path, lineno, f"class label {label!r} is not among the declared values "
                                  f"{sorted(allowed)} of {head.output!r}.")
        X.append(row)
        y.append(label)
    if not X:
        raise DataFormatError(path, None, "the file has no data rows.")
    return np.asarray(X, dtype=np.float64).reshape(len(X), len(in_idx)), np.asarray(y, dtype=str)


def _read_lines(path):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    try:
        with open(path, encoding="utf-8", newline=None) as fh:
            return fh.read().splitlines()
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, f"not a text file ({exc}).") from None


def _keel_split(line):
    return [f.strip() for f in line.split(",")]


def load_keel(path, *, return_header: bool = False):
    """Read a KEEL ``.dat`` file.

    Parameters
    ----------
    path : str or Path
    return_header : bool, default=False
        Also return the :class:`DatasetHeader` (declared class order, ranges, ...).

    Returns
    -------
    X : ndarray of shape (n_samples, n_inputs), float64
        The ``@inputs`` columns in column order.
    y : ndarray of shape (n_samples,), str
        The ``@outputs`` attribute (the last attribute when ``@outputs`` is absent).
    feature_names : list of str
    header : DatasetHeader
        Only with ``return_header=True``.

    Raises
    ------
    DataFormatError
        Naming the file and line of the first malformed declaration or row (wrong number of
        values, a non-numeric input, a missing value, a class label that is not declared).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from jaxdml.datasets import load_keel
    >>> text = ("@relation toy\\n@attribute a real[0.0,1.0]\\n@attribute Class{x,y}\\n"
    ...         "@inputs a\\n@outputs Class\\n@data\\n0.5, x\\n1.0, y\\n")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.dat"
    >>> _ = path.write_text(text)
    >>> X, y, names = load_keel(path)
    >>> X.ravel().tolist(), y.tolist(), names
    ([0.5, 1.0], ['x', 'y'], ['a'])
    """
    lines = _read_lines(path)
    head, start = _parse_keel_header(path, lines)
    X, y = _parse_rows(path, lines, start, head, _keel_split)
    out = (X, y, list(head.inputs))
    return (*out, head) if return_header else out


# --------------------------------------------------------------------------- ARFF
def _arff_name(path, lineno, rest):
    """Split ``NAME TYPE`` where NAME may be quoted; return ``(name, type_text)``."""
    rest = rest.strip()
    if rest[:1] in ("'", '"'):
        q = rest[0]
        end = rest.find(q, 1)
        while end != -1 and rest[end - 1] == "\\":
            end = rest.find(q, end + 1)
        if end == -1:
            raise DataFormatError(path, lineno, f"unterminated quoted attribute name in {rest!r}.")
        return rest[1:end].replace("\\" + q, q), rest[end + 1:].strip()
    m = re.match(r"(\S+?)(\s+|(?=\{))(.*)$", rest)
    if m is None:
        raise DataFormatError(path, lineno, f"cannot parse the attribute declaration {rest!r}.")
    return m.group(1), m.group(3).strip()


def _arff_values(text):
    return [v.strip().strip("'\"") for v in next(csv.reader([text], skipinitialspace=True, quotechar="'"))]


def _parse_arff_header(path, lines, target):
    head = DatasetHeader()
    for i, raw in enumerate(lines):
        lineno = i + 1
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        low = line.lower()
        if low.startswith("@relation"):
            head.relation = line[len("@relation"):].strip().strip("'\"")
        elif low.startswith("@attribute"):
            name, typ = _arff_name(path, lineno, line[len("@attribute"):])
            if name in head.types:
                raise DataFormatError(path, lineno, f"attribute {name!r} is declared twice.")
            head.attributes.append(name)
            if typ.startswith("{"):
                if not typ.endswith("}"):
                    raise DataFormatError(path, lineno, f"unterminated nominal value list for {name!r}.")
                head.types[name] = "nominal"
                head.nominal[name] = _arff_values(typ[1:-1])
            else:
                t = typ.split()[0].lower() if typ else ""
                if t not in ("numeric", "real", "integer", "string", "date"):
                    raise DataFormatError(path, lineno, f"unknown type {typ!r} for attribute {name!r}.")
                head.types[name] = t
        elif low.startswith("@data"):
            break
        elif line.startswith("@"):
            raise DataFormatError(path, lineno, f"unknown header directive {line.split()[0]!r}.")
        else:
            raise DataFormatError(path, lineno, "data before the '@data' line.")
    else:
        raise DataFormatError(path, None, "no '@data' line found.")
    if not head.attributes:
        raise DataFormatError(path, None, "no '@attribute' declarations.")
    if isinstance(target, str):
        if target not in head.types:
            raise DataFormatError(path, None, f"target attribute {target!r} is not declared.")
        head.output = target
    else:
        try:
            head.output = head.attributes[target]
        except IndexError:
            raise DataFormatError(path, None, f"target index {target} out of range for "
                                  f"{len(head.attributes)} attributes.") from None
    head.inputs = [a for a in head.attributes if a != head.output]
    for a in head.inputs:
        if head.types[a] not in ("numeric", "real", "integer"):
            raise DataFormatError(path, None, f"input attribute {a!r} has type {head.types[a]!r}; only numeric "
                                  "inputs are supported.")
    return head, i + 1


def _arff_split(line):
    if "'" in line or '"' in line:
        return [v.strip() for v in next(csv.reader([line], skipinitialspace=True, quotechar="'"))]
    return [f.strip() for f in line.split(",")]


def load_arff(path, *, target=-1, return_header: bool = False):
    """Read a Weka ARFF file (dense rows, numeric inputs, nominal or numeric class).

    Keywords are case-insensitive; ``%`` comments and blank lines are skipped; attribute names
    may be quoted. Sparse rows, missing values (``?``) and non-numeric inputs are rejected with
    a :class:`DataFormatError` naming file and line.

    Parameters
    ----------
    path : str or Path
    target : int or str, default=-1
        The class attribute (index into the attributes or name); the last one by default.
    return_header : bool, default=False

    Returns
    -------
    X, y, feature_names[, header]
        As :func:`load_keel`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from jaxdml.datasets import load_arff
    >>> text = "@RELATION toy\\n@ATTRIBUTE 'a b' NUMERIC\\n@ATTRIBUTE c {0,1}\\n@DATA\\n0.5, 0\\n2, 1"
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.arff"
    >>> _ = path.write_text(text)
    >>> X, y, names = load_arff(path)
    >>> X.ravel().tolist(), y.tolist(), names
    ([0.5, 2.0], ['0', '1'], ['a b'])
    """
    lines = _read_lines(path)
    head, start = _parse_arff_header(path, lines, target)
    X, y = _parse_rows(path, lines, start, head, _arff_split)
    out = (X, y, list(head.inputs))
    return (*out, head) if return_header else out


def read_table(path, **kwargs):
    """``(X, y, feature_names)`` from a ``.dat`` (KEEL) or ``.arff`` file, chosen by extension."""
    suffix = Path(path).suffix.lower()
    if suffix == ".arff":
        return load_arff(path, **kwargs)
    if suffix == ".dat":
        return load_keel(path, **kwargs)
    raise ValueError(f"{path}: unknown data file type {suffix!r} (expected .dat or .arff).")


# --------------------------------------------------------------------------- folds
def sort_labels(labels) -> np.ndarray:
    """The distinct labels in natural order: numerically when every label is a number
    (``"2" < "10"``), otherwise as strings. This is the class encoding of the experiments; it
    decides tied k-NN votes (the smallest code wins)."""
    uniq = np.unique(np.asarray(labels).astype(str))
    try:
        keys = [float(v) for v in uniq]
    except ValueError:
        return uniq
    order = sorted(range(len(uniq)), key=lambda i: (keys[i], uniq[i]))
    return uniq[order]

