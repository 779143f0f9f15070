"""Estimator base classes: every estimator stores its ``__init__`` arguments, validates them and
the data once (scikit-learn style) and runs its method record."""

from __future__ import annotations

import numbers

import numpy as np
import optax
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import Interval, Options, check_class_labels, check_params, check_scale
from ._engine import run
from ._record import KERNEL_CONSTRAINTS, SETTINGS, Method

__all__ = ["BaseMetricLearner", "GradientMetricLearner", "KernelMetricLearner"]


class _ByValue:
    """A cloudpickled object inside an ordinary pickle (restored by ``__setstate__``)."""

    def __init__(self, payload: bytes):
        self.payload = payload


class BaseMetricLearner(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """A Mahalanobis metric learner with scikit-learn's transformer API.

    Subclasses set ``_record`` (their :class:`Method` record; ``_method`` is its name), list their
    hyper-parameters in ``_parameter_constraints`` and, when some ``__init__`` arguments are not
    plain keyword arguments of :func:`jaxdml.fit`, override :meth:`_fit_kwargs`.

    After ``fit`` the learned map is ``components_`` (L, shape (n_components, n_features)) and the
    metric ``metric_`` (M = L^T L); ``transform(X) = X @ components_.T``.
    """

    _record: Method = None
    _supervised: bool = True
    _parameter_constraints: dict = {}

    @property
    def _method(self) -> str:
        """The name of the method record (what :func:`jaxdml.fit` takes as ``loss``)."""
        return self._get_record().name

    def _get_record(self) -> Method:
        """The method record this estimator runs (a subclass may choose by its parameters)."""
        return self._record

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        state = super().__getstate__()
        opt = state.get("optimizer")
        if opt is not None and not isinstance(opt, str):
            # optax transformations are closures: pickle them by value (code included)
            import cloudpickle

            state = {**state, "optimizer": _ByValue(cloudpickle.dumps(opt))}
        return state

    def __setstate__(self, state):
        if isinstance(state.get("optimizer"), _ByValue):
            import pickle

            state = {**state, "optimizer": pickle.loads(state["optimizer"].payload)}
        super().__setstate__(state)

    # ------------------------------------------------------------------ fitting
    def _fit_kwargs(self) -> dict:
        """Keyword arguments for :func:`jaxdml.fit` (default: every constructor parameter)."""
        return self.get_params(deep=False)

    def _run(self, X, y, **extra):
        """Run the record on validated data with the constructor parameters (+ ``extra``)."""
        kw = {**self._fit_kwargs(), **extra}
        core = {k: kw.pop(k) for k in ("n_components", "max_iter", "tol", "random_state", "verbose") if k in kw}
        settings = {k: kw.pop(k) for k in list(kw) if k in SETTINGS}
        return run(self._get_record(), X, y, settings=settings, hyper=kw, checked=True, **core)

    def fit(self, X, y=None):
        """Learn the metric from ``X`` (n_samples, n_features) and labels ``y``."""
        owner = type(self).__name__
        check_params(self.get_params(deep=False), self._parameter_constraints, owner=owner)
        if self._supervised:
            labels = self._get_record().labels  # False: real-valued regression targets
            if y is not None and labels:
                check_class_labels(np.asarray(y), owner)
            X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2, y_numeric=not labels)
        else:
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        check_scale(X, owner)
        self._store(self._run(X, y))
        return self

    def _store(self, result) -> None:
        self.result_ = result
        self.components_ = np.asarray(result.L, dtype=np.float64)
        self.metric_ = np.asarray(result.M, dtype=np.float64)
        self.n_iter_ = int(result.n_iter)
        self.converged_ = bool(result.converged)
        self.loss_curve_ = np.asarray(result.loss_history)
        if result.classes is not None:
            self.classes_ = result.classes
        self._n_features_out = self.components_.shape[0]

    # ------------------------------------------------------------------ using the metric
    def transform(self, X):
        """Embed ``X`` with the learned map: ``X @ components_.T``."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return X @ self.components_.T.astype(X.dtype, copy=False)

    def metric(self) -> np.ndarray:
        """The learned metric matrix ``M = L^T L`` (n_features, n_features)."""
        check_is_fitted(self, "metric_")
        return self.metric_

    def transformer(self) -> np.ndarray:
        """The learned linear map ``L`` (n_components, n_features)."""
        check_is_fitted(self, "components_")
        return self.components_

    get_mahalanobis_matrix = metric

    def pair_distance(self, pairs) -> np.ndarray:
        """Distances for an array of pairs of shape (n_pairs, 2, n_features)."""
        check_is_fitted(self, "components_")
        pairs = np.asarray(pairs, dtype=np.float64)
        if pairs.ndim != 3 or pairs.shape[1] != 2 or pairs.shape[2] != self.n_features_in_:
            raise ValueError(
                f"pairs must have shape (n_pairs, 2, {self.n_features_in_}); got {pairs.shape}."
            )
        diff = (pairs[:, 0] - pairs[:, 1]) @ self.components_.T
        return np.sqrt(np.sum(diff * diff, axis=1))

    def get_metric(self):
        """A function ``d(u, v)`` computing the learned distance between two 1-D points."""
        check_is_fitted(self, "components_")
        L = self.components_.copy()

        def distance(u, v):
            diff = L @ (np.asarray(u, dtype=np.float64) - np.asarray(v, dtype=np.float64))
            return float(np.sqrt(diff @ diff))

        return distance

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._supervised
        return tags


class GradientMetricLearner(BaseMetricLearner):
    """Base for the methods trained by the optax driver (a pure loss in ``L`` or ``M``)."""

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None), None],
        "max_iter": [Interval(numbers.Integral, 1, None), None],
        "tol": [Interval(numbers.Real, 0, None)],
        "init": [Options({"auto", "identity", "pca", "lda", "random"}), "array-like"],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "optimizer": [str, None, optax.GradientTransformation],
        "batch_size": [Interval(numbers.Integral, 1, None), None, Options({"auto"})],
        "n_candidates": [Interval(numbers.Integral, 1, None), None, Options({"auto"})],
        "devices": [None, Options({"all"}), list, tuple],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
    }


class KernelMetricLearner(BaseMetricLearner):
    """Base for kernel methods: ``transform(X) = K(X, X_fit_) @ components_.T``.

    ``components_`` is the coefficient matrix ``A`` (n_components, n_train) of the representer
    theorem and ``X_fit_`` the training data; ``metric()`` is ``A^T A`` on kernel columns.
    Subclasses expose ``kernel``, ``gamma``, ``degree`` and ``coef0`` parameters.
    """

    _parameter_constraints = dict(KERNEL_CONSTRAINTS)

    def _store(self, result) -> None:
        super()._store(result)
        self.X_fit_ = result.X_fit
        self.kernel_params_ = dict(result.kernel_params)

    def transform(self, X):
        """Embed ``X`` through the kernel: ``K(X, X_fit_) @ components_.T``."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return self.result_.transform(X).astype(X.dtype, copy=False)
