"""``jaxdml.fit``: validate -> build the problem -> initialise -> solve -> FittedMetric."""

from __future__ import annotations

import functools
import inspect
import time
import numbers
import warnings
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import losses as _losses
from .._threads import blas_single_threaded, single_threaded_blas
from .._validation import Interval, Options, check_data, check_n_components, check_params, encode_labels
from ..eigen import lda_components, pca_components
from ..exceptions import ConvergenceWarning
from ..linalg import components_from_metric
from ..problems import bucket_size, make_problem
from ..projections import projection_psd
from ._driver import make_optimizer, minimize, uses_linesearch
from ._init import initial_components
from ._lmnn_active import ACTIVE_SET_DEFAULTS, minimize_active_set, use_active_set
from ._result import FittedMetric

__all__ = ["fit", "register_solver", "SolverSpec", "SOLVERS", "available_methods", "x64_call"]


class SolverSpec(NamedTuple):
    """A method that is not a plain optax-driven loss (closed form, Bregman projections, ...).

    ``fn(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, **hyper)``
    receives validated float64 data and label codes and returns either a dict with ``L`` or
    ``metric`` (and optionally ``n_iter``, ``converged``, ``loss_history``, ``loss``, ``info``)
    or a ready :class:`FittedMetric` (e.g. a :class:`KernelFittedMetric`).
    ``max_iter`` is None when the user did not set it (use the method's default).
    ``max_components(n_features, n_classes)`` bounds ``n_components`` (None: n_features).
    """

    fn: Callable
    supervised: bool = True
    max_components: Optional[Callable] = None
    full_rank_only: bool = False
    constraints: dict = {}


SOLVERS: dict[str, SolverSpec] = {}

#: hyper-parameters consumed by make_problem rather than by the loss
_PROBLEM_KEYS = ("n_impostors", "n_centroids")

_LOSS_CONSTRAINTS = {
    "mu": [Interval(numbers.Real, 0, 1, closed="neither")],
    "margin": [Interval(numbers.Real, 0, None, closed="neither")],
}


def check_budget(name: str, max_iter, tol, default_tol: float) -> float:
    """Validate a solver's ``max_iter`` / ``tol`` (``fit`` hands them over as given) and resolve
    ``tol=None`` to the method's default."""
    check_params(
        dict(max_iter=max_iter, tol=tol),
        dict(max_iter=[Interval(numbers.Integral, 1, None), None], tol=[Interval(numbers.Real, 0, None), None]),
        owner=f"method {name!r}",
    )
    return default_tol if tol is None else float(tol)


def register_solver(name: str, spec: SolverSpec) -> None:
    """Register a non-gradient method under ``name`` for :func:`fit`."""
    SOLVERS[name] = spec


def available_methods() -> list[str]:
    """Every name :func:`fit` accepts as ``loss``."""
    return sorted(set(SOLVERS) | set(_losses.REGISTRY))


# --------------------------------------------------------------------------- closed forms
def x64_call(fn, *args, **kwargs):
    """Call a closed-form ``jnp`` solver in float64.

    Closed-form methods solve small (d x d or N x N) symmetric eigenproblems whose conditioning
    (e.g. a nearly singular within-class scatter) float32 cannot resolve; in float64 they match
    scikit-learn to ~1e-8. Float inputs are cast; results come back as float64 NumPy arrays.
    """
    # JAX's CPU eigh/Cholesky call SciPy's OpenBLAS; its own threads fighting XLA's pool made a
    # 576 x 576 eigh ~70x slower on 2 cores, so BLAS is limited to one thread for the call.
    with jax.enable_x64(True), single_threaded_blas():
        cast = [jnp.asarray(a, jnp.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
        out = fn(*cast, **kwargs)
        return jax.tree_util.tree_map(lambda a: np.asarray(a, dtype=np.float64), out)


def _euclidean(X, codes, n_classes, *, n_components, **_):
    return dict(L=np.eye(X.shape[1]))


def _pca(X, codes, n_classes, *, n_components, **_):
    L, w = x64_call(pca_components, X, n_components)
    return dict(L=L, info=dict(explained_variance=w[:n_components],
                                                        explained_variance_ratio=w[:n_components] / max(w.sum(), 1e-300)))


def _lda(X, codes, n_classes, *, n_components, reg=1e-6, **_):
    L, w = x64_call(lda_components, X, codes, n_components, n_classes, reg)
    return dict(L=L * np.sqrt(X.shape[0]), info=dict(eigenvalues=w[:n_components]))


register_solver("euclidean", SolverSpec(_euclidean, supervised=False, full_rank_only=True))
register_solver("pca", SolverSpec(_pca, supervised=False))
register_solver(
    "lda",
    SolverSpec(_lda, max_components=lambda d, c: min(d, c - 1),
               constraints={"reg": [Interval(numbers.Real, 0, 1, closed="left")]}),
)


# --------------------------------------------------------------------------- gradient losses
def _kw_names(fn, skip: int = 2) -> set:
    """Parameter names of ``fn`` after the first ``skip`` (``{"*"}`` if it takes ``**kwargs``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover
        return set()
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return {"*"}
    return {p.name for p in list(sig.parameters.values())[skip:]}


@functools.lru_cache(maxsize=None)
def _combined_loss(names: tuple):
    fns = tuple(_losses.get(n).fn for n in names)
    accepted = tuple(_kw_names(f) for f in fns)

    def combined(params, problem, *, weights, **hyper):
        total = 0.0
        for i, (f, acc) in enumerate(zip(fns, accepted)):
            kw = {k: v for k, v in hyper.items() if "*" in acc or k in acc}
            total = total + weights[i] * f(params, problem, **kw)
        return total

    combined.__name__ = "+".join(names)
    return combined


def _resolve_gradient(loss):
    """Return ``(fn, spec, name, extra_hyper)`` for a named, combined or callable loss."""
    if isinstance(loss, str):
        spec = _losses.get(loss)
        return spec.fn, spec, loss, {}
    if isinstance(loss, dict):
        if not loss:
            raise ValueError("A combined loss needs at least one {name: weight} entry.")
        names = tuple(loss)
        specs = [_losses.get(n) for n in names]
        params = {s.param for s in specs}
        if len(params) != 1:
            raise ValueError(
                f"Cannot combine losses with different parametrizations: "
                f"{ {n: s.param for n, s in zip(names, specs)} } (all must be 'L' or all 'M')."
            )
        weights = []
        for n in names:
            w = loss[n]
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not np.isfinite(w):
                raise ValueError(f"The weight of loss {n!r} must be a finite number; got {w!r}.")
            weights.append(float(w))
        first = specs[0]
        spec = first._replace(
            fn=_combined_loss(names),
            needs=frozenset().union(*(s.needs for s in specs)),
            max_iter=max(s.max_iter for s in specs),
            optimizer="lbfgs" if all(s.optimizer == "lbfgs" for s in specs) else first.optimizer,
        )
        return spec.fn, spec, "+".join(names), {"weights": jnp.asarray(weights)}
    if callable(loss):
        spec = _losses.LossSpec(loss, "L", needs=frozenset({"targets"}))
        return loss, spec, getattr(loss, "__name__", "callable"), {}
    raise ValueError(
        f"loss must be a name, a dict of {{name: weight}} or a callable f(L, problem); got {loss!r}. "
        f"Valid names: {available_methods()}."
    )


def _check_hyper(fn, name, hyper):
    acc = _kw_names(fn)
    if name in _losses.REGISTRY or "+" in name:
        unknown = [k for k in hyper if k not in acc and "*" not in acc and k != "weights"]
        if unknown:
            raise ValueError(
                f"Unknown hyper-parameter(s) {unknown} for loss {name!r}; it accepts "
                f"{sorted(acc - {'block_elements'}) or 'none'}."
            )
    check_params(hyper, _LOSS_CONSTRAINTS, owner=f"loss {name!r}")


@blas_single_threaded
def fit(
    X=None,
    y=None,
    *,
    loss="nca",
    n_components: int | None = None,
    max_iter: int | None = None,
    tol: float | None = None,
    optimizer=None,
    learning_rate: float | None = None,
    init="auto",
    n_neighbors: int | None = None,
    projection="auto",
    random_state=None,
    pad_to="auto",
    verbose: int = 0,
    batch_size="auto",
    n_candidates="auto",
    devices=None,
    **hyper,
) -> FittedMetric:
    """Learn a distance metric from labelled data.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Class labels (any hashable values; strings work). Optional for unsupervised methods.
    loss : str, dict or callable, default="nca"
        A registered method name (see :func:`available_methods`: ``"nca"``, ``"lmnn"``,
        ``"lmnn_metric"``, ``"pca"``, ``"lda"``, ...), a weighted combination of gradient losses
        such as ``{"lmnn": 1.0, "nca": 0.5}``, or a callable ``f(L, problem) -> scalar``.
    n_components : int, optional
        Output dimension (rows of ``L``). Default: full dimension (LDA: ``n_classes - 1``).
    max_iter : int, optional
        Iteration budget (default per method).
    tol : float, optional
        Stopping tolerance: for the optax-driven losses (default 1e-5) the relative improvement
        below which the optimisation stops; registered solvers use their own default and meaning
        (e.g. ITML: the relative change of its dual variables over a sweep).
    optimizer : optax.GradientTransformation or str, optional
        Default per method (L-BFGS for smooth full-batch losses, Adam for projected ones).
    learning_rate : float, optional
        For first-order optimizers.
    init : {"auto", "identity", "pca", "lda", "random"} or array, default="auto"
    n_neighbors : int, optional
        Neighbourhood size: target neighbours per sample for LMNN-type and callable losses
        (default 3); passed to other methods that take ``n_neighbors`` (e.g. DMLMJ, KLMNN).
    projection : "auto", callable or None
        Applied after each step; "auto" uses the method's own (PSD cone for metric losses).
    random_state : int, RandomState or None
    pad_to : "auto", int or None
        Pad the training rows to a bucket size so that similar-sized data reuse compiled code.
    verbose : int
        Print the loss every ``verbose`` iterations (every 10 for 1).
    batch_size : "auto", int or None, default="auto"
        Minibatch training over anchor rows (``max_iter`` still counts optimizer steps; needs a
        first-order optimizer). None forces full-batch steps; "auto" uses the method's default
        (e.g. NCA: 256 anchors per step, i.e. full batch on data with at most 256 samples).
    n_candidates : "auto", int or None, default="auto"
        Minibatch steps compare their anchors with this many uniformly sampled rows instead of
        every sample (a stochastic approximation for very large data). "auto": the method's rule
        (exact below its size threshold); None: always exact.
    devices : None, "all" or a sequence of jax devices
        Split each step's anchors across several devices (data parallelism with ``shard_map``);
        None uses the default device. The rows are padded to a multiple of the device count.
    **hyper
        Method hyper-parameters (e.g. ``mu``, ``margin`` for LMNN). Floats are traced (changing
        them does not recompile).

    Returns
    -------
    FittedMetric

    Examples
    --------
    >>> import jaxdml
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> metric = jaxdml.fit(X, y, loss="lmnn", max_iter=20)
    >>> metric.transform(X).shape
    (150, 4)
    """
    if isinstance(loss, str) and loss in SOLVERS:
        if n_neighbors is not None:
            if "n_neighbors" not in _kw_names(SOLVERS[loss].fn, skip=0):
                raise ValueError(f"method {loss!r} does not take n_neighbors.")
            hyper["n_neighbors"] = n_neighbors
        if pad_to != "auto" and "pad_to" in _kw_names(SOLVERS[loss].fn, skip=0):
            hyper["pad_to"] = pad_to
        # optimisation settings, for solvers that run the optax driver themselves (NCMC, KLMNN)
        own = dict(init=init, optimizer=optimizer, learning_rate=learning_rate, batch_size=batch_size,
                   n_candidates=n_candidates, devices=devices)
        accepted = set(inspect.signature(SOLVERS[loss].fn).parameters)
        for key, value in own.items():
            if value is None or (isinstance(value, str) and value == "auto"):
                continue  # left at its default
            if key not in accepted:
                raise ValueError(f"method {loss!r} does not take {key}.")
            hyper[key] = value
        return _fit_solver(loss, X, y, n_components=n_components, max_iter=max_iter, tol=tol,
                           random_state=random_state, verbose=verbose, hyper=hyper)
    if n_neighbors is None:
        n_neighbors = 3
    if tol is None:
        tol = 1e-5
    if isinstance(loss, str) and loss not in _losses.REGISTRY:
        raise ValueError(f"Unknown loss {loss!r}. Valid names: {available_methods()}.")
    t_start = time.perf_counter()
    max_iter_given = max_iter
    fn, spec, name, extra = _resolve_gradient(loss)
    check_params(
        dict(max_iter=max_iter, tol=tol, n_neighbors=n_neighbors, verbose=verbose, learning_rate=learning_rate,
             batch_size=batch_size),
        dict(max_iter=[Interval(numbers.Integral, 1, None), None], tol=[Interval(numbers.Real, 0, None)],
             batch_size=[Interval(numbers.Integral, 1, None), None, Options({"auto"})],
             n_neighbors=[Interval(numbers.Integral, 1, None)], verbose=[Interval(numbers.Integral, 0, None), "boolean"],
             learning_rate=[Interval(numbers.Real, 0, None, closed="neither"), None]),
        owner="jaxdml.fit",
    )
    problem_kw = {k: hyper.pop(k) for k in _PROBLEM_KEYS if k in hyper}
    _check_hyper(fn, name, hyper)
    X, y = check_data(X, y, owner="jaxdml.fit")
    classes, codes = encode_labels(y)
    n, d = X.shape
    n_components = check_n_components(n_components, d, owner="jaxdml.fit")
    pre = None
    if spec.param == "M" and n_components < d:
        # A metric loss cannot constrain the rank of M; as the seed suggests, project onto the
        # leading principal components first and learn the full metric there.
        pre = x64_call(pca_components, X, n_components)[0]
        X = X @ pre.T
        n, d = X.shape
    needs_targets = "targets" in spec.needs
    if needs_targets and n_neighbors >= n:
        raise ValueError(f"n_neighbors={n_neighbors} must be smaller than n_samples={n}.")
    if devices is not None and not (isinstance(devices, str) and devices == "all"):
        devices = list(devices)
    n_dev = len(jax.devices()) if devices == "all" else (1 if devices is None else len(devices))
    bucket = bucket_size(n) if pad_to == "auto" else (n if pad_to is None else int(pad_to))
    if bucket % n_dev:
        bucket += n_dev - bucket % n_dev
    problem = make_problem(
        X, y, n_neighbors=n_neighbors if needs_targets else None, pad_to=bucket,
        random_state=random_state, **problem_kw,
    )
    L0 = initial_components(init, X, codes, len(classes), d if spec.param == "M" else n_components, random_state)
    dtype = problem.X.dtype
    params0 = jnp.asarray(L0 if spec.param == "L" else L0.T @ L0, dtype=dtype)

    hyper = {**hyper, **extra}
    if not isinstance(loss, (str, dict)):
        try:
            out = jax.eval_shape(lambda p: fn(p, problem, **hyper), params0)
        except Exception as exc:
            raise ValueError(f"The callable loss failed when called as f(L, problem): {exc}") from exc
        if not hasattr(out, "shape") or out.shape != ():
            raise ValueError(
                f"The callable loss must return a scalar; it returned shape {getattr(out, 'shape', type(out))}."
            )

    active_set = use_active_set(loss, spec, n, optimizer=optimizer, batch_size=batch_size,
                                n_candidates=n_candidates, devices=devices, problem_kw=problem_kw)
    if spec.large_n is not None and n > spec.large_n and spec.large:
        # large data: the method's large-data defaults replace what the user left unset
        big = spec.large
        if optimizer is None:
            spec = spec._replace(optimizer=big.get("optimizer", spec.optimizer),
                                 learning_rate=big.get("learning_rate", spec.learning_rate))
        if max_iter is None and "max_iter" in big:
            spec = spec._replace(max_iter=big["max_iter"])
        if "batch_size" in big:
            spec = spec._replace(batch_size=big["batch_size"])
    if optimizer is None:
        optimizer = make_optimizer(spec.optimizer)
    elif isinstance(optimizer, str):
        optimizer = make_optimizer(optimizer)
    elif not isinstance(optimizer, optax.GradientTransformation):
        raise ValueError(f"optimizer must be an optax.GradientTransformation or a name; got {optimizer!r}.")
    if projection == "auto":
        projection = projection_psd if spec.projection == "psd" else None
    if learning_rate is None:
        learning_rate = spec.learning_rate
    max_iter = spec.max_iter if max_iter is None else max_iter

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
    key = jax.random.key(np.random.RandomState(random_state).randint(2**31) if random_state is not None else 0)
    t_solve = time.perf_counter()
    solver_info = {}
    if active_set:
        # LMNN on large data: exact active set of impostors + full-batch L-BFGS (_lmnn_active)
        batch_size = n_candidates = None
        if max_iter_given is None:
            max_iter = ACTIVE_SET_DEFAULTS["max_iter"]
        res = minimize_active_set(params0, problem, max_iter=max_iter, tol=tol, verbose=verbose,
                                  random_state=random_state, refresh_every=ACTIVE_SET_DEFAULTS["refresh_every"],
                                  slack=ACTIVE_SET_DEFAULTS["slack"], **hyper)
        solver_info = res.info
    else:
        res = minimize(
            fn, params0, problem, optimizer=optimizer, projection=projection, max_iter=max_iter,
            tol=tol, learning_rate=learning_rate, hyper=hyper, verbose=verbose,
            batch_size=batch_size, key=key, n_candidates=n_candidates, devices=devices,
        )
    n_iter = int(res.n_iter)  # blocks until the solve is done
    t_end = time.perf_counter()
    hist = np.asarray(res.loss_history, dtype=np.float64)[: n_iter + 1]
    hist = hist[np.isfinite(hist)]
    params = np.asarray(res.params, dtype=np.float64)
    if bool(res.failed):
        if n_iter == 0 or hist.size == 0:
            raise FloatingPointError(
                f"loss {name!r} is not finite at the initial point; check the data scale and "
                "hyper-parameters."
            )
        warnings.warn(
            f"loss {name!r} became non-finite after {n_iter} iterations; returning the best finite "
            "iterate.", RuntimeWarning, stacklevel=2,
        )
    elif not bool(res.converged):
        warnings.warn(
            f"{name}: the optimisation did not converge in max_iter={max_iter} iterations "
            f"(tol={tol}); increase max_iter.", ConvergenceWarning, stacklevel=2,
        )
    if spec.param == "M":
        M = 0.5 * (params + params.T)
        L, metric = components_from_metric(M), M
        if pre is not None:
            L, metric = L @ pre, None
    else:
        L, metric = params, None
    return FittedMetric(
        L=L, method=name, n_iter=n_iter, converged=bool(res.converged), loss_history=hist,
        loss=float(res.loss), classes=classes, metric_=metric,
        info=dict(failed=bool(res.failed), padded_rows=bucket - n, batch_size=batch_size,
                  n_candidates=n_candidates, devices=n_dev, setup_seconds=t_solve - t_start,
                  solve_seconds=t_end - t_solve, **solver_info),
    )


def _fit_solver(name, X, y, *, n_components, max_iter, tol, random_state, verbose, hyper) -> FittedMetric:
    spec = SOLVERS[name]
    check_params(hyper, spec.constraints, owner=f"method {name!r}")
    if spec.supervised or y is not None:
        X, y = check_data(X, y, owner="jaxdml.fit", min_classes=2 if spec.supervised else 1)
        classes, codes = encode_labels(y)
    else:
        X, _ = check_data(X, None, owner="jaxdml.fit")
        classes, codes = None, None
    n, d = X.shape
    n_classes = 0 if classes is None else len(classes)
    upper = spec.max_components(d, n_classes) if spec.max_components else d
    if spec.full_rank_only and n_components not in (None, d):
        raise ValueError(f"method {name!r} learns a full-dimensional metric; n_components must be None or {d}.")
    n_components = check_n_components(n_components, d, owner=f"method {name!r}", upper=upper)
    out = spec.fn(X, codes, n_classes, n_components=n_components, random_state=random_state,
                  max_iter=max_iter, tol=tol, verbose=verbose, **hyper)
    if isinstance(out, FittedMetric):  # e.g. a KernelFittedMetric built by the solver itself
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
