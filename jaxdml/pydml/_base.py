"""What every learner of :mod:`jaxdml.pydml` shares: pyDML's ``DML_Algorithm`` API over a jaxdml
estimator, the once-per-process compatibility warning and the translations used by several learners
(step-size settings, initial maps, kernels, metadata).

A learner stores its constructor arguments under pyDML's names (so ``get_params``/``clone`` work),
builds the jaxdml estimator at ``fit`` from them (:meth:`DMLAlgorithm._jaxdml_params`) and keeps it
as ``estimator_``. A pyDML parameter with no counterpart is listed in ``_ignored`` with what jaxdml
does instead; setting it to a value other than pyDML's default warns once
(:class:`PyDMLCompatibilityWarning`).
"""

from __future__ import annotations

import inspect
import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted

from .._validation import Interval, check_params
from .._runtime._warnings import warn

__all__ = ["PyDMLCompatibilityWarning", "DMLAlgorithm", "KernelDMLAlgorithm", "note", "changed", "store"]

_WARNED: set = set()


class PyDMLCompatibilityWarning(UserWarning):
    """A pyDML option that jaxdml runs with its nearest setting (warned once per process and option)."""


def note(owner: str, key: str, message: str) -> None:
    """Warn ``jaxdml.pydml.<owner>: <message>`` once per process for ``(owner, key)``."""
    if (owner, key) in _WARNED:
        return
    _WARNED.add((owner, key))
    warn(f"jaxdml.pydml.{owner}: {message}", PyDMLCompatibilityWarning)


def store(obj, params: dict) -> None:
    """Set every constructor argument of ``params`` (``locals()`` of an ``__init__``) on ``obj``."""
    for k, v in params.items():
        if k not in ("self", "__class__"):
            setattr(obj, k, v)


def changed(obj, name: str) -> bool:
    """Whether ``obj.name`` differs from the default of its constructor's signature."""
    default = inspect.signature(type(obj).__init__).parameters[name].default
    value = getattr(obj, name)
    if value is default:
        return False
    try:
        return bool(value != default)
    except (TypeError, ValueError):  # arrays
        return True


def rate_settings(obj, owner: str) -> dict:
    """jaxdml's optimiser settings for pyDML's ``learning_rate``/``eta0``.

    ``"adaptive"`` (pyDML's step that grows after a successful step and shrinks after a failed one)
    is jaxdml's default optimiser for the method, which chooses its own steps (L-BFGS with a line
    search for most methods); ``eta0`` is then unused. ``"constant"`` is full-batch gradient descent
    (``optimizer="sgd"``) with step ``eta0`` on jaxdml's (mean) objective.
    """
    lr = obj.learning_rate
    if lr == "constant":
        return dict(optimizer="sgd", learning_rate=float(obj.eta0))
    if lr != "adaptive":
        raise ValueError(f"{owner}: learning_rate must be 'adaptive' or 'constant'; got {lr!r}.")
    if changed(obj, "eta0"):
        note(owner, "eta0", f"eta0={obj.eta0!r} is not used with learning_rate='adaptive': jaxdml's default "
                            "optimiser chooses its own steps (learning_rate='constant' uses eta0).")
    return {}


def passed_when_set(obj, **names) -> dict:
    """``{jaxdml name: value}`` of the pyDML parameters ``names`` (pyDML -> jaxdml) set to a value other
    than pyDML's default (pyDML's defaults are sized for its own solvers; jaxdml's apply otherwise)."""
    return {j: getattr(obj, p) for p, j in names.items() if changed(obj, p)}


def _scale(X, n_rows):
    rng = np.ptp(X, axis=0)
    return np.diag(1.0 / np.where(rng > 0, rng, 1.0))[:n_rows]


def initial_map(value, X, n_components, *, metric: bool, owner: str):
    """jaxdml's ``init`` (a linear map ``L``) for pyDML's ``initial_transform``/``initial_metric``:
    None -> ``"auto"``, ``"euclidean"`` -> ``"identity"``, ``"scale"`` -> the diagonal map dividing each
    feature by its range; a matrix is ``L`` itself, or with ``metric=True`` a PSD ``M`` (``L^T L = M``)."""
    if value is None:
        return "auto"
    if isinstance(value, str):
        if value == "euclidean":
            return "identity"
        if value == "scale":
            return _scale(X, n_components or X.shape[1])
        raise ValueError(f"{owner}: the initial map must be None, 'euclidean', 'scale' or a matrix; got {value!r}.")
    A = np.asarray(value, dtype=np.float64)
    if metric:
        from ..linalg import components_from_metric

        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"{owner}: initial_metric must be a square PSD matrix; got shape {A.shape}.")
        return components_from_metric(A)
    return A


#: kernels jaxdml's kernel learners evaluate themselves
_KERNELS = ("linear", "poly", "rbf", "laplacian")


class SklearnKernel:
    """A kernel of scikit-learn's ``pairwise_kernels`` (``sigmoid``, ``cosine``, ``chi2``, or a callable on
    two rows, as pyDML takes them) as jaxdml's callable kernel on two arrays."""

    def __init__(self, kernel, **params):
        self.kernel, self.params = kernel, params

    def __call__(self, A, B):
        from sklearn.metrics.pairwise import pairwise_kernels

        return pairwise_kernels(np.asarray(A), np.asarray(B), metric=self.kernel, filter_params=True, **self.params)


def kernel_settings(obj, owner: str) -> dict:
    """jaxdml's kernel arguments for pyDML's ``kernel``, ``gamma``, ``degree``, ``coef0``, ``kernel_params``."""
    kernel, params = obj.kernel, dict(obj.kernel_params or {})
    if kernel == "precomputed":
        raise ValueError(f"{owner}: kernel='precomputed' is not supported; pass the data and a kernel "
                         f"({', '.join(_KERNELS)}, another scikit-learn kernel name or a callable).")
    if isinstance(kernel, str) and kernel in _KERNELS:
        if params:
            note(owner, "kernel_params", "kernel_params apply to callable kernels only (as in pyDML); ignored.")
        return dict(kernel=kernel, gamma=obj.gamma, degree=obj.degree, coef0=obj.coef0)
    if not (callable(kernel) or isinstance(kernel, str)):
        raise ValueError(f"{owner}: kernel must be a kernel name or a callable; got {kernel!r}.")
    extra = {} if callable(kernel) else dict(gamma=obj.gamma, degree=obj.degree, coef0=obj.coef0)
    return dict(kernel=SklearnKernel(kernel, **extra, **params))


def acum_eig(eigenvalues, n_kept: int) -> float:
    """pyDML's ``acum_eig``: the sum of the ``n_kept`` largest eigenvalues over the sum of all of them."""
    w = np.sort(np.asarray(eigenvalues, dtype=np.float64).ravel())[::-1]
    total = float(np.sum(w))
    return float(np.sum(w[:n_kept]) / total) if total != 0 else float("nan")


def iteration_metadata(est, initial: str, final: str, iters: str = "num_iters", scale: float = 1.0) -> dict:
    """``{iters: n_iter, initial: scale * first loss, final: scale * final loss}`` of a fitted jaxdml
    estimator (jaxdml's objective, which the method minimises)."""
    res = est.result_
    hist = np.asarray(res.loss_history, dtype=np.float64)
    last = float(res.loss) if res.loss is not None else float("nan")
    first = float(hist[0]) if hist.size else last
    return {iters: int(res.n_iter), initial: scale * first, final: scale * last}


_INT1 = [Interval(numbers.Integral, 1, None)]
_INT1_NONE = [Interval(numbers.Integral, 1, None), None]
_POS = [Interval(numbers.Real, 0, None, closed="neither")]
_NONNEG = [Interval(numbers.Real, 0, None)]
#: pyDML's numeric arguments, by name, checked before they are translated (the rule of the jaxdml
#: parameter each one becomes; a learner overrides a name that means something else there in ``_checks``)
PYDML_CONSTRAINTS = {
    "num_dims": _INT1_NONE, "n_dims": _INT1_NONE, "n_components": _INT1_NONE,
    "eta0": _POS, "max_iter": _INT1, "max_it": _INT1, "maxit": _INT1, "max_proj_iter": _INT1,
    "tol": _NONNEG, "prec": _NONNEG, "err": _NONNEG, "itproj_err": _NONNEG, "eta_thres": _NONNEG,
    "auto_thresh": _NONNEG, "reg_tol": _NONNEG, "eps": _NONNEG,
    "learn_inc": [Interval(numbers.Real, 1, None)], "learn_dec": [Interval(numbers.Real, 0, 1, closed="right")],
    "k": _INT1, "v": _INT1, "n_friends": _INT1, "n_enemies": _INT1, "n_neighbors": _INT1,
    "soft_comp_interval": _INT1, "constraint_factor": _INT1, "num_constraints": _INT1_NONE,
    "mu": [Interval(numbers.Real, 0, 1, closed="neither")],  # LMNN's push weight
    "alpha": _NONNEG, "stepsize": _POS, "reg": _NONNEG, "b": [Interval(numbers.Real, None, None)],
    "gamma": [*_POS, None], "degree": _INT1, "coef0": [Interval(numbers.Real, None, None)],
    "geodesic_step": [Interval(numbers.Real, 0, 1)], "low_perc": [Interval(numbers.Real, 0, 100)],
    "up_perc": [Interval(numbers.Real, 0, 100)], "upper_bound": [*_POS, None], "lower_bound": [*_POS, None],
    "thres": [Interval(numbers.Real, 0, 1, closed="right"), None],
    "chain_size": [Interval(numbers.Integral, 2, None)], "neighborhood_size": [Interval(numbers.Integral, 2, None)],
    "supervised": ["boolean"], "verbose": ["boolean", Interval(numbers.Integral, 0, None)],
    "centroids_num": [Interval(numbers.Integral, 1, None), list, tuple, np.ndarray],
}


def check_pydml_params(obj) -> None:
    """Check the constructor arguments of a pyDML learner against :data:`PYDML_CONSTRAINTS` (and the
    learner's ``_checks``): the error names the argument under pyDML's name, what it got and what is
    accepted (e.g. ``num_constraints=0`` or ``max_iter=-5`` before they are turned into pairs or sweeps)."""
    params = {name: getattr(obj, name) for name in inspect.signature(type(obj).__init__).parameters
              if name not in ("self", "kwargs", "kmeans_kwargs", "knn_args") and hasattr(obj, name)}
    owner = f"jaxdml.pydml.{type(obj).__name__}"
    check_params(params, {**PYDML_CONSTRAINTS, **getattr(obj, "_checks", {})}, owner=owner)
    per_class = params.get("centroids_num")
    if per_class is not None and not isinstance(per_class, numbers.Integral):
        if not all(isinstance(c, numbers.Integral) and not isinstance(c, bool) and c >= 1 for c in np.ravel(per_class)):
            raise ValueError(f"{owner}: centroids_num must be a positive int or a list of them (one per class); got "
                             f"{per_class!r}.")


class DMLAlgorithm(BaseEstimator, TransformerMixin, auto_wrap_output_keys=None):
    """pyDML's ``DML_Algorithm``: ``fit``, ``transform(X=None)`` (None: the training data), ``metric()``
    (``M = L^T L``), ``transformer()`` (``L``) and ``metadata()``, over the jaxdml estimator
    ``estimator_`` built at ``fit``."""

    #: the jaxdml estimator class
    _target = None

    def __init_subclass__(cls, **kwargs):
        # transform(X=None) is pyDML's signature: no scikit-learn set_output wrapping (it requires X)
        super().__init_subclass__(auto_wrap_output_keys=None, **kwargs)
    #: pyDML parameter -> what jaxdml does instead (warned once when set to a non-default value)
    _ignored: dict = {}

    def _jaxdml_params(self, X, y) -> dict:
        """Keyword arguments of ``_target`` for this learner's pyDML parameters."""
        return {}

    def _make(self, X, y):
        owner = type(self).__name__
        check_pydml_params(self)
        params = inspect.signature(type(self).__init__).parameters
        for name, why in self._ignored.items():
            if name in params and changed(self, name):
                note(owner, name, f"{name}={getattr(self, name)!r} has no counterpart in jaxdml: {why}")
        return self._target(**self._jaxdml_params(X, y))

    def fit(self, X, y=None):
        """Fit the model from the data in ``X`` and the labels in ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        X = check_array(X, dtype=np.float64)
        est = self._make(X, y)
        est.fit(X) if y is None else est.fit(X, y)
        self.estimator_, self.X_, self.y_ = est, X, None if y is None else np.asarray(y)
        return self

    def transform(self, X=None):
        """Apply the learned map; ``X=None`` transforms the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), optional

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self, "estimator_")
        return np.asarray(self.estimator_.transform(self.X_ if X is None else X), dtype=np.float64)

    def transformer(self):
        """The learned linear map ``L`` (kernel learners: the coefficients ``A`` on the training samples).

        Returns
        -------
        ndarray of shape (n_components, n_features or n_train)
        """
        check_is_fitted(self, "estimator_")
        return np.asarray(self.estimator_.components_, dtype=np.float64)

    def metric(self):
        """The learned metric ``M = L^T L``.

        Returns
        -------
        ndarray
        """
        L = self.transformer()
        return L.T @ L

    def metadata(self):
        """The fit's diagnostics under pyDML's names (see the class docstring).

        Returns
        -------
        dict
        """
        check_is_fitted(self, "estimator_")
        return self._metadata(self.estimator_)

    def _metadata(self, est) -> dict:
        return {}

    @property
    def result_(self):
        """The jaxdml fit result of ``estimator_`` (loss, iterations, diagnostics)."""
        return self.estimator_.result_


class KernelDMLAlgorithm(DMLAlgorithm):
    """pyDML's ``KernelDML_Algorithm``: ``transform`` goes through the kernel with the training data;
    ``transformer()`` is the (n_components, n_train) coefficient matrix."""


def check_int(value, name: str, owner: str, low: int = 1):
    """``value`` as an int >= ``low`` (None passes), with a clear error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{owner}: {name} must be an int >= {low} or None; got {value!r}.")
    return int(value)
