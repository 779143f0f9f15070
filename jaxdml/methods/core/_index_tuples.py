"""What the triplet and quadruplet learners (SCML, LSML) share: index tuples into ``X`` as weak supervision.

(metric-learn's forms -- formed tuples ``fit(triplets)`` of shape (n, 3, d), or index tuples with a
``preprocessor`` -- go through :mod:`jaxdml.methods.core._tuples` and the classifier mixins.)

``jaxdml.fit(X, None, loss="lsml", quadruplets=Q)`` with ``Q`` an ``(n, 4)`` int array of row
indices of ``X`` (``d(a, b) < d(c, d)`` wanted), or ``loss="scml", triplets=T`` with ``T`` of shape
``(n, 3)`` (anchor, closer, farther). Without them the methods build the tuples from labels.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data

from ._base import BaseMetricLearner
from ._tuples import index_tuples

__all__ = ["check_index_tuples", "TupleMetricLearner"]


def check_index_tuples(name, X, tuples, arity, kind, codes=None):
    """``tuples`` as an ``(n, arity)`` int64 array of valid row indices of ``X`` (:func:`._tuples.index_tuples`,
    the one check of index tuples; here also non-empty, and not given together with labels)."""
    if codes is not None:
        raise ValueError(f"method {name!r}: give either labels y or {kind}, not both.")
    if np.ndim(tuples) != 2 or np.shape(tuples)[1] != arity or np.shape(tuples)[0] == 0:
        raise ValueError(
            f"method {name!r}: {kind} must be a non-empty (n_{kind}, {arity}) array of row indices of X; "
            f"got shape {np.shape(tuples)}."
        )
    return index_tuples(tuples, f"method {name!r}", arity=arity, n_rows=X.shape[0], what=kind[:-1],
                        name=kind)


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
