"""Estimator base classes: every estimator stores its ``__init__`` arguments, validates them and
the data once (scikit-learn style) and runs its method record."""

from __future__ import annotations

import numbers

import numpy as np
import optax
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_is_fitted, validate_data

from ..._runtime._warnings import warn as _warn
from ..._validation import Interval, Options, check_class_labels, check_params, check_scale, labelled
from ...solvers._result import KernelFittedMetric
from ._engine import check_hyper, check_settings, run, split_settings
from ._record import KERNEL_CONSTRAINTS, SETTINGS, Method
from ._tuples import (
    TUPLE_NAMES,
    fit_kwargs,
    form_tuples,
    input_kind,
    points_from_indices,
    prepare_tuples,
    reads_indices,
)

__all__ = ["BaseMetricLearner", "GradientMetricLearner", "KernelMetricLearner", "WARM_START_CALLBACK"]


#: the arguments of :func:`jaxdml.methods.run` itself (not the method's hyper-parameters)
_CORE = ("n_components", "max_iter", "tol", "random_state", "verbose")


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

    The Mahalanobis API (metric-learn's names) works on every learner: ``get_mahalanobis_matrix()``,
    ``get_metric()``, ``pair_distance(pairs)``, ``pair_score(pairs)`` and ``transform``. Pairs are
    formed, shape (n_pairs, 2, n_features), or integer index pairs (n_pairs, 2) when the estimator
    has a ``preprocessor``.

    Preprocessor (metric-learn's): a learner with a ``preprocessor`` parameter (an array of rows, or a
    callable from a 1-D array of identifiers to those rows) reads a 1-D ``X`` in ``fit`` and
    ``transform`` as sample identifiers, ``preprocessor[X]`` (integer indices) or ``preprocessor(X)``
    (whatever the callable maps: indices, file names, keys); 2-D ``X`` is points, used as given
    (:meth:`_points`).

    Weak supervision: a subclass that lists tuple arities in ``_tuple_arities`` (2: pairs, 3:
    triplets, 4: quadruplets) also fits on tuples, ``fit(tuples, y)``, decided by
    :func:`jaxdml.methods.core._tuples.input_kind` (3-D input: formed tuples; 2-D integer input with a
    ``preprocessor``: index tuples; anything else: points with labels, as before). The tuples are
    brought to canonical form (distinct rows + index tuples) and handed to the method record as
    ``pairs=``/``similar=``, ``triplets=`` or ``quadruplets=`` (override :meth:`_run_tuples` to
    do otherwise).
    """

    _record: Method = None
    _supervised: bool = True
    _parameter_constraints: dict = {}
    #: tuple arities this learner fits on (empty: points and labels only)
    _tuple_arities: tuple = ()
    #: metric-learn's ``*_Supervised`` convention: negative integer labels mark unlabelled rows, which
    #: take part in no constraint (:func:`jaxdml._validation.labelled`, as :class:`jaxdml.Constraints`)
    _partial_labels: bool = False

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
    #: constructor parameters that say how the input is read, not how the method runs: never
    #: arguments of :func:`jaxdml.fit`
    _input_params = ("preprocessor",)

    def _fit_kwargs(self) -> dict:
        """Keyword arguments for :func:`jaxdml.fit`: every constructor parameter but the ones that
        say how the input is read (``preprocessor``). Every caller that runs the estimator's record
        itself (the fit, the experiment runner, the batched tuner) takes them from here."""
        kw = self.get_params(deep=False)
        for name in self._input_params:
            kw.pop(name, None)
        return kw

    @staticmethod
    def _split(kw: dict):
        """``(core, settings, hyper)``: the arguments of :func:`jaxdml.methods.run`, the
        :data:`SETTINGS` of :func:`jaxdml.fit`, and the method's hyper-parameters."""
        kw = dict(kw)
        core = {k: kw.pop(k) for k in _CORE if k in kw}
        settings = {k: kw.pop(k) for k in list(kw) if k in SETTINGS}
        return core, settings, kw

    def _validate_params(self) -> None:
        """Check the constructor parameters once, before the data are read.

        The method's hyper-parameters (what reaches the record besides the core arguments and
        the fit settings) and the fit settings are checked by the very checks :func:`jaxdml.fit`
        runs (the record's constraints, :data:`SETTING_CONSTRAINTS`), so an estimator and
        ``jaxdml.fit`` cannot accept different values (a setting's "not set" value, e.g. None,
        means the method's default in both); the other parameters (input handling, the core
        arguments) against ``_parameter_constraints``.
        """
        owner = type(self).__name__
        _, settings, hyper = self._split(self._fit_kwargs())
        own = {k: v for k, v in self.get_params(deep=False).items() if k not in hyper and k not in settings}
        check_params(own, self._parameter_constraints, owner=owner)
        record = self._get_record()
        check_settings(record, split_settings(record, settings), owner=owner)
        check_hyper(record, hyper, owner=owner)

    def _run(self, X, y, **extra):
        """Run the record on validated data with the constructor parameters (+ ``extra``)."""
        core, settings, hyper = self._split({**self._fit_kwargs(), **extra})
        return run(self._get_record(), X, y, settings=settings, hyper=hyper, checked=True, **core)

    def _points(self, X, owner):
        """``X`` itself, or the preprocessor's rows when ``X`` is a 1-D array of sample identifiers
        (metric-learn's preprocessor on learners that fit on points)."""
        preprocessor = getattr(self, "preprocessor", None)
        if reads_indices(X, preprocessor):
            return points_from_indices(X, preprocessor, owner)
        return X

    def fit(self, X, y=None):
        """Learn the metric from ``X`` (n_samples, n_features) and labels ``y`` (or from tuples,
        for learners that take them; see the class docstring). With a ``preprocessor``, a 1-D ``X``
        holds sample indices into it."""
        if self._tuple_arities and input_kind(X, getattr(self, "preprocessor", None)) != "points":
            return self._fit_tuples(X, y)
        owner = type(self).__name__
        self._validate_params()
        X = self._points(X, f"{owner}.fit")
        if self._tuple_arities and self._supervised and y is None:
            raise ValueError(_points_without_labels(owner, self._tuple_arities, X))
        self._clear_tuple_state()
        if self._supervised:
            labels = self._get_record().labels  # False: real-valued regression targets
            if y is not None and labels:
                check_class_labels(np.asarray(y), owner)
            X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2, y_numeric=not labels)
            if self._partial_labels:
                X, y = _labelled_rows(X, y, owner)
        else:
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        check_scale(X, owner)
        self._store(self._run(X, y))
        return self

    def _clear_tuple_state(self) -> None:
        for name in ("tuple_arity_", "threshold_", "classes_", "feature_names_in_"):
            self.__dict__.pop(name, None)

    def _fit_tuples(self, X, y, **extra):
        """Learn the metric from tuples (formed, or index tuples with ``preprocessor``)."""
        owner = type(self).__name__
        self._validate_params()
        data = prepare_tuples(X, y, arities=self._tuple_arities, preprocessor=getattr(self, "preprocessor", None),
                              owner=f"{owner}.fit")
        check_scale(data.X, owner)
        self._clear_tuple_state()
        self.n_features_in_ = data.X.shape[1]
        self._store(self._run_tuples(data, **extra))
        self.tuple_arity_ = data.arity
        return self

    def _run_tuples(self, data, **extra):
        """Run the record on tuples in canonical form (:class:`jaxdml.methods.core._tuples.TupleData`)."""
        return self._run(data.X, None, **fit_kwargs(data), **extra)

    def _store(self, result) -> None:
        self.result_ = result
        if isinstance(result, KernelFittedMetric):  # a kernel method's coefficients (any front end)
            self.X_fit_ = result.X_fit
            self.kernel_params_ = dict(result.kernel_params)
        else:
            for name in ("X_fit_", "kernel_params_"):
                self.__dict__.pop(name, None)
        self.components_ = np.asarray(result.L, dtype=np.float64)
        self.metric_ = np.asarray(result.M, dtype=np.float64)
        self.n_iter_ = int(result.n_iter)
        self.converged_ = bool(result.converged)
        self.loss_curve_ = np.asarray(result.loss_history)
        if result.classes is not None:
            self.classes_ = result.classes
        self._n_features_out = self.components_.shape[0]

    # ------------------------------------------------------------------ using the metric
    def _kernel_fitted(self) -> bool:
        return isinstance(getattr(self, "result_", None), KernelFittedMetric)

    def transform(self, X):
        """Embed ``X`` with the learned map: ``X @ components_.T`` (a kernel method's:
        ``K(X, X_fit_) @ components_.T``). With a ``preprocessor``, a 1-D ``X`` holds sample indices
        into it."""
        check_is_fitted(self, "components_")
        X = self._points(X, f"{type(self).__name__}.transform")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        if self._kernel_fitted():
            return self.result_.transform(X).astype(X.dtype, copy=False)
        return X @ self.components_.T.astype(X.dtype, copy=False)

    def metric(self) -> np.ndarray:
        """The learned metric matrix ``M = L^T L`` (n_features, n_features)."""
        check_is_fitted(self, "metric_")
        return self.metric_

    def transformer(self) -> np.ndarray:
        """The learned linear map ``L`` (n_components, n_features)."""
        check_is_fitted(self, "components_")
        return self.components_

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """The learned Mahalanobis matrix ``M = L^T L`` (metric-learn's name for :meth:`metric`)."""
        return self.metric()

    def _embed(self, rows: np.ndarray) -> np.ndarray:
        """Rows (float64, n_features columns) in the learned space."""
        if self._kernel_fitted():
            return np.asarray(self.result_.transform(rows), dtype=np.float64)
        return rows @ self.components_.T

    def _formed(self, tuples, arity: int, owner: str) -> np.ndarray:
        """Formed tuples (n, arity, n_features) from tuples or index tuples (with ``preprocessor``)."""
        check_is_fitted(self, "components_")
        return form_tuples(tuples, arity=arity, n_features=self.n_features_in_,
                           preprocessor=getattr(self, "preprocessor", None), owner=f"{type(self).__name__}.{owner}")

    def _tuple_distances(self, T: np.ndarray, first: int, second: int) -> np.ndarray:
        diff = self._embed(T[:, first]) - self._embed(T[:, second])
        return np.sqrt(np.sum(diff * diff, axis=1))

    def pair_distance(self, pairs) -> np.ndarray:
        """Learned distances of pairs: (n_pairs, 2, n_features), or index pairs (n_pairs, 2) with the
        estimator's ``preprocessor``."""
        return self._tuple_distances(self._formed(pairs, 2, "pair_distance"), 0, 1)

    def pair_score(self, pairs) -> np.ndarray:
        """Similarity of pairs: the opposite of :meth:`pair_distance` (larger is more similar)."""
        return -self.pair_distance(pairs)

    def score_pairs(self, pairs) -> np.ndarray:
        """Learned distances of pairs: metric-learn's deprecated name for :meth:`pair_distance`
        (a ``FutureWarning`` says so; the values are :meth:`pair_distance`'s, as in metric-learn)."""
        # metric-learn's own wording of this warning (code written against it may look for it)
        _warn("score_pairs will be deprecated in release 0.7.0. Use pair_score to compute similarity scores, or "
              "pair_distances to compute distances.", FutureWarning)
        return self.pair_distance(pairs)

    def get_metric(self):
        """A function ``d(u, v, squared=False)``: the learned distance between two 1-D points.

        Independent of later fits of the estimator (it holds a copy of the learned map).
        """
        check_is_fitted(self, "components_")
        embed = copy_embedding(self)
        d = self.n_features_in_

        def distance(u, v, squared=False):
            try:
                u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError("the metric takes two numeric 1-D points; u or v holds values that are not "
                                 "numbers.") from None
            # a single point given as a (1, d) row is that point (as metric-learn's validate_vector squeezes it)
            u, v = (np.atleast_1d(np.squeeze(a)) if a.ndim > 1 and a.size == d else a for a in (u, v))
            if u.shape != (d,) or v.shape != (d,):
                raise ValueError(f"the metric takes two 1-D points of {d} features; got shapes {u.shape} and "
                                 f"{v.shape}.")
            if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v))):
                raise ValueError("the metric takes finite points; u or v contains NaN or infinity.")
            diff = embed(u[None, :])[0] - embed(v[None, :])[0]
            sq = float(diff @ diff)
            return sq if squared else float(np.sqrt(sq))

        return distance

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._supervised
        if self._tuple_arities:
            # a learner that fits on tuples is a tuple classifier, as metric-learn's are
            # (is_classifier: cross_val_score and GridSearchCV split its tuples by StratifiedKFold)
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        return tags


def _points_without_labels(owner, arities, X) -> str:
    """The error of a tuple learner given neither tuples nor labels (what was meant is unclear)."""
    try:
        shape = np.shape(X)
    except Exception:  # an object numpy cannot size: say so, not why
        shape = "unknown"
    kinds = " or ".join(f"{TUPLE_NAMES[k]} (formed, shape (n, {k}, n_features), or integer indices (n, {k}) with a "
                        "preprocessor)" for k in arities)
    # the first sentence is scikit-learn's wording (its estimator checks look for it)
    return (f"This {owner} estimator requires y to be passed, but the target y is None: points (n_samples, "
            f"n_features) need labels y; to learn from {kinds}, give those. Got X of shape {shape}.")


def _labelled_rows(X, y, owner):
    """The rows of ``X`` with a known label (metric-learn's partial labels: negative integers are
    unlabelled); a clear error when fewer than two remain."""
    known = labelled(y)
    if known.all():
        return X, y
    if known.sum() < 2:
        raise ValueError(f"{owner}: negative labels mark unlabelled samples (metric-learn's convention for the "
                         f"*_Supervised learners), and only {int(known.sum())} of {known.size} samples are labelled; "
                         "constraints need at least two.")
    return X[known], y[known]


def copy_embedding(est):
    """A function embedding rows like ``est`` does now (unaffected by a later refit)."""
    if isinstance(est.result_, KernelFittedMetric):
        import copy

        result = copy.deepcopy(est.result_)
        return lambda rows: np.asarray(result.transform(rows), dtype=np.float64)
    L = est.components_.copy()
    return lambda rows: rows @ L.T


#: the constraints of the optional ``warm_start`` and ``callback`` parameters of a gradient learner
WARM_START_CALLBACK = {"warm_start": ["boolean"], "callback": [None, "callable"]}


class GradientMetricLearner(BaseMetricLearner):
    """Base for the methods trained by the optax driver (a pure loss in ``L`` or ``M``).

    A subclass with a ``warm_start`` parameter starts a refit from its previous ``components_``;
    one with a ``callback`` parameter calls ``callback(transformation, n_iter)`` after every step
    with the current map flattened (scikit-learn's NCA signature).
    """

    def _run(self, X, y, **extra):
        kw = {}
        if getattr(self, "warm_start", False) and hasattr(self, "components_") and not extra:
            prev = self.components_
            if X.shape[1] != prev.shape[1]:
                raise ValueError(f"The new inputs dimensionality ({X.shape[1]}) does not match the input "
                                 f"dimensionality of the previously learned transformation ({prev.shape[1]}).")
            kw = dict(init=prev, n_components=prev.shape[0])
        user = getattr(self, "callback", None)
        if user is not None:
            kw["callback"] = lambda params, n_iter, loss: user(np.ravel(np.asarray(params)), int(n_iter))
        return super()._run(X, y, **kw, **extra)

    def _fit_kwargs(self) -> dict:
        kw = super()._fit_kwargs()
        kw.pop("warm_start", None)
        return kw

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
    theorem and ``X_fit_`` the training data (on the landmark path, ``n_landmarks``: the ``m``
    landmark rows, ``A`` of shape (n_components, m)); ``metric()`` is ``A^T A`` on kernel columns.
    Subclasses expose ``kernel``, ``gamma``, ``degree`` and ``coef0`` parameters.
    """

    _parameter_constraints = {**KERNEL_CONSTRAINTS, "random_state": ["random_state"]}
