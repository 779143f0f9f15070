"""One solve plan for every gradient-trained method: :func:`plan` then :func:`execute`.

``plan(spec, name, X, codes, n_classes, ...)`` does the host-side preparation once: the method's route
(``Method.route``: a solver that replaces the optax driver, e.g. LMNN's active set on large data), the
padded problem pytree (rows padded to a bucket size by :mod:`jaxdml._runtime._padding`, with the target
neighbours or centroids the loss needs; or a problem the caller builds, e.g. LDML's pairs), the initial
parameters, the optimizer and projection from the method's defaults and large-data policy, and the
batching. It returns a :class:`GradientPlan`; :func:`execute` runs it (the route's solver, or
:func:`jaxdml.solvers.minimize`) and returns a :class:`FittedMetric`. ``jaxdml.fit`` (through
``solve_loss``), LDML from pairs (:func:`jaxdml.methods.gradient._collapse.ldml_from_pairs`) and the batched
tuning grid (:mod:`jaxdml.tuning._batched`, which runs the plan's arguments through its own runner) share it.
"""

from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..._runtime._device import x64_call
from ..._runtime._padding import bucket_size
from ..._runtime._warnings import warn as _warn
from ..._runtime._warnings import warn_not_converged
from ..._validation import seed_from
from ...eigen import pca_components
from ...linalg import centred_rows, components_from_metric
from ...problems import make_problem
from ...projections import projection_psd
from ...solvers._driver import make_optimizer, minimize, uses_linesearch
from ...solvers._init import initial_components
from ...solvers._result import FittedMetric
from ._record import LossSpec, Route, check_neighbour_count

__all__ = ["GradientPlan", "plan", "execute", "finish", "PROBLEM_KEYS"]

#: hyper-parameters consumed by make_problem rather than by the loss
PROBLEM_KEYS = ("n_impostors", "n_centroids")



class GradientPlan(NamedTuple):
    """Everything a gradient fit runs, prepared on the host.

    ``fn``/``param``: the loss and its parametrisation; ``problem``/``params0``: the padded problem and the
    initial parameters (device arrays); ``pre``: the PCA pre-projection of a rank-limited metric loss
    (None: none); ``optimizer``, ``projection``, ``learning_rate``, ``max_iter``, ``tol``, ``hyper``,
    ``batch_size``, ``n_candidates``, ``key``, ``devices``, ``callback``, ``verbose``: the arguments of
    :func:`jaxdml.solvers.minimize`. ``route``: the method's :class:`Route` when it applies (then, unless the
    route runs the driver itself, the driver's arguments are not resolved and ``max_iter`` is the user's value,
    None if unset); ``n``/``n_total``:
    the rows fitted / given; ``bucket``: the padded size; ``n_dev``: the device count; ``info``: entries
    the result's ``info`` starts with.
    """

    name: str
    fn: Callable
    param: str
    problem: Any
    params0: Any
    pre: Optional[np.ndarray]
    optimizer: Any
    projection: Optional[Callable]
    learning_rate: Optional[float]
    max_iter: Optional[int]
    tol: float
    hyper: dict
    batch_size: Optional[int]
    n_candidates: Optional[int]
    key: Any
    devices: Any
    n_dev: int
    callback: Optional[Callable]
    verbose: int
    random_state: Any
    route: Optional[Route]
    n: int
    n_total: int
    bucket: int
    t_start: float
    info: dict


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


def resolve_auto_hyper(spec: LossSpec, hyper: dict, n: int, optimizer) -> None:
    """Hyper-parameters left at ``"auto"`` take the value of the path the fit takes (in place): the
    large-data one (``spec.large["hyper"]``: above ``large_n`` samples, the method's own optimizer)
    or the default one (``spec.auto_hyper``)."""
    big = optimizer is None and _above_large_n(spec, n)
    for key, value in spec.auto_hyper.items():  # in order: a callable value reads the ones resolved before it
        if isinstance(hyper.get(key), str) and hyper[key] == "auto":
            if big and "hyper" in spec.large and key in spec.large["hyper"]:
                hyper[key] = spec.large["hyper"][key]
            else:
                hyper[key] = value(hyper) if callable(value) else value


def _above_large_n(spec: LossSpec, n: int) -> bool:
    """Whether the method has large-data defaults and ``n`` samples call for them."""
    return spec.large_n is not None and n > spec.large_n and bool(spec.large)


def large_data(spec: LossSpec, n: int, optimizer, max_iter) -> LossSpec:
    """The method's large-data defaults replace what the user left unset (above ``large_n``)."""
    if not _above_large_n(spec, n):
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


def resolve_optimizer(optimizer, spec: LossSpec):
    """The optax transformation of a fit: the user's (a name or a transformation) or the method's default."""
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
    elif n_candidates is not None and batch_size is None:
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
           hyper, problem_fn=None):
    """Host-side preparation: PCA for rank-limited metric losses, the padded problem, ``params0``.
    ``problem_fn(X) -> (problem, n_rows, bucket)`` builds a problem other than the labelled one."""
    n, d = X.shape
    X = centred_rows(X)  # the losses are distances: float32 keeps the differences of centred rows
    pre = None
    if spec.param == "M" and n_components < d:
        # A metric loss cannot constrain the rank of M: project onto the leading principal
        # components first and learn the full metric there.
        pre = x64_call(pca_components, X, n_components)[0]
        X = X @ pre.T
        n, d = X.shape
    needs_targets = "targets" in spec.needs
    if needs_targets:
        check_neighbour_count(n_neighbors, n, "jaxdml.fit")
    devices, n_dev = _devices(devices)
    if problem_fn is not None:
        problem, n, bucket = problem_fn(X)
    else:
        bucket = bucket_size(n) if pad_to == "auto" else (n if pad_to is None else int(pad_to))
        bucket += (-bucket) % n_dev  # a multiple of the device count
        problem_kw = {k: hyper.pop(k) for k in PROBLEM_KEYS if k in hyper}
        problem = make_problem(X, codes, n_neighbors=n_neighbors if needs_targets else None, pad_to=bucket,
                               random_state=random_state, validate=False, **problem_kw)
    L0 = initial_components(init, X, codes, n_classes, d if spec.param == "M" else n_components, random_state)
    # cast on the host: a jnp cast would compile a conversion program per shape
    params0 = jax.device_put(np.asarray(L0 if spec.param == "L" else L0.T @ L0, dtype=problem.X.dtype))
    return problem, params0, pre, n, bucket, devices, n_dev


def plan(spec: LossSpec, name: str, X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose,
         init="auto", optimizer=None, learning_rate=None, n_neighbors=None, projection="auto", pad_to="auto",
         batch_size="auto", n_candidates="auto", devices=None, callback=None, probe=False, weights=None,
         route: Optional[Route] = None, problem_fn=None, info=None, **hyper) -> GradientPlan:
    """The :class:`GradientPlan` of minimising ``spec.fn`` on validated data (the settings as ``jaxdml.fit``
    takes them; ``route``: the method's :class:`Route`; ``problem_fn``: see :func:`_setup`)."""
    t_start = time.perf_counter()
    n_neighbors = 3 if n_neighbors is None else n_neighbors
    tol = 1e-5 if tol is None else tol
    n = n_total = X.shape[0]
    if route is not None and not route.applies(
            spec, n, optimizer=optimizer, batch_size=batch_size, n_candidates=n_candidates, devices=devices,
            callback=callback, problem_kw=[k for k in PROBLEM_KEYS if k in hyper]):
        route = None
    keep = None if route is None or route.subsample is None else route.subsample(codes, n_neighbors, random_state)
    if keep is not None:  # the route fits a subsample
        X, codes = X[keep], codes[keep]
    problem, params0, pre, n, bucket, devices, n_dev = _setup(
        spec, X, codes, n_classes, n_components, init=init, n_neighbors=n_neighbors, pad_to=pad_to,
        random_state=random_state, devices=devices, hyper=hyper, problem_fn=problem_fn)
    if weights is not None:
        hyper["weights"] = jnp.asarray(weights)
    resolve_auto_hyper(spec, hyper, n, optimizer)  # before a route too: its solver gets numbers
    if probe:
        _check_callable(spec.fn, problem, params0, hyper)
    common = dict(name=name, fn=spec.fn, param=spec.param, problem=problem, params0=params0, pre=pre, tol=tol,
                  hyper=hyper, devices=devices, n_dev=n_dev, callback=callback, verbose=verbose,
                  random_state=random_state, route=route, n=n, n_total=n_total, bucket=bucket, t_start=t_start,
                  info=dict(info or {}))
    if route is not None and not route.driver:  # the route's solver reads what it needs from the plan
        return GradientPlan(optimizer=None, projection=None, learning_rate=None, max_iter=max_iter,
                            batch_size=None, n_candidates=None, key=None, **common)
    spec = large_data(spec, n, optimizer, max_iter)
    optimizer = resolve_optimizer(optimizer, spec)
    if projection == "auto":
        projection = projection_psd if spec.projection == "psd" else None
    learning_rate = spec.learning_rate if learning_rate is None else learning_rate
    max_iter = spec.max_iter if max_iter is None else max_iter
    batch_size, n_candidates = _batching(spec, n, bucket, n_dev, batch_size, n_candidates, optimizer, params0)
    # the shuffling key of minibatch training (full-batch steps need none: no seeding program)
    key = None if batch_size is None else jax.random.key(seed_from(random_state))
    return GradientPlan(optimizer=optimizer, projection=projection, learning_rate=learning_rate, max_iter=max_iter,
                        batch_size=batch_size, n_candidates=n_candidates, key=key, **common)


def execute(p: GradientPlan) -> FittedMetric:
    """Run a plan: its route's solver, or the optax driver; the result as a :class:`FittedMetric`."""
    if p.route is not None:
        return p.route.solve(p)
    t_solve = time.perf_counter()
    res = minimize(p.fn, p.params0, p.problem, optimizer=p.optimizer, projection=p.projection, max_iter=p.max_iter,
                   tol=p.tol, learning_rate=p.learning_rate, hyper=p.hyper, verbose=p.verbose,
                   batch_size=p.batch_size, key=p.key, n_candidates=p.n_candidates, devices=p.devices,
                   callback=p.callback)
    n_iter, hist = finish(res, p.name, p.max_iter, p.tol)
    t_end = time.perf_counter()
    params = np.asarray(res.params, dtype=np.float64)
    L, metric = params, None
    if p.param == "M":
        metric = 0.5 * (params + params.T)
        L = components_from_metric(metric)
        if p.pre is not None:
            L, metric = L @ p.pre, None
    return FittedMetric(
        L=L, method=p.name, n_iter=n_iter, converged=bool(res.converged), loss_history=hist,
        loss=float(res.loss), metric_=metric,
        info=dict(p.info, failed=bool(res.failed), padded_rows=p.bucket - p.n, batch_size=p.batch_size,
                  n_candidates=p.n_candidates, devices=p.n_dev, setup_seconds=t_solve - p.t_start,
                  solve_seconds=t_end - t_solve),
    )
