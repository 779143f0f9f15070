"""Run a method record: validate once, solve, return a :class:`FittedMetric`.

Both front ends end here: :func:`jaxdml.fit` (after looking the method up by name) and the
estimators (with their own record). Data and hyper-parameters are checked once, in this order:
the fit settings, the hyper-parameters against the record's constraints, the data, the output
dimension; the record's solve step then trusts them.
"""

from __future__ import annotations

import numbers

import jax
import numpy as np

from ..._runtime._device import single_threaded_blas
from ..._runtime._logging import log_history, show_progress
from ..._runtime._warnings import warn
from ..._validation import Interval, check_data, check_n_components, check_params, encode_labels
from ...compilation import ensure_default_cache
from ...config import check_euclidean_blend, get_euclidean_blend, get_matmul_precision
from ...linalg import components_from_metric
from ...solvers._result import FittedMetric
from ._blend import apply_blend, blend_applies
from ._record import SETTING_CONSTRAINTS, SETTINGS, Method

__all__ = ["run", "split_settings", "check_hyper", "check_settings"]

_CORE = dict(
    max_iter=[Interval(numbers.Integral, 1, None), None],
    tol=[Interval(numbers.Real, 0, None), None],
    verbose=[Interval(numbers.Integral, 0, None), "boolean"],
    random_state=["random_state"],
)


def _is_unset(name, value) -> bool:
    unset = SETTINGS[name]
    return value is None if unset is None else (isinstance(value, str) and value == unset)


#: settings that a method which does not take them ignores (the experiment runner pads every fit)
_IGNORABLE = ("pad_to", "projection")


def split_settings(method: Method, settings: dict) -> dict:
    """The settings given a value that the method takes; a value for any other one raises
    (``pad_to`` and ``projection`` are ignored by methods that do not take them)."""
    out = {}
    for key, value in settings.items():
        if _is_unset(key, value) or (key in _IGNORABLE and key not in method.settings):
            continue
        if key not in method.settings:
            raise ValueError(f"method {method.name!r} does not take {key}.")
        out[key] = value
    return out


def check_settings(method: Method, settings: dict, *, owner: str) -> None:
    """Check the set values of fit settings (those :func:`split_settings` keeps) against
    :data:`SETTING_CONSTRAINTS`, or the record's own constraint for a setting it lists."""
    own = method.constraints or {}
    given = {k: v for k, v in settings.items() if not _is_unset(k, v)}
    check_params(given, {k: own.get(k, SETTING_CONSTRAINTS[k]) for k in given}, owner=owner)


def check_hyper(method: Method, hyper: dict, *, owner: str | None = None) -> None:
    """Check a method's hyper-parameters against its record's constraints: the one check that
    :func:`jaxdml.fit` and the estimators share (``owner`` names the caller in messages, default
    ``method 'name'``). An unknown name raises."""
    if method.constraints is None:  # a user's callable loss: it takes what it takes
        return
    owner = owner or f"method {method.name!r}"
    unknown = sorted(set(hyper) - set(method.constraints))
    if unknown:
        raise ValueError(
            f"Unknown hyper-parameter(s) {unknown} for {owner}; it accepts "
            f"{sorted(set(method.constraints) - {'block_elements'}) or 'none'}."
        )
    check_params(hyper, method.constraints, owner=owner)


def _data(method: Method, X, y):
    """Validated ``(X, classes, codes)``; labels are optional for unsupervised methods."""
    if method.supervised and y is None:
        what = "class labels" if method.labels else "targets"
        raise ValueError(f"jaxdml.fit: method {method.name!r} learns from {what}; y is None.")
    if method.supervised and not method.labels:  # regression: continuous targets, no classes
        X, y = check_data(X, y, owner="jaxdml.fit", min_classes=1, class_labels=False)
        return X, None, regression_targets(y, method.name)
    if method.supervised or y is not None:
        X, y = check_data(X, y, owner="jaxdml.fit", min_classes=method.min_classes if method.supervised else 1,
                          class_labels=method.labels)
        classes, codes = encode_labels(y)
        return X, classes, codes
    X, _ = check_data(X, None, owner="jaxdml.fit")
    return X, None, None


def regression_targets(y, name: str) -> np.ndarray:
    """Real-valued targets of a regression method as float64 (a clear error otherwise)."""
    try:
        t = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"method {name!r} regresses real-valued targets; y holds values that are not "
                         "numbers.") from None
    if not np.all(np.isfinite(t)):
        raise ValueError(f"method {name!r}: y contains NaN or infinity.")
    return t


def resolve_n_components(method: Method, n_components, d: int, n_classes: int) -> int:
    if method.full_rank_only and n_components not in (None, d):
        raise ValueError(f"method {method.name!r} learns a full-dimensional metric; n_components must be "
                         f"None or {d}.")
    upper = method.max_components(d, n_classes) if method.max_components else None
    owner = "jaxdml.fit" if method.loss is not None else f"method {method.name!r}"
    return check_n_components(n_components, d, owner=owner, upper=upper)


def to_result(out, name: str, classes) -> FittedMetric:
    """A solve step's output (a dict with ``L`` or ``metric``, or a FittedMetric) as a FittedMetric."""
    if isinstance(out, FittedMetric):  # e.g. a KernelFittedMetric built by the solve step itself
        out.method, out.classes = name, classes
        return out
    metric = out.get("metric")
    L = out["L"] if out.get("L") is not None else components_from_metric(metric)
    return FittedMetric(
        L=np.asarray(L, dtype=np.float64), method=name, n_iter=int(out.get("n_iter", 0)),
        converged=bool(out.get("converged", True)),
        loss_history=np.asarray(out.get("loss_history", np.zeros(0)), dtype=np.float64),
        loss=out.get("loss"), classes=classes, info=out.get("info", {}),
        metric_=None if metric is None else np.asarray(metric, dtype=np.float64),
    )


def run(method: Method, X, y, *, n_components=None, max_iter=None, tol=None, random_state=None, verbose=0,
        settings=None, hyper=None, checked=False, euclidean_blend=None) -> FittedMetric:
    """Validate once and run ``method`` on ``(X, y)`` (with one BLAS thread).

    ``settings``: the :data:`SETTINGS` of :func:`jaxdml.fit` (unset ones are ignored);
    ``hyper``: the method's hyper-parameters (the record's defaults fill the others).
    ``checked=True``: the caller (an estimator) has already validated the parameters and the
    data (float64, finite, 2-D, labels of matching length), so they are not checked again.
    """
    ensure_default_cache()  # estimators and jaxdml.fit alike: a later process loads, not compiles
    blend = get_euclidean_blend() if euclidean_blend is None else euclidean_blend
    check_euclidean_blend(blend)
    given = split_settings(method, settings or {})
    hyper = dict(hyper or {})
    if not checked:
        owner = "jaxdml.fit" if method.loss is not None else f"method {method.name!r}"
        check_params(dict(max_iter=max_iter, tol=tol, verbose=verbose, random_state=random_state), _CORE,
                     owner=owner)
        check_settings(method, given, owner=owner)
        check_hyper(method, hyper)
        X, classes, codes = _data(method, X, y)
    elif method.supervised and not method.labels:
        classes, codes = None, regression_targets(y, method.name)
    else:
        classes, codes = encode_labels(y) if y is not None else (None, None)
        if method.supervised and len(classes) < method.min_classes:
            raise ValueError(f"fit: y has {len(classes)} class(es); supervised metric learning needs at least "
                             f"{method.min_classes} classes (the labels only contain {classes[:5].tolist()}).")
    if isinstance(random_state, np.random.Generator):  # internals take scikit-learn's forms
        random_state = np.random.RandomState(int(random_state.integers(2**32)))
    n_classes = 0 if classes is None else len(classes)
    init = (settings or {}).get("init")
    if n_components is None and method.learns == "L" and not isinstance(init, str) and init is not None:
        shape = np.shape(init)  # an initial map fixes the output dimension (as scikit-learn's NCA)
        if len(shape) == 2 and 1 <= shape[0] <= min(shape[1], X.shape[1]):
            n_components = int(shape[0])
    n_components = resolve_n_components(method, n_components, X.shape[1], n_classes)
    blends = blend_applies(blend, learns=method.learns, labels=method.labels, codes=codes, n_classes=n_classes,
                           shape=(n_components, X.shape[1]))
    if method.measured_loss is not None and X.shape[0] >= method.measured_loss.rows and not blends:
        warn(f"{method.name}: on {X.shape[0]} training rows this method's default may learn a metric worse than "
             f"the Euclidean one for k-NN. {method.measured_loss.text} Compare it with loss='euclidean' on held-out "
             "rows.", UserWarning)
    show_progress(verbose)
    with single_threaded_blas(), jax.default_matmul_precision(get_matmul_precision()):
        out = method.solve(X, codes, n_classes, n_components=n_components, random_state=random_state,
                           max_iter=max_iter, tol=tol, verbose=verbose, **{**method.defaults, **given, **hyper})
        result = to_result(out, method.name, classes)
    if blends and np.shape(result.L) == (X.shape[1], X.shape[1]):
        apply_blend(result, blend, X, codes, random_state)
    if verbose and method.loss is None:  # solvers outside the optax driver report after the solve
        log_history(method.name, result.loss_history, verbose, n_iter=result.n_iter, converged=result.converged)
    return result
