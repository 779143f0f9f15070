"""The solve step shared by every gradient-trained method: a pure loss driven by optax.

``solve_loss(spec, name, X, codes, n_classes, ...)`` builds the problem pytree (padded to a
bucket size, with the target neighbours or centroids the loss needs), the initial parameters and
the optimizer from the method's defaults and large-data policy, runs :func:`minimize` and turns
its state into a :class:`FittedMetric`. :func:`gradient_method` makes the record of such a method.
"""

from __future__ import annotations

import functools
import numbers
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._padding import bucket_size
from .._runtime import x64_call
from .._validation import Interval, Options, check_params, seed_from
from ..eigen import pca_components
from ..linalg import components_from_metric
from ..problems import make_problem
from ..projections import projection_psd
from ..solvers._driver import make_optimizer, minimize, uses_linesearch
from ..solvers._init import initial_components
from ..solvers._lmnn_active import ACTIVE_SET_DEFAULTS, minimize_active_set, stratified_subsample, use_active_set
from ..solvers._result import FittedMetric
from ._record import GRADIENT_SETTINGS, LossSpec, Method
from .._warnings import warn as _warn
from .._warnings import warn_not_converged

__all__ = ["gradient_method", "solve_loss", "finish", "combined_loss", "GRADIENT_CONSTRAINTS", "BLOCK_ELEMENTS"]

#: hyper-parameters consumed by make_problem rather than by the loss
PROBLEM_KEYS = ("n_impostors", "n_centroids")

#: what every gradient loss accepts besides its own hyper-parameters (passed to make_problem)
GRADIENT_CONSTRAINTS = {"n_impostors": [Interval(numbers.Integral, 1, None), None]}
#: the row-block size of the losses that evaluate their pair terms blockwise
BLOCK_ELEMENTS = {"block_elements": [Interval(numbers.Integral, 1, None), None]}
_SETTING_CONSTRAINTS = dict(
    tol=[Interval(numbers.Real, 0, None)],
    batch_size=[Interval(numbers.Integral, 1, None), None, Options({"auto"})],
    n_neighbors=[Interval(numbers.Integral, 1, None)],
    learning_rate=[Interval(numbers.Real, 0, None, closed="neither"), None],
    projection=[Options({"auto"}), "callable", None],
    pad_to=[Options({"auto"}), Interval(numbers.Integral, 1, None), None],
)


def gradient_method(name: str, spec: LossSpec, *, defaults=None, constraints=None, estimator=None, probe=False,
                    weights=None) -> Method:
    """The record of a method trained by minimising ``spec.fn`` with the optax driver.

    ``constraints`` lists the loss's own hyper-parameters (e.g. ``mu``, ``margin``) and
    ``defaults`` their default values (handed to the loss on every fit; the loss's own keyword
    defaults only serve direct calls). ``probe``: check first that ``spec.fn`` returns a
    scalar (a user's callable); ``weights``: the weights of a combined loss.
    """
    return Method(
        name=name, learns=spec.param, solve=functools.partial(solve_loss, spec, name, probe=probe, weights=weights),
        defaults=dict(defaults or {}),
        constraints={**GRADIENT_CONSTRAINTS, **(constraints or {})}, settings=GRADIENT_SETTINGS,
        loss=spec, estimator=estimator,
    )


@functools.lru_cache(maxsize=None)
def combined_loss(fns: tuple, accepted: tuple, name: str):
    """``sum_i weights[i] * fns[i](params, problem, **hyper_i)``; each loss gets the hyper-parameters
    its record accepts (``accepted[i]``). Cached, so that a combination reuses its compiled code."""

    def combined(params, problem, *, weights, **hyper):
        total = 0.0
        for i, (f, acc) in enumerate(zip(fns, accepted)):
            total = total + weights[i] * f(params, problem, **{k: v for k, v in hyper.items() if k in acc})
        return total

    combined.__name__ = name
    return combined


def finish(res, name: str, max_iter: int, tol: float):
    """``(n_iter, loss history)`` of a driver result; warns when it failed or did not converge."""
    n_iter = int(res.n_iter)  # blocks until the solve is done
    hist = np.asarray(res.loss_history, dtype=np.float64)[: n_iter + 1]
    hist = hist[np.isfinite(hist)]
    if bool(res.failed):
        if n_iter == 0 or hist.size == 0:
            raise FloatingPointError(
                f"loss {name!r} is not finite at the initial point; check the data scale and "
                "hyper-parameters."
            )
        _warn(
            f"loss {name!r} became non-finite after {n_iter} iterations; returning the best finite "
            "iterate.", RuntimeWarning
        )
    elif not bool(res.converged):
        warn_not_converged(name, max_iter, tol)
    return n_iter, hist


def _large_data(spec: LossSpec, n: int, optimizer, max_iter) -> LossSpec:
    """The method's large-data defaults replace what the user left unset (above ``large_n``)."""
    if spec.large_n is None or n <= spec.large_n or not spec.large:
        return spec
    big = spec.large
    if optimizer is None:
        spec = spec._replace(optimizer=big.get("optimizer", spec.optimizer),
                             learning_rate=big.get("learning_rate", spec.learning_rate))
    if max_iter is None and "max_iter" in big:
        spec = spec._replace(max_iter=big["max_iter"])
    if "batch_size" in big:
        spec = spec._replace(batch_size=big["batch_size"])
    return spec


def _optimizer(optimizer, spec: LossSpec):
    if optimizer is None:
        return make_optimizer(spec.optimizer)
    if isinstance(optimizer, str):
        return make_optimizer(optimizer)
    if not isinstance(optimizer, optax.GradientTransformation):
        raise ValueError(f"optimizer must be an optax.GradientTransformation or a name; got {optimizer!r}.")
    return optimizer


def _batching(spec, n, bucket, n_dev, batch_size, n_candidates, optimizer, params0):
    """Resolve ``batch_size`` and ``n_candidates`` ("auto": the method's rule)."""
    if batch_size == "auto":
        batch_size = None if uses_linesearch(optimizer, params0) else spec.batch_size
    if batch_size is not None and batch_size >= bucket:
        batch_size = None  # one batch holds every sample: plain full-batch steps
    if batch_size is not None and batch_size % n_dev:
        batch_size += n_dev - batch_size % n_dev
    if n_candidates == "auto":
        n_candidates = (spec.n_candidates if batch_size is not None and spec.candidates_above is not None
                        and n > spec.candidates_above else None)
    elif n_candidates is not None:
        if isinstance(n_candidates, bool) or not isinstance(n_candidates, numbers.Integral) or n_candidates < 1:
            raise ValueError(f"n_candidates must be a positive int, None or 'auto'; got {n_candidates!r}.")
        if batch_size is None:
            raise ValueError("n_candidates requires minibatch training (set batch_size and a first-order optimizer).")
    return batch_size, n_candidates


def _devices(devices):
    if devices is not None and not (isinstance(devices, str) and devices == "all"):
        if isinstance(devices, str):
            raise ValueError(f"devices must be None, 'all' or a sequence of jax devices (e.g. jax.devices('gpu')); "
                             f"got the string {devices!r}.")
        try:
            devices = list(devices)
        except TypeError:
            raise ValueError(f"devices must be None, 'all' or a sequence of jax devices; got {devices!r}.") from None
        if not devices:
            raise ValueError("devices is an empty sequence; pass None (the default device), 'all' or jax devices.")
        bad = [d for d in devices if not isinstance(d, jax.Device)]
        if bad:
            raise ValueError(f"devices must hold jax devices (from jax.devices()); got {bad[0]!r}.")
    n_dev = len(jax.devices()) if devices == "all" else (1 if devices is None else len(devices))
    return devices, n_dev


def _check_callable(fn, problem, params0, hyper):
    """A user's callable loss must evaluate to a scalar on ``(L, problem)``."""
    try:
        out = jax.eval_shape(lambda p: fn(p, problem, **hyper), params0)
    except Exception as exc:
        raise ValueError(f"The callable loss failed when called as f(L, problem): {exc}") from exc
    if not hasattr(out, "shape") or out.shape != ():
        raise ValueError(
            f"The callable loss must return a scalar; it returned shape {getattr(out, 'shape', type(out))}."
        )


def _setup(spec, X, codes, n_classes, n_components, *, init, n_neighbors, pad_to, random_state, devices,
           hyper):
    """Host-side preparation: PCA for rank-limited metric losses, the padded problem, ``params0``."""
    n, d = X.shape
    pre = None
    if spec.param == "M" and n_components < d:
        # A metric loss cannot constrain the rank of M: project onto the leading principal
        # components first and learn the full metric there.
        pre = x64_call(pca_components, X, n_components)[0]
        X = X @ pre.T
        n, d = X.shape
    needs_targets = "targets" in spec.needs
    if needs_targets and n_neighbors >= n:
        raise ValueError(f"n_neighbors={n_neighbors} must be smaller than n_samples={n}.")
    devices, n_dev = _devices(devices)
    bucket = bucket_size(n) if pad_to == "auto" else (n if pad_to is None else int(pad_to))
    bucket += (-bucket) % n_dev  # a multiple of the device count
    problem_kw = {k: hyper.pop(k) for k in PROBLEM_KEYS if k in hyper}
    problem = make_problem(X, codes, n_neighbors=n_neighbors if needs_targets else None, pad_to=bucket,
                           random_state=random_state, validate=False, **problem_kw)
    L0 = initial_components(init, X, codes, n_classes, d if spec.param == "M" else n_components, random_state)
    # cast on the host: a jnp cast would compile a conversion program per shape
    params0 = jax.device_put(np.asarray(L0 if spec.param == "L" else L0.T @ L0, dtype=problem.X.dtype))
    return problem, params0, pre, bucket, devices, n_dev


def _solve_active_set(name, params0, problem, n, bucket, max_iter, tol, verbose, random_state, t_start, hyper,
                      n_total):
    """LMNN's large-data path (:mod:`jaxdml.solvers._lmnn_active`), as a :class:`FittedMetric`; ``n``
    rows of ``n_total`` (a stratified subsample above ``ACTIVE_SET_DEFAULTS["max_n"]``)."""
    max_iter = ACTIVE_SET_DEFAULTS["max_iter"] if max_iter is None else max_iter
    t_solve = time.perf_counter()
    d = ACTIVE_SET_DEFAULTS
    chunked = n > d["chunked_above"]
    res = minimize_active_set(params0, problem, max_iter=max_iter, tol=tol, verbose=verbose,
                              random_state=random_state, refresh_every=d["refresh_every"], slack=d["slack"],
                              cand_slack=d["chunk_cand_slack" if chunked else "cand_slack"],
                              chunk_rows=d["chunk_rows"] if chunked else None,
                              chunks_per_refresh=1 if chunked else None, **hyper)
    n_iter, hist = finish(res, name, max_iter, tol)
    t_end = time.perf_counter()
    return FittedMetric(
        L=np.asarray(res.params, dtype=np.float64), method=name, n_iter=n_iter, converged=bool(res.converged),
        loss_history=hist, loss=float(res.loss),
        info=dict(failed=bool(res.failed), padded_rows=bucket - n, batch_size=None, n_candidates=None, devices=1,
                  setup_seconds=t_solve - t_start, solve_seconds=t_end - t_solve, n_fitted_rows=n,
                  subsample=n < n_total, **res.info),
    )


def solve_loss(spec: LossSpec, name: str, X, codes, n_classes, *, n_components, random_state, max_iter, tol,
               verbose, init="auto", optimizer=None, learning_rate=None, n_neighbors=None, projection="auto",
               pad_to="auto", batch_size="auto", n_candidates="auto", devices=None, callback=None, probe=False,
               weights=None, **hyper):
    """Minimise the method's loss from validated data; returns a :class:`FittedMetric`."""
    t_start = time.perf_counter()
    n_neighbors = 3 if n_neighbors is None else n_neighbors
    tol = 1e-5 if tol is None else tol
    check_params(dict(tol=tol, batch_size=batch_size, n_neighbors=n_neighbors, learning_rate=learning_rate,
                      projection=projection, pad_to=pad_to), _SETTING_CONSTRAINTS, owner="jaxdml.fit")
    n = n_total = X.shape[0]
    active = callback is None and use_active_set(
        name, spec, n, optimizer=optimizer, batch_size=batch_size, n_candidates=n_candidates, devices=devices,
        problem_kw=[k for k in PROBLEM_KEYS if k in hyper])
    if active and n > ACTIVE_SET_DEFAULTS["max_n"]:  # the active set on a stratified subsample
        keep = stratified_subsample(codes, ACTIVE_SET_DEFAULTS["subsample"], random_state,
                                    min_per_class=n_neighbors + 1)
        X, codes, n = X[keep], codes[keep], keep.size
    problem, params0, pre, bucket, devices, n_dev = _setup(
        spec, X, codes, n_classes, n_components, init=init, n_neighbors=n_neighbors, pad_to=pad_to,
        random_state=random_state, devices=devices, hyper=hyper)
    if weights is not None:
        hyper["weights"] = jnp.asarray(weights)
    if probe:
        _check_callable(spec.fn, problem, params0, hyper)
    if active:  # LMNN on large data: exact active set of impostors + full-batch L-BFGS
        return _solve_active_set(name, params0, problem, n, bucket, max_iter, tol, verbose, random_state, t_start,
                                 hyper, n_total)
    spec = _large_data(spec, n, optimizer, max_iter)
    optimizer = _optimizer(optimizer, spec)
    if projection == "auto":
        projection = projection_psd if spec.projection == "psd" else None
    learning_rate = spec.learning_rate if learning_rate is None else learning_rate
    max_iter = spec.max_iter if max_iter is None else max_iter
    batch_size, n_candidates = _batching(spec, n, bucket, n_dev, batch_size, n_candidates, optimizer, params0)
    # the shuffling key of minibatch training (full-batch steps need none: no seeding program)
    key = None if batch_size is None else jax.random.key(seed_from(random_state))
    t_solve = time.perf_counter()
    res = minimize(spec.fn, params0, problem, optimizer=optimizer, projection=projection, max_iter=max_iter,
                   tol=tol, learning_rate=learning_rate, hyper=hyper, verbose=verbose, batch_size=batch_size,
                   key=key, n_candidates=n_candidates, devices=devices, callback=callback)
    n_iter, hist = finish(res, name, max_iter, tol)
    t_end = time.perf_counter()
    params = np.asarray(res.params, dtype=np.float64)
    L, metric = params, None
    if spec.param == "M":
        metric = 0.5 * (params + params.T)
        L = components_from_metric(metric)
        if pre is not None:
            L, metric = L @ pre, None
    return FittedMetric(
        L=L, method=name, n_iter=n_iter, converged=bool(res.converged), loss_history=hist,
        loss=float(res.loss), metric_=metric,
        info=dict(failed=bool(res.failed), padded_rows=bucket - n, batch_size=batch_size,
                  n_candidates=n_candidates, devices=n_dev, setup_seconds=t_solve - t_start,
                  solve_seconds=t_end - t_solve),
    )
