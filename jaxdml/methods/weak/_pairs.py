"""What the pair-constrained methods ITML, LSI (MMC) and DML-eig share: supervision and pairs.

Host-side work only: validating the supervision (labels, or explicit ``pairs`` + ``similar``),
building the constraints (pairs sampled from labels, ITML's bounds from distance percentiles, the
similarity scatter and DML-eig's whitening, in float64), calling the jitted solver cores of
:mod:`jaxdml.losses` and turning their state into a result dict.

Supervision
-----------
``jaxdml.fit(X, y, loss=...)`` builds the pairs from the labels. Weak supervision passes
``pairs`` (an ``(n_pairs, 2)`` int array of row indices of ``X``) and ``similar`` (pair labels:
+1/-1, 1/0 flags or booleans) instead of ``y``::

    jaxdml.fit(X, None, loss="itml", pairs=pairs, similar=similar)

(their records have ``supervised=False`` so that ``fit`` lets ``y=None`` through; the solve
steps check that either labels with two classes or pairs are given). The estimators take the
same ``pairs``/``similar`` in ``fit`` (:class:`PairsMetricLearner`), and metric-learn's forms:
``fit(pairs, y)`` with formed pairs (n_pairs, 2, n_features) and ``y`` in {-1, +1} (or 1/0, or
booleans), or integer
index pairs (n_pairs, 2) with ``preprocessor=X`` (:mod:`jaxdml.methods.core._tuples`); fitted so, they
are pair classifiers (:class:`jaxdml.methods.core._tuple_classifiers._PairsClassifierMixin`).

Pair labels
-----------
The library reads one convention, +1 (similar) / -1 (dissimilar). :func:`supervision` is the door
of ``pairs=``/``similar=``: it checks the pairs with :func:`jaxdml._validation.index_tuples` and
converts the labels with :func:`jaxdml._validation.check_pair_labels` (the one conversion, which
the metric-learn forms go through as well), and :func:`sample_pairs` labels the pairs it draws +1/-1.
Everything after, here and in the solve steps, reads +1/-1: ``s > 0`` selects the similar pairs,
``s < 0`` the dissimilar ones.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.validation import validate_data

from ..._runtime._padding import bucket_size
from ..._runtime._warnings import warn as _warn
from ..._runtime._warnings import warn_not_converged
from ..._validation import Interval, check_pair_labels, index_tuples
from ...linalg import components_from_metric
from ...problems import labelled_pairs, make_pairs_problem, make_problem
from ..core._base import BaseMetricLearner
from ..core._tuple_classifiers import _PairsClassifierMixin
from ..core._tuples import input_kind

__all__ = ["PairsMetricLearner", "PAIRS_CONSTRAINTS", "ESTIMATOR_CONSTRAINTS", "supervision", "sample_pairs",
           "pair_problem", "similar_scatter64", "factor_result", "warn_not_converged", "DENSE_PAIRS_LIMIT",
           "SAMPLED_PAIRS", "PERCENTILE_PAIRS"]

#: the supervision every pair-constrained method takes (besides labels)
PAIRS_CONSTRAINTS = {
    "n_constraints": [Interval(numbers.Integral, 1, None), None],
    "pairs": ["array-like", None],
    "similar": ["array-like", None],
}
#: the estimators' common parameters
ESTIMATOR_CONSTRAINTS = {
    "n_components": [Interval(numbers.Integral, 1, None), None],
    "preprocessor": ["array-like", "callable", None],
    "n_constraints": [Interval(numbers.Integral, 1, None), None],
    "max_iter": [Interval(numbers.Integral, 1, None), None],
    "tol": [Interval(numbers.Real, 0, None)],
    "random_state": ["random_state"],
    "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
}
#: Largest training set for which LSI / DML-eig use *all* pairs (as (n, n) matrices) by default.
DENSE_PAIRS_LIMIT = 3000
#: Pairs of each kind sampled from labels for LSI above that size (and for DML-eig with an explicit
#: ``n_constraints``; its default takes nearest impostors instead, see :mod:`jaxdml.methods.weak._dml_eig`).
SAMPLED_PAIRS = 50_000
#: Pairs used to estimate ITML's distance percentiles (all pairs below this many).
PERCENTILE_PAIRS = 1_000_000
#: pairs_from_labels enumerates all n(n-1)/2 pairs: used up to this many samples.
_ENUMERATE_LIMIT = 3000


def supervision(name, X, codes, n_classes, pairs, similar):
    """Validate the supervision; returns ``None`` (labels) or ``(a, b, s)`` (explicit pairs: int64
    row indices and int64 pair labels, +1 similar / -1 dissimilar, pairs of a row with itself
    dropped)."""
    if pairs is None and similar is None:
        if codes is None:
            raise ValueError(
                f"method {name!r} needs class labels y, or weak supervision through "
                "pairs=(n_pairs, 2) row indices and similar= pair labels (+1/-1 or 1/0); got neither."
            )
        if n_classes < 2:
            raise ValueError(
                f"method {name!r}: y has {n_classes} class(es); learning from labels needs at least "
                "2 classes (similar and dissimilar pairs)."
            )
        return None
    if pairs is None or similar is None:
        raise ValueError(f"method {name!r}: pairs and similar must be given together.")
    if codes is not None:
        raise ValueError(f"method {name!r}: give either labels y or pairs/similar, not both.")
    pairs = index_tuples(pairs, f"method {name!r}", arity=2, n_rows=np.shape(X)[0], what="pair",
                         name="pairs")  # the one check of index tuples
    s = check_pair_labels(similar, pairs.shape[0], f"method {name!r}", name="similar")  # -> +1/-1, once
    a, b = pairs[:, 0], pairs[:, 1]
    keep = a != b
    if not np.all(keep):
        _warn(f"method {name!r}: {int(np.sum(~keep))} pair(s) of a row with itself ignored.",
                      UserWarning)
        a, b, s = a[keep], b[keep], s[keep]
    return a, b, s


def sample_pairs(codes, n_similar, n_dissimilar, rng):
    """``(a, b, s)``: ``n_similar`` same-label and ``n_dissimilar`` different-label pairs, ``s`` their
    int64 labels (+1 similar, -1 dissimilar).

    Small data: :func:`jaxdml.problems.labelled_pairs` (exact, without replacement). Large
    data: uniform sampling of pairs without enumerating them (duplicates removed).
    """
    n = codes.shape[0]
    if n <= _ENUMERATE_LIMIT:
        return labelled_pairs(codes, n_similar=n_similar, n_dissimilar=n_dissimilar, random_state=rng)
    counts = np.bincount(codes)
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = []
    # similar: a class with probability ~ n_c (n_c - 1), then two distinct members
    w = counts * (counts - 1.0)
    if n_similar and w.sum() > 0:
        c = rng.choice(len(counts), size=n_similar, p=w / w.sum())
        i = rng.randint(0, counts[c])
        j = (i + 1 + rng.randint(0, np.maximum(counts[c] - 1, 1))) % counts[c]
        out.append((order[starts[c] + i], order[starts[c] + j], np.ones(n_similar, np.int64)))
    # dissimilar: a first row with probability ~ n - n_{y_i}, then a row of another class
    wi = (n - counts[codes]).astype(np.float64)
    if n_dissimilar and wi.sum() > 0:
        i = rng.choice(n, size=n_dissimilar, p=wi / wi.sum())
        ci = codes[i]
        k = rng.randint(0, n - counts[ci])  # position among the rows outside class ci
        j = order[np.where(k < starts[ci], k, k + counts[ci])]
        out.append((i, j, -np.ones(n_dissimilar, np.int64)))
    a = np.concatenate([o[0] for o in out])
    b = np.concatenate([o[1] for o in out])
    s = np.concatenate([o[2] for o in out])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    _, first = np.unique(lo * n + hi, return_index=True)
    first = np.sort(first)
    return lo[first], hi[first], s[first]


def factor_result(M, n_components, **out):
    """The solve step's result for a learned full metric ``M``: ``M`` itself when ``n_components``
    is the dimension, else its rank-``n_components`` eigen-truncation ``L`` (the leading
    eigenvectors scaled by the square roots of their eigenvalues; ``metric = L^T L``, the best
    rank-``n_components`` PSD approximation of ``M`` in Frobenius norm). The full ``M`` is kept in
    ``info["full_metric"]``."""
    if n_components is None or n_components >= M.shape[0]:
        return dict(metric=M, **out)
    L = components_from_metric(M)[: int(n_components)]
    info = {**out.pop("info", {}), "full_metric": M}
    return dict(L=L, metric=L.T @ L, info=info, **out)


def check_both_kinds(name, s):
    """Pair labels ``s`` (+1/-1) must hold both kinds."""
    n_sim, n_dis = int(np.sum(s > 0)), int(np.sum(s < 0))
    if n_sim == 0 or n_dis == 0:
        raise ValueError(
            f"method {name!r} needs both similar and dissimilar pairs; got {n_sim} similar and "
            f"{n_dis} dissimilar."
        )


def pair_problem(name, X, codes, n_classes, sup, n_constraints, rng):
    """LabeledProblem over all pairs (small data), or a PairsProblem (given / sampled pairs)."""
    n = X.shape[0]
    if sup is None and n_constraints is None and n <= DENSE_PAIRS_LIMIT:
        return make_problem(X, codes, n_neighbors=None, pad_to=bucket_size(n), warn=False, validate=False)
    if sup is None:
        k = SAMPLED_PAIRS if n_constraints is None else int(n_constraints)
        a, b, s = sample_pairs(codes, k, k, rng)
    else:
        a, b, s = sup
    check_both_kinds(name, s)
    return make_pairs_problem(X, np.stack([a, b], axis=1), s, pad_to=bucket_size(len(a)), validate=False)


def similar_scatter64(X, codes, sup_or_problem):
    """``X_S`` and ``|S|`` in float64 on the host (class scatters, or the similar pairs of ``(a, b, s)``,
    ``s`` +1/-1)."""
    if isinstance(sup_or_problem, tuple):
        a, b, s = sup_or_problem
        D = (X[a] - X[b])[s > 0]
        return D.T @ D, float(D.shape[0])
    A = np.zeros((X.shape[1], X.shape[1]))
    n_pairs = 0.0
    for c in np.unique(codes):
        Xc = X[codes == c]
        m = Xc.shape[0]
        sc = Xc.sum(axis=0)
        A += m * (Xc.T @ Xc) - np.outer(sc, sc)
        n_pairs += m * (m - 1) / 2.0
    return 0.5 * (A + A.T), n_pairs


class PairsMetricLearner(_PairsClassifierMixin, BaseMetricLearner):
    """Learns from labels (``fit(X, y)``), from pairs (``fit(pairs, y)``, metric-learn's form) or
    from index pairs into ``X`` (``fit(X, pairs=..., similar=...)``)."""

    def fit(self, X, y=None, *, pairs=None, similar=None, calibration_params=None):
        """Learn the metric from labels ``y``, or from constrained pairs.

        The input kind is decided as in :func:`jaxdml.methods.core._tuples.input_kind`: 3-D ``X`` is
        formed pairs, 2-D integer ``X`` with a ``preprocessor`` is index pairs, anything else is
        points with labels (or with ``pairs``/``similar``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (n_pairs, 2, n_features) or (n_pairs, 2)
            Points; formed pairs; or integer index pairs into the ``preprocessor``.
        y : array-like of shape (n_samples,) or (n_pairs,), optional
            Class labels of the points (pairs of equal labels are similar, of different labels
            dissimilar); for pairs, +1 (similar) or -1 (dissimilar), or 1/0, or booleans.
        pairs : int array-like of shape (n_pairs, 2), optional
            Row indices of ``X`` forming each constrained pair (weak supervision, instead of
            ``y``).
        similar : array-like of shape (n_pairs,), optional
            Pair labels: +1/-1, 1/0 or booleans (+1, 1, True for a similar pair).
        calibration_params : dict, optional
            Fitting on pairs ends with ``calibrate_threshold(pairs, y, **calibration_params)``
            (default: the accuracy on the training pairs).

        Returns
        -------
        self
        """
        if self._tuple_arities and input_kind(X, getattr(self, "preprocessor", None)) != "points":
            if pairs is not None or similar is not None:
                raise ValueError(f"{type(self).__name__}.fit: X already holds pairs; pairs/similar must be None.")
            return self._fit_tuples(X, y, calibration_params=calibration_params)
        if pairs is None and similar is None:
            return super().fit(X, y)
        self._validate_params()
        if y is not None:
            raise ValueError(f"{type(self).__name__}.fit: give either labels y or pairs/similar, not both.")
        self._clear_tuple_state()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        self._store(self._run(X, None, pairs=pairs, similar=similar))
        return self
