"""RCA: relevant components analysis from chunklets (record, chunklets from labels, estimator)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._device import x64_call
from ..._runtime._warnings import warn as _warn
from ..._validation import Interval
from ...eigen._rca import rca_components
from ..core._base import BaseMetricLearner
from ..core._record import Method

__all__ = ["RCA", "RCA_METHOD", "chunks_from_labels"]

_CONSTRAINTS = {
    "n_chunks": [Interval(numbers.Integral, 1, None)],
    "chunk_size": [Interval(numbers.Integral, 2, None)],
    "reg": [Interval(numbers.Real, 0, 1, closed="left")],
}


def chunks_from_labels(codes, n_chunks: int = 100, chunk_size: int = 2, random_state=None) -> np.ndarray:
    """Chunklets of ``chunk_size`` same-label points (each point in at most one), ``n_chunks`` of them.

    Returns chunk ids per row (-1: in no chunklet). When the classes cannot provide ``n_chunks``
    chunklets it warns and forms as many as they can; when no class has ``chunk_size`` points it
    warns and uses chunklets of the largest class size. Memory is linear in ``n``.
    """
    rng = check_random_state(random_state)
    codes = np.asarray(codes)
    members = [np.flatnonzero(codes == c) for c in np.unique(codes)]
    largest = max(m.size for m in members)
    if largest < 2:
        raise ValueError("RCA: every class has a single sample; no chunklet of two points can be formed.")
    if largest < chunk_size:
        _warn(f"RCA: no class has chunk_size={chunk_size} samples; using chunklets of {largest}.", UserWarning)
        chunk_size = largest
    groups = []
    for m in members:
        m = rng.permutation(m)
        groups += [m[i * chunk_size:(i + 1) * chunk_size] for i in range(m.size // chunk_size)]
    if len(groups) < n_chunks:
        _warn(f"RCA: the classes provide only {len(groups)} chunklets of {chunk_size} points, fewer than "
              f"n_chunks={n_chunks}; using {len(groups)}.", UserWarning)
    chunks = -np.ones(codes.size, dtype=np.int32)
    for k, g in enumerate(rng.permutation(len(groups))[:n_chunks]):
        chunks[groups[g]] = k
    return chunks


def _check_chunks(chunk_labels, n: int) -> np.ndarray:
    chunks = np.asarray(chunk_labels)
    if chunks.ndim != 1 or chunks.shape[0] != n:
        raise ValueError(f"RCA: chunk_labels must be 1-D with one entry per row of X ({n}); got shape {chunks.shape}.")
    if chunks.dtype.kind not in "iu" and not (chunks.dtype.kind == "f" and np.all(chunks == np.round(chunks))):
        raise ValueError("RCA: chunk_labels must be integer chunklet ids (-1 for rows in no chunklet).")
    chunks = chunks.astype(np.int64)
    if np.any(chunks < -1):
        raise ValueError("RCA: chunk_labels must be >= -1 (-1 marks rows in no chunklet).")
    _, ids = np.unique(chunks[chunks >= 0], return_inverse=True)  # renumber 0..K-1
    out = -np.ones(n, dtype=np.int32)
    out[chunks >= 0] = ids
    if np.bincount(ids).max(initial=0) < 2:
        raise ValueError("RCA: no chunklet has two or more points; the within-chunklet covariance is undefined.")
    return out


def _rca(X, codes, n_classes, *, n_components, random_state, chunk_labels, n_chunks, chunk_size, reg, **_):
    """Whiten the within-chunklet covariance in float64 (chunklets given, or drawn from labels)."""
    if chunk_labels is not None:
        chunks = _check_chunks(chunk_labels, X.shape[0])
    elif codes is not None:
        chunks = chunks_from_labels(codes, n_chunks, chunk_size, random_state)
    else:
        raise ValueError("RCA learns from chunklets: give labels y or chunk_labels.")
    L, C = x64_call(rca_components, X, chunks, n_components, reg)
    return dict(L=L, info=dict(chunklet_covariance=C, chunks=chunks))


RCA_METHOD = Method("rca", "L", _rca, defaults=dict(chunk_labels=None, n_chunks=100, chunk_size=2, reg=1e-6),
                    constraints={**_CONSTRAINTS, "chunk_labels": ["array-like", None]}, supervised=False,
                    estimator="RCA")


class RCA(BaseMetricLearner):
    r"""Relevant Components Analysis (Bar-Hillel, Hertz, Shental and Weinshall, 2005).

    Points of a *chunklet* are known to share a class. RCA whitens the within-chunklet
    covariance :math:`C = \frac1N \sum_k \sum_{i \in k} (x_i - m_k)(x_i - m_k)^T`:
    ``components_`` is :math:`C^{-1/2}` (so ``L C L^T = I``), the metric :math:`C^{-1}`. A
    singular ``C`` is regularised (eigenvalues floored at ``reg`` times the largest), in float64.
    With ``n_components`` below ``n_features``, the paper's optional reduction comes first: the
    directions maximising :math:`|A^T S_t A| / |A^T C A|` (``S_t`` the total covariance).

    ``fit(X, chunk_labels=...)`` takes the chunklets (ids, -1 for no chunklet); ``fit(X, y)``
    draws ``n_chunks`` chunklets of ``chunk_size`` same-label points (metric-learn's
    ``RCA_Supervised``), with a warning and fewer or smaller chunklets when the classes cannot
    provide them.

    Parameters
    ----------
    n_components : int, default=None
    n_chunks : int, default=100
    chunk_size : int, default=2
    reg : float, default=1e-6
    random_state : int, RandomState or None
        Seeds the chunklets drawn from labels.
    preprocessor : array-like or callable, default=None
        metric-learn's preprocessor: with it, a 1-D ``X`` in ``fit`` and ``transform`` holds sample
        identifiers, read as ``preprocessor[X]`` (an array: integer indices) or ``preprocessor(X)`` (a
        callable: any identifiers it maps to rows, e.g. file names).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    chunklet_covariance_ : ndarray of shape (n_features, n_features)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.RCA(random_state=0).fit(X, y).components_.shape
    (4, 4)

    References
    ----------
    A. Bar-Hillel, T. Hertz, N. Shental, D. Weinshall. Learning a Mahalanobis metric from
    equivalence constraints. JMLR 6:937-965, 2005.
    """

    _record = RCA_METHOD
    _parameter_constraints = {"n_components": [Interval(numbers.Integral, 1, None), None], **_CONSTRAINTS,
                              "random_state": ["random_state"], "preprocessor": ["array-like", "callable", None]}

    def __init__(self, n_components=None, *, n_chunks=100, chunk_size=2, reg=1e-6, random_state=None,
                 preprocessor=None):
        self.preprocessor = preprocessor
        self.n_components = n_components
        self.n_chunks = n_chunks
        self.chunk_size = chunk_size
        self.reg = reg
        self.random_state = random_state

    def fit(self, X, y=None, chunk_labels=None):
        """Learn the metric from chunklets ``chunk_labels`` or from labels ``y``."""
        if chunk_labels is None:
            return super().fit(X, y)
        if y is not None:
            raise ValueError("RCA.fit: give either labels y or chunk_labels, not both.")
        from sklearn.utils.validation import validate_data

        self._validate_params()
        X = validate_data(self, self._points(X, "RCA.fit"), dtype=np.float64, ensure_min_samples=2)
        self._store(self._run(X, None, chunk_labels=chunk_labels))
        return self

    def _store(self, result):
        super()._store(result)
        self.chunklet_covariance_ = result.info["chunklet_covariance"]
