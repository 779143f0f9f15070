"""Input and hyper-parameter validation at the Python edge.

Everything here runs on the host, before any array reaches a jitted function, so that bad input
fails with a message that names the problem instead of a NaN or a traceback from inside JAX.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils.validation import check_array

from .exceptions import InvalidParameterError
from ._runtime._warnings import warn as _warn

__all__ = [
    "Interval",
    "Options",
    "check_params",
    "is_array_like",
    "check_data",
    "encode_labels",
    "labelled",
    "check_centroids_num",
    "index_tuples",
    "check_pair_labels",
]


@dataclass(frozen=True)
class Interval:
    """A numeric constraint ``low <= value <= high`` (ends open or closed).

    ``kind`` is ``numbers.Integral`` or ``numbers.Real``; numpy scalars are accepted.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"  # "both", "left", "right", "neither"

    def is_satisfied_by(self, value) -> bool:
        """Whether ``value`` is of the interval's type and inside it."""
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        if isinstance(value, numbers.Real) and not np.isfinite(value):
            return False
        lo_ok = self.low is None or (
            value >= self.low if self.closed in ("both", "left") else value > self.low
        )
        hi_ok = self.high is None or (
            value <= self.high if self.closed in ("both", "right") else value < self.high
        )
        return lo_ok and hi_ok

    def __str__(self) -> str:
        name = "an int" if self.kind is numbers.Integral else "a float"
        lb = "[" if self.closed in ("both", "left") else "("
        rb = "]" if self.closed in ("both", "right") else ")"
        if self.low is None and self.high is None:
            return f"a finite {name[2:] if name.startswith('a ') else name[3:]}"
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return f"a finite {name[2:] if name.startswith('a ') else name[3:]} in the range {lb}{lo}, {hi}{rb}"


@dataclass(frozen=True)
class Options:
    """A value from a fixed set (strings, or any hashable)."""

    values: frozenset

    def __init__(self, values):
        object.__setattr__(self, "values", frozenset(values))

    def is_satisfied_by(self, value) -> bool:
        """Whether ``value`` is one of the options."""
        if isinstance(value, (bool, np.bool_)) and not any(isinstance(v, bool) for v in self.values):
            return False  # True == 1 and False == 0: a flag is not a numeric option
        try:
            return value in self.values
        except TypeError:
            return False

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in sorted(self.values, key=str))


def is_array_like(value) -> bool:
    """An array or a sequence of values (scikit-learn's "array-like"), never a string, bytes, a mapping
    or a set: a misspelled option such as ``basis="nope"`` must not pass as data."""
    if isinstance(value, (str, bytes, dict, set, frozenset)) or np.isscalar(value):
        return False
    return hasattr(value, "__array__") or hasattr(value, "shape") or isinstance(value, (list, tuple))


def _satisfies(value, constraint) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, str) and constraint == "array-like":
        return is_array_like(value)
    if not isinstance(constraint, str):
        return isinstance(value, constraint) if isinstance(constraint, type) else constraint.is_satisfied_by(value)
    if constraint == "boolean":
        return isinstance(value, (bool, np.bool_))
    if constraint == "callable":
        return callable(value)
    if constraint == "random_state":
        return value is None or isinstance(value, (np.random.RandomState, np.random.Generator)) or (
            isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)))
    if constraint == "dict":
        return isinstance(value, dict)
    raise ValueError(f"unknown parameter constraint {constraint!r}")


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, str):
        return {"random_state": "an int, a RandomState, a Generator or None"}.get(constraint, constraint)
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__}"
    return str(constraint)


def check_params(params: dict[str, Any], constraints: dict[str, list], *, owner: str) -> None:
    """Validate ``params`` against ``constraints`` (name -> list of accepted constraints).

    Raises
    ------
    InvalidParameterError
        A ``ValueError`` naming the parameter, the value received and what would have been accepted.
    """
    for name, value in params.items():
        if name not in constraints:
            continue
        options = constraints[name]
        if not any(_satisfies(value, c) for c in options):
            accepted = " or ".join(_describe(c) for c in options)
            raise InvalidParameterError(
                f"The '{name}' parameter of {owner} must be {accepted}. Got {value!r} instead."
            )


def check_data(X, y=None, *, owner: str = "fit", min_samples: int = 2, min_classes: int = 2,
               class_labels: bool = True):
    """Validate a design matrix (and labels) and return ``(X, y)`` as float64 / object arrays.

    Checks: X is numeric and 2-D with at least ``min_samples`` rows and one column, finite;
    y (if given) is 1-D with as many entries as X has rows and at least ``min_classes`` distinct
    labels. String labels are accepted.
    """
    if X is None:
        raise ValueError(f"{owner}: X is None; expected a 2-D array of shape (n_samples, n_features).")
    arr = np.asarray(X) if not hasattr(X, "toarray") else X
    if hasattr(arr, "toarray"):
        raise TypeError(f"{owner}: sparse input is not supported; pass a dense array (X.toarray()).")
    if arr.dtype.kind in "OSUV":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{owner}: X must be numeric; it contains values that are not numbers ({exc})."
            ) from None
    if arr.ndim != 2:
        raise ValueError(
            f"{owner}: X must be 2-D (n_samples, n_features); got an array with {arr.ndim} "
            f"dimension(s) and shape {arr.shape}. Reshape 1-D data with X.reshape(-1, 1) "
            "for a single feature or X.reshape(1, -1) for a single sample."
        )
    X = check_array(arr, dtype=np.float64, ensure_min_samples=min_samples, input_name="X")
    check_scale(X, owner)
    if y is None:
        return X, None
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        _warn(f"{owner}: y is a column vector; it was flattened to 1-D.")
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{owner}: y must be 1-D (n_samples,); got shape {y.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            f"{owner}: X and y have inconsistent numbers of samples: X has {X.shape[0]} rows, "
            f"y has {y.shape[0]} labels."
        )
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{owner}: y contains NaN or infinity.")
    if class_labels:
        check_class_labels(y, owner)
    n_classes = len(np.unique(y))
    if n_classes < min_classes:
        raise ValueError(
            f"{owner}: y has {n_classes} class(es); supervised metric learning needs at least "
            f"{min_classes} classes (the labels only contain {np.unique(y)[:5].tolist()})."
        )
    return X, y


#: the spread of the features (largest per-feature range) that the solvers handle in float32
SCALE_RANGE = (1e-10, 1e10)


def check_scale(X, owner: str) -> None:
    """Reject data without variation, or at a scale whose squared distances leave float32's range."""
    with np.errstate(over="ignore", invalid="ignore"):
        spread = float(np.max(X.max(axis=0) - X.min(axis=0)))
    if spread == 0.0:
        raise ValueError(f"{owner}: X has no variation (every row is the same); there is no distance to learn.")
    lo, hi = SCALE_RANGE
    if not lo <= spread <= hi:
        raise ValueError(
            f"{owner}: the features of X span {spread:.3g} (largest range of a feature); metric learning "
            f"needs a spread in [{lo:g}, {hi:g}] so that squared distances stay representable. Rescale the "
            "features, e.g. with sklearn.preprocessing.MinMaxScaler or StandardScaler."
        )


def check_class_labels(y, owner: str) -> None:
    """Class labels: not continuous values, not a mix of strings and numbers, not None."""
    from sklearn.utils.multiclass import type_of_target

    if y.dtype == object:
        if any(v is None for v in y):
            raise ValueError(f"{owner}: y contains None; every sample needs a class label.")
        if len({isinstance(v, str) for v in y}) > 1:
            raise ValueError(f"{owner}: y mixes strings and numbers; use one type of class label.")
    try:
        kind = type_of_target(y, input_name="y")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{owner}: y is not a valid vector of class labels ({exc}).") from None
    if kind not in ("binary", "multiclass"):
        hint = (" Maybe you are trying to fit a classifier, which expects discrete classes on a regression target "
                "with continuous values. This method learns from class labels (bin the values or use integer "
                "grades; MLKR learns from continuous targets)." if kind.startswith("continuous")
                else " y must hold class labels.")
        raise ValueError(f"{owner}: Unknown label type: {kind}.{hint}")


def labelled(y) -> np.ndarray:
    """Which entries of partial labels ``y`` are known: metric-learn's convention, where integer labels
    below 0 (e.g. -1) mark unlabelled samples (integers, booleans and floats holding whole numbers);
    other labels (strings, fractions) are all known."""
    y = np.asarray(y)
    if y.dtype.kind in "iub" or (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
        return y >= 0
    return np.ones(y.shape, bool)


def encode_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(classes, codes)`` with ``codes`` int32 in ``[0, n_classes)``."""
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    return classes, codes.astype(np.int32)


def index_tuples(T, owner, *, arity=None, n_rows=None, what="tuple", name="index tuples", rows="X") -> np.ndarray:
    """The one check of index tuples (every door that takes row indices uses it: ``fit`` with a
    ``preprocessor``, ``jaxdml.fit(..., pairs=/triplets=/quadruplets=)``, ``make_pairs_problem``, the
    Mahalanobis API).

    Returns ``T`` as an ``(n, k)`` int64 array. Checks: 2-D; ``k == arity`` when given; integers, or
    floats that hold whole numbers (booleans, fractions, strings: a ``ValueError``); with ``n_rows``,
    every index in ``[0, n_rows - 1]`` (``rows`` names what the indices point into). Messages name the
    argument (``name``: ``"pairs"``, ``"triplets"``, ...).
    """
    idx = np.asarray(T)
    out = None
    if idx.dtype.kind in "iu":
        out = idx.astype(np.int64)
    elif idx.dtype.kind in "fO":
        try:
            f = idx.astype(np.float64)
        except (TypeError, ValueError):
            f = None
        if f is not None and np.all(np.isfinite(f)) and np.all(f == np.round(f)):
            out = f.astype(np.int64)
    if out is None:
        hint = " (with a preprocessor, 2-D input is read as index tuples)" if what == "tuple" else ""
        raise ValueError(f"{owner}: {name} must hold integer row indices{hint}; got dtype {idx.dtype}"
                         + (" with values that are not whole numbers" if idx.dtype.kind == "f" else "") + ".")
    if out.ndim != 2 or (arity is not None and out.shape[1] != arity):
        raise ValueError(f"{owner}: {name} must have shape (n, {arity or 'k'}); got {out.shape}.")
    if n_rows is not None and out.size and (out.min() < 0 or out.max() >= n_rows):
        bad = out[(out < 0) | (out >= n_rows)][:5].tolist()
        raise ValueError(f"{owner}: {what} indices must lie in [0, {n_rows - 1}] ({rows} has {n_rows} rows); "
                         f"{name} holds indices out of range: {bad}.")
    return out


_PAIR_LABELS = "+1/-1 or 1/0 (similar/dissimilar), or booleans (True: similar)"
_KINDS = {"U": "string", "S": "bytes", "V": "structured"}


def check_pair_labels(y, n, owner, *, name="y") -> np.ndarray:
    """Pair labels as int64 in {-1, +1}: +1 for a similar pair, -1 for a dissimilar one.

    The one check and the one conversion of pair labels: every door that takes them calls it
    (``fit(pairs, y)``, ``calibrate_threshold`` and ``score`` of the pair classifiers, ``similar=`` of
    ``jaxdml.fit`` and of the estimators' ``fit(X, pairs=, similar=)``, ``make_pairs_problem``); below
    it the library reads +1/-1 only. Accepted, one label per pair (1-D with ``n`` entries; ``n=None``:
    any length): +1/-1 (metric-learn's convention), 1/0 flags (1 similar, 0 dissimilar) and booleans,
    as integers, floats or booleans. Refused with a ``ValueError`` naming ``name``: strings, any other
    value (2, 0.5, NaN) and a mix of the two conventions (-1 and 0 together, whose meaning is
    ambiguous). Labels that are all 1 are similar pairs in both conventions.
    """
    if y is None:
        raise ValueError(f"{owner}: pairs need labels {name}: {_PAIR_LABELS}.")
    y = np.asarray(y)
    if y.ndim != 1 or (n is not None and y.shape[0] != n):
        raise ValueError(f"{owner}: {name} must be 1-D with one label per pair ({n}); got shape {y.shape}.")
    if y.dtype.kind == "b":
        return np.where(y, 1, -1).astype(np.int64)
    flat = y.tolist() if y.dtype.kind == "O" else []
    kind = _KINDS.get(y.dtype.kind, "object")
    if y.dtype.kind in "USV" or any(isinstance(v, (str, bytes)) or v is None for v in flat):
        raise ValueError(f"{owner}: pair labels {name} must be {_PAIR_LABELS}; got {kind} values such as "
                         f"{y[:3].tolist()}.")
    try:
        yf = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: pair labels {name} must be {_PAIR_LABELS}.") from None
    values = np.unique(yf)
    bad = values[~np.isin(values, (-1.0, 0.0, 1.0))]
    if bad.size:
        raise ValueError(f"{owner}: pair labels {name} must be {_PAIR_LABELS}; found {bad[:5].tolist()}.")
    if -1.0 in values and 0.0 in values:
        raise ValueError(f"{owner}: pair labels {name} mix the two conventions: they hold both -1 (dissimilar in "
                         "+1/-1) and 0 (dissimilar in 1/0); use one, +1/-1 or 1/0.")
    return np.where(yf > 0, 1, -1).astype(np.int64)


def check_n_components(n_components, n_features: int, *, owner: str, upper: int | None = None) -> int:
    """Resolve ``n_components`` (None -> ``upper`` or ``n_features``) and check its range."""
    hi = n_features if upper is None else upper
    if n_components is None:
        return hi
    if isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral):
        raise ValueError(f"{owner}: n_components must be an int or None; got {n_components!r}.")
    if n_components > hi == n_features:
        raise ValueError(
            f"{owner}: n_components={n_components} is out of range. The preferred dimensionality of the projected "
            f"space `n_components` ({n_components}) cannot be greater than the given data dimensionality "
            f"({n_features})!"
        )
    if not 1 <= n_components <= hi:
        raise ValueError(
            f"{owner}: n_components={n_components} is out of range; it must be between 1 and "
            f"{hi} (n_features={n_features})."
        )
    return int(n_components)


def check_centroids_num(y, centroids_num, *, owner: str = "NCMC") -> int:
    """Validate ``centroids_num`` (centroids per class) against the class sizes of ``y``.

    Raises a ``ValueError`` naming the smallest class when ``centroids_num`` exceeds its size
    (k-means cannot find more centroids than a class has samples).
    """
    if isinstance(centroids_num, bool) or not isinstance(centroids_num, numbers.Integral) or centroids_num < 1:
        raise ValueError(f"{owner}: centroids_num must be a positive int; got {centroids_num!r}.")
    classes, counts = np.unique(np.asarray(y), return_counts=True)
    small = counts < centroids_num
    if np.any(small):
        bad = [(c.item() if hasattr(c, "item") else c, int(n)) for c, n in zip(classes[small], counts[small])]
        raise ValueError(
            f"{owner}: centroids_num={int(centroids_num)} is larger than the number of samples of "
            f"{len(bad)} class(es) (class, size: {bad[:5]}); k-means cannot find more centroids "
            f"than a class has samples. Use centroids_num <= {int(counts.min())}."
        )
    return int(centroids_num)


def seed_from(random_state) -> int:
    """A 31-bit seed for a JAX key from scikit-learn's ``random_state`` forms.

    ``None`` gives 0 (fits are deterministic by default); an int seeds a ``RandomState`` as
    scikit-learn does; a ``RandomState`` or ``Generator`` instance is drawn from (so repeated fits
    with one instance differ, as in scikit-learn). Anything else raises a ``ValueError`` naming
    ``random_state``.
    """
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if not 0 <= int(random_state) < 2**32:
            raise ValueError(f"random_state must be in [0, 2**32 - 1]; got {random_state!r}.")
        return int(np.random.RandomState(int(random_state)).randint(2**31))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31))
    raise ValueError(
        "random_state must be None, an int, a numpy.random.RandomState or a numpy.random.Generator; "
        f"got {random_state!r}."
    )
