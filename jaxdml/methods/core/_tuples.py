"""Weak supervision as metric-learn accepts it: tuples of points, or index tuples with a preprocessor.

Input kinds (decided by :func:`input_kind`, in this order):

* ``X.ndim == 3``: **formed tuples** of shape ``(n_tuples, k, n_features)`` - pairs (k = 2, with
  labels ``y``), triplets (k = 3) or quadruplets (k = 4, both without ``y``);
* ``X.ndim == 2`` and the estimator has a ``preprocessor`` (an array of rows, or a callable mapping a
  1-D index array to the rows): **index tuples** of shape ``(n_tuples, k)``, integers (floats
  holding whole numbers are read as integers; any other dtype is an error, never points);
* anything else: **points** ``(n_samples, n_features)`` with labels - the estimator's ordinary
  ``fit(X, y)`` (metric-learn's ``*_Supervised`` behaviour), unchanged.

Both tuple kinds are turned into the same canonical form :class:`TupleData`: the distinct rows
that occur in the tuples (sorted, so the order in which the rows were given does not matter) and
integer index tuples into them. A fit from formed tuples therefore equals, exactly, the fit from
the same tuples given as indices with ``preprocessor=X``. Pair labels ``y`` may be +1/-1
(metric-learn's convention), 1/0 or booleans; :func:`check_pair_labels` converts them, once, to the
library's one convention, +1 (similar) / -1 (dissimilar). :func:`fit_kwargs` maps the canonical
form to the method layer's weak-supervision arguments: ``pairs=idx, similar=y`` (k = 2, +1/-1),
``triplets=idx`` (k = 3: anchor, closer, farther) and ``quadruplets=idx`` (k = 4: ``d(a, b) <
d(c, d)``).

The checks themselves, :func:`index_tuples` (the one check of index tuples) and
:func:`check_pair_labels` (the one check and conversion of pair labels), live in
:mod:`jaxdml._validation`, below the maths layer, so that :func:`jaxdml.make_pairs_problem` uses them
too; they are re-exported here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._validation import check_pair_labels, index_tuples

__all__ = ["TupleData", "input_kind", "prepare_tuples", "form_tuples", "fit_kwargs", "check_pair_labels", "index_tuples",
           "TUPLE_NAMES", "points_from_indices", "reads_indices"]

#: what a tuple of each arity is called in messages
TUPLE_NAMES = {2: "pairs", 3: "triplets", 4: "quadruplets"}


class TupleData(NamedTuple):
    """Tuples in canonical form.

    Attributes
    ----------
    X : (n_rows, n_features) float64 - the distinct rows used by the tuples, sorted.
    idx : (n_tuples, k) int64 - row indices into ``X``.
    y : (n_tuples,) int64 in {-1, +1} for pairs (+1 similar; whatever convention the caller used), else
        None.
    arity : int - k.
    """

    X: np.ndarray
    idx: np.ndarray
    y: np.ndarray | None
    arity: int


def _ndim_dtype(X):
    ndim, dtype = getattr(X, "ndim", None), getattr(X, "dtype", None)
    if ndim is None or dtype is None:
        try:
            arr = np.asarray(X)
        except (TypeError, ValueError):
            return None, None
        ndim, dtype = arr.ndim, arr.dtype
    return ndim, dtype


def input_kind(X, preprocessor=None) -> str:
    """``"tuples"`` (3-D), ``"indices"`` (2-D with a preprocessor: whatever the dtype, so that float
    or boolean indices get a clear error instead of being read as points) or ``"points"``."""
    ndim, _ = _ndim_dtype(X)
    if ndim == 3:
        return "tuples"
    if ndim == 2 and preprocessor is not None:
        return "indices"
    return "points"


def reads_indices(X, preprocessor) -> bool:
    """Whether a learner on points reads ``X`` as indices into its ``preprocessor`` (metric-learn's
    rule: a 1-D array with a preprocessor; 2-D input is points, used as given)."""
    return preprocessor is not None and _ndim_dtype(X)[0] == 1


def _identifiers(T, preprocessor, owner) -> np.ndarray:
    """Index tuples ``(n, k)``: integer row indices for an array preprocessor (:func:`index_tuples`);
    for a callable one, identifiers of any kind it maps to points (file names, keys, ...), as in
    metric-learn."""
    if callable(preprocessor):
        T = np.asarray(T)
        if T.ndim != 2:
            raise ValueError(f"{owner}: index tuples must have shape (n, k); got {T.shape}.")
        return T
    return index_tuples(T, owner)


def points_from_indices(X, preprocessor, owner) -> np.ndarray:
    """The points of a 1-D array ``X`` (n_samples,) of sample identifiers: ``preprocessor[X]`` for an
    array (integer indices in range), ``preprocessor(X)`` for a callable (any identifiers it maps to
    points: indices, file names, keys); float64 rows, one per identifier (repeats allowed), checked
    like the rows of index tuples (finite numeric rows, one per identifier)."""
    idx = np.reshape(np.asarray(X), (-1, 1))
    if not callable(preprocessor):  # an array: integer indices (a callable takes any identifiers)
        idx = index_tuples(idx, owner, arity=1, what="sample", name="the sample indices")
    if idx.size == 0:
        raise ValueError(f"{owner}: no sample indices given (an empty index array).")
    return _rows_from_preprocessor(preprocessor, idx[:, 0], owner)


def _arity_error(k, arities, owner):
    allowed = " or ".join(f"{a} ({TUPLE_NAMES.get(a, a)})" for a in arities)
    return ValueError(f"{owner}: tuples of {k} element(s) given; this estimator learns from tuples of {allowed} "
                      "points.")


def _rows_from_preprocessor(preprocessor, used, owner):
    """The rows of ``used`` (1-D int array) from an array or a callable preprocessor."""
    if callable(preprocessor):
        try:
            rows = preprocessor(used)
        except Exception as exc:  # the user's callable: report which call failed
            raise ValueError(f"{owner}: the preprocessor failed on an index array of {used.size} indices: "
                             f"{type(exc).__name__}: {exc}") from exc
    else:
        data = np.asarray(preprocessor)
        if data.ndim != 2:
            raise ValueError(f"{owner}: an array preprocessor must be 2-D (n_samples, n_features); got shape "
                             f"{data.shape}.")
        if used.size and (used.min() < 0 or used.max() >= data.shape[0]):
            bad = used[(used < 0) | (used >= data.shape[0])][:5].tolist()
            raise ValueError(f"{owner}: indices must lie in [0, {data.shape[0] - 1}] (the preprocessor has "
                             f"{data.shape[0]} rows); found {bad}.")
        rows = data[used]
    rows = _as_float(rows, owner, "the preprocessor's rows")
    if rows.ndim != 2 or rows.shape[0] != used.size:
        raise ValueError(f"{owner}: the preprocessor must return one row per index, shape ({used.size}, "
                         f"n_features); got shape {rows.shape}.")
    return rows


def _as_float(a, owner, what):
    try:
        a = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: {what} must be numeric.") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{owner}: {what} contain NaN or infinity.")
    return a


def _check_y(y, n, arity, owner):
    if arity != 2:
        if y is not None:
            raise ValueError(f"{owner}: {TUPLE_NAMES.get(arity, 'tuples')} carry their own supervision (the first "
                             "pair is the closer one); y must be None.")
        return None
    return check_pair_labels(y, n, owner)


def prepare_tuples(X, y, *, arities, preprocessor=None, owner="fit") -> TupleData:
    """Validate tuples (formed or indices) and return them in canonical form (:class:`TupleData`).

    Checks: the arity is one of ``arities``; at least one tuple; finite numeric points; index
    tuples in range; for pairs one label per pair, +1/-1, 1/0 or booleans (:func:`check_pair_labels`,
    which converts them to +1/-1), ``None`` otherwise.
    """
    kind = input_kind(X, preprocessor)
    if kind == "points":
        raise ValueError(f"{owner}: expected tuples of shape (n_tuples, k, n_features), or integer index tuples "
                         "(n_tuples, k) with a preprocessor.")
    if kind == "tuples":
        T = _as_float(X, owner, "the tuples")
        n, k, d = T.shape
    else:
        T = _identifiers(X, preprocessor, owner)
        n, k = T.shape
    if k not in arities:
        raise _arity_error(k, arities, owner)
    if n == 0:
        raise ValueError(f"{owner}: no {TUPLE_NAMES.get(k, 'tuples')} given (0 tuples).")
    y = _check_y(y, n, k, owner)
    if kind == "tuples":
        if d == 0:
            raise ValueError(f"{owner}: the tuples have 0 features.")
        rows, inv = np.unique(T.reshape(n * k, d), axis=0, return_inverse=True)
    else:
        used, pos = np.unique(T, return_inverse=True)
        got = _rows_from_preprocessor(preprocessor, used, owner)
        rows, inv_used = np.unique(got, axis=0, return_inverse=True)
        inv = inv_used.reshape(-1)[pos.reshape(-1)]
    return TupleData(X=rows, idx=inv.reshape(n, k).astype(np.int64), y=y, arity=k)


def form_tuples(X, *, arity, n_features, preprocessor=None, owner="pair_distance") -> np.ndarray:
    """Formed tuples ``(n_tuples, arity, n_features)`` float64 from tuples or index tuples."""
    kind = input_kind(X, preprocessor)
    name = TUPLE_NAMES.get(arity, "tuples")
    if kind == "indices":
        T = _identifiers(X, preprocessor, owner)
        if T.shape[1] != arity:
            raise ValueError(f"{owner}: expected index {name} of shape (n, {arity}); got {T.shape}.")
        used, pos = np.unique(T, return_inverse=True)
        rows = _rows_from_preprocessor(preprocessor, used, owner)
        T = rows[pos.reshape(-1)].reshape(T.shape[0], arity, rows.shape[1])
    elif kind == "tuples":
        T = _as_float(X, owner, f"the {name}")
    else:
        hint = "" if preprocessor is not None else " (index tuples need the estimator's preprocessor)"
        raise ValueError(f"{owner}: {name} must have shape (n, {arity}, {n_features}), or be integer index "
                         f"{name} of shape (n, {arity}) with a preprocessor{hint}; got shape {np.shape(X)}.")
    if T.shape[1:] != (arity, n_features):
        raise ValueError(f"{owner}: {name} must have shape (n, {arity}, {n_features}); got {T.shape}.")
    return T


def fit_kwargs(data: TupleData) -> dict:
    """The method layer's weak-supervision arguments for tuples in canonical form."""
    if data.arity == 2:
        return dict(pairs=data.idx, similar=data.y)  # +1/-1 already
    if data.arity == 3:
        return dict(triplets=data.idx)
    if data.arity == 4:
        return dict(quadruplets=data.idx)
    raise ValueError(f"tuples of {data.arity} points have no weak-supervision form.")
