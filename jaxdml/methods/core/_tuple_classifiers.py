"""Tuple classifiers on a learned metric (metric-learn's API): pairs, triplets, quadruplets.

Mixins for :class:`jaxdml.methods.core._base.BaseMetricLearner` subclasses:

* :class:`_PairsClassifierMixin` - ``predict(pairs)`` in {-1, +1} (+1: distance <= ``threshold_``),
  ``decision_function`` (= ``pair_score`` = -distance: larger is more similar), ``score`` (ROC AUC),
  ``set_threshold``, ``calibrate_threshold``. Pair labels ``y`` (``fit``, ``score``,
  ``calibrate_threshold``) are +1/-1, 1/0 or booleans, converted to +1/-1 by the one door
  :func:`jaxdml._validation.check_pair_labels`. Available on an estimator fitted on pairs (whose
  fit calibrates the threshold for accuracy on the training pairs, as metric-learn does) or, after
  ``set_threshold``/``calibrate_threshold``, on one fitted from labels.
* :class:`_TripletsClassifierMixin` - on triplets ``(a, b, c)``: ``decision_function = d(a, c) -
  d(a, b)``, ``predict`` +1 when ``d(a, b) < d(a, c)`` else -1, ``score`` the accuracy (the
  fraction predicted +1). Available on an estimator fitted on triplets.
* :class:`_QuadrupletsClassifierMixin` - on quadruplets ``(a, b, c, d)``: ``decision_function =
  d(c, d) - d(a, b)``, ``predict`` +1 when ``d(a, b) < d(c, d)`` else -1, ``score`` the accuracy.
  Available on an estimator fitted on quadruplets.

(metric-learn's quadruplet ``predict`` is ``sign`` and gives 0 on ties; here ties are -1, so that
predictions stay in {-1, +1}.)

Where the methods are visible: on an unfitted learner that takes tuples (so that scikit-learn's
``cross_val_score`` and ``GridSearchCV`` find ``score`` before they fit it on tuples), and on one
fitted on its kind of tuple. After a fit on points and labels they are hidden (``hasattr`` is
False, so scikit-learn's estimator checks, which fit on points, never call them on points); calling
one then raises scikit-learn's ``NotFittedError`` (an ``AttributeError``) saying what to do: fit on
tuples, or for pairs set a threshold first.
"""

from __future__ import annotations

import functools
import numbers
import types

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._tuples import TUPLE_NAMES, check_pair_labels

__all__ = ["_PairsClassifierMixin", "_TripletsClassifierMixin", "_QuadrupletsClassifierMixin",
           "calibrate_threshold", "CALIBRATION_STRATEGIES"]

CALIBRATION_STRATEGIES = ("accuracy", "f_beta", "max_tpr", "max_tnr")


def _check_calibration(strategy, beta, min_rate):
    if strategy not in CALIBRATION_STRATEGIES:
        raise ValueError(f"calibrate_threshold: strategy must be one of {CALIBRATION_STRATEGIES}; got {strategy!r}.")
    if strategy in ("max_tpr", "max_tnr"):
        if (isinstance(min_rate, bool) or not isinstance(min_rate, numbers.Real)
                or not 0 <= float(min_rate) <= 1):
            raise ValueError(f"calibrate_threshold: strategy {strategy!r} needs min_rate, a number in [0, 1]; got "
                             f"{min_rate!r}.")
    if strategy == "f_beta":
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0 <= float(beta) < np.inf:
            raise ValueError(f"calibrate_threshold: beta must be a finite number >= 0; got {beta!r}.")


def calibrate_threshold(distances, y, strategy="accuracy", *, beta=1.0, min_rate=None) -> float:
    """The distance threshold (predict +1 when ``distance <= threshold``) that is best for ``strategy``.

    Every cut between distinct distances is tried (and "accept none"): ``"accuracy"`` maximises
    the accuracy, ``"f_beta"`` the F-beta score of the similar class, ``"max_tpr"`` the true
    positive rate subject to a true negative rate ``>= min_rate``, ``"max_tnr"`` the true
    negative rate subject to a true positive rate ``>= min_rate``. Ties: the smaller threshold,
    except ``"max_tnr"``, which takes the larger (the higher true positive rate). The threshold is
    the largest accepted distance (just below the smallest one when none is accepted). ``y`` holds
    +1/-1 labels (the estimator's door, :func:`jaxdml._validation.check_pair_labels`, converted them).
    """
    _check_calibration(strategy, beta, min_rate)
    d = np.asarray(distances, dtype=np.float64)
    y = np.asarray(y)
    pos = y > 0
    P, n = int(pos.sum()), d.size
    N = n - P
    if P == 0 or N == 0:
        raise ValueError("calibrate_threshold: the validation pairs must contain both similar (+1) and dissimilar "
                         f"(-1) pairs; got {P} similar and {N} dissimilar.")
    order = np.argsort(d, kind="stable")
    ds, ps = d[order], pos[order]
    k = np.arange(n + 1)  # k pairs accepted (the k smallest distances)
    TP = np.concatenate([[0], np.cumsum(ps)])
    FP = k - TP
    valid = np.ones(n + 1, bool)
    valid[1:n] = ds[:-1] < ds[1:]  # a cut cannot separate equal distances
    tpr, tnr = TP / P, (N - FP) / N
    if strategy == "accuracy":
        value = (TP + N - FP) / n
    elif strategy == "f_beta":
        b2 = float(beta) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(TP > 0, (1 + b2) * TP / ((1 + b2) * TP + b2 * (P - TP) + FP), 0.0)
    elif strategy == "max_tpr":
        value = np.where(tnr >= min_rate, tpr, -1.0)
    else:
        value = np.where(tpr >= min_rate, tnr, -1.0)
    value = np.where(valid, value, -np.inf)
    best = np.flatnonzero(value == value.max())
    kb = int(best[-1] if strategy == "max_tnr" else best[0])
    return float(ds[kb - 1]) if kb > 0 else float(np.nextafter(ds[0], -np.inf))


class _available_when:
    """A method that exists only when ``problem(self)`` is None (scikit-learn's ``available_if``
    with a message): otherwise reading it raises ``NotFittedError`` (an ``AttributeError``, so
    ``hasattr`` is False) with ``problem(self)``, which says what to do."""

    def __init__(self, problem):
        self.problem = problem

    def __call__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)
        return self

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        message = self.problem(obj, self.fn.__name__)
        if message:
            raise NotFittedError(message)
        return types.MethodType(self.fn, obj)


def _points_fit(self):
    return hasattr(self, "components_") and getattr(self, "tuple_arity_", None) is None


def _fitted_on(arity):
    """Available unless the learner was fitted on something other than ``arity``-tuples (or cannot
    take them: metric-learn's ``*_Supervised`` names)."""
    name = TUPLE_NAMES[arity]

    def problem(self, method):
        cls = type(self).__name__
        if arity not in self._tuple_arities:
            return (f"{cls}.{method} works on {name}, and {cls} learns from points and labels only; use the "
                    f"learner without the _Supervised suffix to fit on {name}.")
        if hasattr(self, "components_") and getattr(self, "tuple_arity_", None) != arity:
            return (f"{cls}.{method} works on {name}, but this {cls} was fitted on points and labels; fit it on "
                    f"{name} (fit({name}) of shape (n, {arity}, n_features)) to classify {name}.")
        return None

    return problem


def _pair_problem(self, method):
    """Pair classification: on pairs, or after a threshold was set on a fit from labels."""
    cls = type(self).__name__
    if 2 not in self._tuple_arities and "threshold_" not in vars(self):
        return (f"{cls}.{method} classifies pairs with a distance threshold; {cls} learns from points and labels "
                "only: fit it, then set a threshold with calibrate_threshold(pairs, y) or set_threshold(t), or "
                "use the learner without the _Supervised suffix to fit on pairs.")
    if _points_fit(self) and "threshold_" not in vars(self):
        return (f"{cls}.{method} classifies pairs with a distance threshold, but this {cls} was fitted on points "
                "and labels and has none: set it with calibrate_threshold(pairs, y) or set_threshold(t) first, "
                "or fit on pairs (fit(pairs, y) with y in {-1, +1}).")
    return None


def _fit_first(self, method):
    if not hasattr(self, "components_"):
        return (f"This {type(self).__name__} instance is not fitted yet; call fit before {method} (it sets the "
                "distance threshold of a learned metric).")
    return None


class _PairsClassifierMixin:
    """Pair classification with a distance threshold (see the module docstring)."""

    _tuple_arities = (2,)

    @_available_when(_pair_problem)
    def decision_function(self, pairs) -> np.ndarray:
        """``-distance`` of each pair: larger means more similar."""
        return self.pair_score(pairs)

    @_available_when(_pair_problem)
    def predict(self, pairs) -> np.ndarray:
        """+1 (similar) when a pair's distance is at most ``threshold_``, else -1."""
        check_is_fitted(self, "components_")
        return np.where(self.pair_distance(pairs) <= self.threshold_, 1, -1)

    @_available_when(_pair_problem)
    def score(self, pairs, y) -> float:
        """ROC AUC of ``decision_function`` for the pair labels ``y`` (+1/-1, 1/0 or booleans; similar
        first)."""
        from sklearn.metrics import roc_auc_score

        d = self.decision_function(pairs)
        y = check_pair_labels(y, d.shape[0], f"{type(self).__name__}.score")
        if np.unique(y).size < 2:
            raise ValueError(f"{type(self).__name__}.score: the ROC AUC needs both similar (+1) and dissimilar (-1) "
                             "pairs; y holds one kind only.")
        return float(roc_auc_score(y, d))

    @_available_when(_fit_first)
    def set_threshold(self, threshold):
        """Set the distance threshold of :meth:`predict` (a finite real number)."""
        check_is_fitted(self, "components_")
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not np.isfinite(threshold):
            raise ValueError(f"set_threshold: the threshold must be a finite real number; got {threshold!r}.")
        self.threshold_ = float(threshold)
        return self

    @_available_when(_fit_first)
    def calibrate_threshold(self, pairs, y, strategy="accuracy", beta=1.0, min_rate=None):
        """Choose ``threshold_`` on validation pairs: ``strategy`` in {"accuracy", "f_beta",
        "max_tpr", "max_tnr"} (see :func:`jaxdml.methods.core._tuple_classifiers.calibrate_threshold`).

        Parameters
        ----------
        pairs : (n_pairs, 2, n_features) or index pairs (n_pairs, 2) with a preprocessor
        y : (n_pairs,) pair labels: +1/-1, 1/0 or booleans (+1, 1, True: similar)
        strategy : str, default="accuracy"
        beta : float, default=1.0
            For "f_beta".
        min_rate : float in [0, 1], default=None
            For "max_tpr" (least true negative rate) and "max_tnr" (least true positive rate).

        Returns
        -------
        self
        """
        _check_calibration(strategy, beta, min_rate)
        d = self.pair_distance(pairs)
        y = check_pair_labels(y, d.size, f"{type(self).__name__}.calibrate_threshold")
        self.threshold_ = calibrate_threshold(d, y, strategy, beta=beta, min_rate=min_rate)
        return self

    def _fit_tuples(self, X, y, calibration_params=None, **extra):
        """Fit on pairs, then calibrate the threshold on them (``calibration_params``)."""
        super()._fit_tuples(X, y, **extra)
        if self.tuple_arity_ == 2:
            self.classes_ = np.array([-1, 1])
            self.calibrate_threshold(X, y, **(calibration_params or {}))
        return self


class _OrderClassifier:
    """Shared by triplets and quadruplets: +1 when the first pair is the closer one."""

    _arity = None
    _second = None  # the (i, j) of the pair that should be farther

    def _order_decision(self, tuples) -> np.ndarray:
        name = {3: "triplets", 4: "quadruplets"}[self._arity]
        T = self._formed(tuples, self._arity, f"decision_function ({name})")
        return self._tuple_distances(T, *self._second) - self._tuple_distances(T, 0, 1)


class _TripletsClassifierMixin(_OrderClassifier):
    """Triplets ``(a, b, c)``: +1 when ``d(a, b) < d(a, c)`` (see the module docstring)."""

    _tuple_arities = (3,)
    _arity, _second = 3, (0, 2)

    @_available_when(_fitted_on(3))
    def decision_function(self, triplets) -> np.ndarray:
        """``d(a, c) - d(a, b)`` for each triplet (positive: correctly ordered)."""
        return self._order_decision(triplets)

    @_available_when(_fitted_on(3))
    def predict(self, triplets) -> np.ndarray:
        """+1 when ``d(a, b) < d(a, c)``, else -1."""
        return np.where(self._order_decision(triplets) > 0, 1, -1)

    @_available_when(_fitted_on(3))
    def score(self, triplets, y=None) -> float:
        """The fraction of triplets predicted +1 (correctly ordered)."""
        return float(np.mean(self.predict(triplets) == 1))


class _QuadrupletsClassifierMixin(_OrderClassifier):
    """Quadruplets ``(a, b, c, d)``: +1 when ``d(a, b) < d(c, d)`` (see the module docstring)."""

    _tuple_arities = (4,)
    _arity, _second = 4, (2, 3)

    @_available_when(_fitted_on(4))
    def decision_function(self, quadruplets) -> np.ndarray:
        """``d(c, d) - d(a, b)`` for each quadruplet (positive: correctly ordered)."""
        return self._order_decision(quadruplets)

    @_available_when(_fitted_on(4))
    def predict(self, quadruplets) -> np.ndarray:
        """+1 when ``d(a, b) < d(c, d)``, else -1."""
        return np.where(self._order_decision(quadruplets) > 0, 1, -1)

    @_available_when(_fitted_on(4))
    def score(self, quadruplets, y=None) -> float:
        """The fraction of quadruplets predicted +1 (correctly ordered)."""
        return float(np.mean(self.predict(quadruplets) == 1))
