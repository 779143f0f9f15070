"""What the triplet and quadruplet learners (SCML, LSML) share: index tuples into ``X`` as weak supervision.

(metric-learn's forms -- formed tuples ``fit(triplets)`` of shape (n, 3, d), or index tuples with a
``preprocessor`` -- go through :mod:`jaxdml.methods._tuples` and the classifier mixins.)

``jaxdml.fit(X, None, loss="lsml", quadruplets=Q)`` with ``Q`` an ``(n, 4)`` int array of row
indices of ``X`` (``d(a, b) < d(c, d)`` wanted), or ``loss="scml", triplets=T`` with ``T`` of shape
``(n, 3)`` (anchor, closer, farther). Without them the methods build the tuples from labels.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data

from ._base import BaseMetricLearner

__all__ = ["check_index_tuples", "TupleMetricLearner"]


def check_index_tuples(name, X, tuples, arity, kind, codes=None):
    """``tuples`` as an ``(n, arity)`` int64 array of valid row indices of ``X`` (clear errors)."""
    if codes is not None:
        raise ValueError(f"method {name!r}: give either labels y or {kind}, not both.")
    T = np.asarray(tuples)
    if T.ndim != 2 or T.shape[1] != arity or T.shape[0] == 0:
        raise ValueError(
            f"method {name!r}: {kind} must be a non-empty (n_{kind}, {arity}) array of row indices of X; "
            f"got shape {T.shape}."
        )
    if T.dtype.kind not in "iu":
        if T.dtype.kind == "f" and np.all(np.isfinite(T)) and np.all(T == np.round(T)):
            T = T.astype(np.int64)
        else:
            raise ValueError(f"method {name!r}: {kind} must hold integer row indices of X; got dtype {T.dtype}.")
    T = T.astype(np.int64)
    n = X.shape[0]
    if T.min() < 0 or T.max() >= n:
        raise ValueError(
            f"method {name!r}: {kind} index out of range: X has {n} rows, got indices in "
            f"[{T.min()}, {T.max()}]."
        )
    return T


class TupleMetricLearner(BaseMetricLearner):
    """Learns from labels (``fit(X, y)``) or from index tuples (``fit(X, <kind>=...)``)."""

    _tuple_kind: str = ""

    def _fit_index_tuples(self, X, y, tuples):
        if tuples is None:
            return BaseMetricLearner.fit(self, X, y)
        owner = type(self).__name__
        self._validate_params()
        if y is not None:
            raise ValueError(f"{owner}.fit: give either labels y or {self._tuple_kind}, not both.")
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        self._store(self._run(X, None, **{self._tuple_kind: tuples}))
        return self
