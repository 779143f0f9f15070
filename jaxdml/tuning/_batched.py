"""A float hyper-parameter grid of a gradient learner as one compiled program.

A gradient learner's fit is ``minimize(loss, params0, problem, tol=..., learning_rate=..., hyper=...)``
after a host-side preparation that depends on the training fold only. When the grid changes nothing but
values that the optax driver takes as traced arguments (``tol``, ``learning_rate``, float loss
hyper-parameters), every fit runs the same compiled program: the preparation is done once per fold, the
points that differ only in ``tol`` share one trajectory (:mod:`._multitol`: each tolerance keeps its own
stopping test, so it gets what its own fit gets), and on an accelerator the trajectories of all folds and
points are batched with ``jax.vmap``. The k-NN scores of all grid points of a fold are then computed
together by :func:`jaxdml.classifiers._multidml.knn_batched`.

The preparation is the fit's own plan (:func:`jaxdml.methods.core._plan.plan`). Anything outside that case (the
minibatch, multi-device paths or the method's route (LMNN's active set), a PCA pre-projection,
integer or structural parameters in the grid, k-NN options other than ``weights``, diagnostics other
than ``loss``/``n_iter``/``converged``/``time``) returns None and the caller fits one point at a time.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import os
import time
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import clone

from .._runtime._device import jit_quick_compile, to_device
from .._runtime._warnings import warn
from ..classifiers._multidml import knn_batched
from ..config import precise
from ..exceptions import ConvergenceWarning
from ..linalg import components_from_metric
from ..methods.core._base import GradientMetricLearner
from ..methods.core._engine import resolve_n_components, split_settings
from ..methods.core._gradient import PROBLEM_KEYS
from ..methods.core._plan import plan
from ..methods.core._record import SETTINGS
from ..solvers._driver import default_patience, split_hyper
from ._multitol import multi_tol_runner

__all__ = ["batched_grid"]

_DIAGNOSTICS = ("loss", "n_iter", "converged", "time")


def _runner(config, vectorised: bool):
    fn, optimizer, projection, max_iter, static, has_lr, _, patience = config[:8]
    run = multi_tol_runner(fn, optimizer, projection, max_iter, patience, static)
    if not vectorised:
        return run
    return _vmapped(run, has_lr)


@functools.lru_cache(maxsize=32)
def _vmapped(run, has_lr):
    """The multi-tolerance runner over a leading batch axis of trajectories (one compilation)."""
    run = inspect.unwrap(run)  # the traced function (a jit inside this top-level jit would take no options)
    one = lambda p0, prob, hyper, tols, lr: run(p0, prob, hyper, tols, lr if has_lr else None)  # noqa: E731
    return jit_quick_compile(jax.vmap(one, in_axes=(0, 0, 0, None, 0)))


def _float_keys(record) -> set:
    """The parameters the driver traces: ``tol``, ``learning_rate`` and the loss's own parameters."""
    own = set(record.constraints or ()) - set(PROBLEM_KEYS) - {"block_elements"}
    return {"tol", "learning_rate"} | own


def _eligible(base, points, metrics, knn_args) -> bool:
    if not isinstance(base, GradientMetricLearner) or set(knn_args) - {"weights"}:
        return False
    record = base._get_record()
    if not record.batchable or record.loss is None:
        return False
    if any(isinstance(m, str) and m not in _DIAGNOSTICS for m in metrics):
        return False
    floats = _float_keys(record)
    for p in points:
        for k, v in p.items():
            if k not in floats or isinstance(v, (bool, numbers.Integral)) or not isinstance(v, numbers.Real):
                return False
    return True


def _prepare(est, X, y, width):
    """The arguments of the fit's ``minimize`` call, from the fit's own plan (:func:`jaxdml.methods.core._plan.plan`,
    as ``solve_loss`` makes it), or None when the fit would not take the plain full-batch path of the driver
    (the method's route, a PCA pre-projection, minibatches, a callback, devices or a probed callable). With the
    default ``pad_to="auto"`` the problem is padded to ``width`` rows (the grid's folds share one program; no
    need for a coarser bucket)."""
    record = est._get_record()
    kw = est._fit_kwargs()
    core = {k: kw.pop(k) for k in ("n_components", "max_iter", "tol", "random_state", "verbose") if k in kw}
    settings = split_settings(record, {k: kw.pop(k) for k in list(kw) if k in SETTINGS})
    hyper = {**inspect.unwrap(record.solve).keywords, **record.defaults, **settings, **kw}
    opts = {k: hyper.pop(k, SETTINGS[k]) for k in SETTINGS}
    if hyper.get("probe") or opts["callback"] is not None or opts["devices"] is not None:
        return None
    classes, codes = np.unique(y, return_inverse=True)
    n_components = resolve_n_components(record, core.get("n_components"), X.shape[1], len(classes))
    opts["pad_to"] = width if opts["pad_to"] == "auto" else opts["pad_to"]
    p = plan(record.loss, record.name, X, codes, len(classes), n_components=n_components,
             random_state=core.get("random_state"), max_iter=core.get("max_iter"), tol=core.get("tol"), verbose=0,
             **opts, **hyper)
    if p.route is not None or p.pre is not None or p.batch_size is not None or p.n_candidates is not None:
        return None
    static, traced = split_hyper(p.hyper)
    lr = p.learning_rate
    config = (p.fn, p.optimizer, p.projection, int(p.max_iter), static, lr is not None, p.param,
              default_patience(p.optimizer, p.params0),
              jax.tree_util.tree_structure((p.params0, p.problem, traced)),
              tuple(np.shape(a) for a in jax.tree_util.tree_leaves((p.params0, p.problem, traced))))
    return config, (p.params0, p.problem, p.tol, 0.0 if lr is None else lr, traced)


def _stack(items):
    """Leaf-wise stack of pytrees, on the host (``jnp.stack`` would compile a program per shape)."""
    return jax.tree_util.tree_map(lambda *a: to_device(np.stack([np.asarray(x) for x in a])), *items)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity masks
        return os.cpu_count() or 1


def _each(run, args, tols, has_lr):
    """``run`` on every trajectory, finished. The first call compiles (or loads) the program; the others
    run concurrently, one thread per core: one trajectory's small operations occupy a single core, and
    the device executes calls from several threads at once."""
    def one(a):
        lr = to_device(a[3], jnp.result_type(float)) if has_lr else None
        return jax.block_until_ready(run(a[0], a[1], a[4], tols, lr))

    first = [one(args[0])]
    workers = min(_cores(), len(args) - 1)
    if workers <= 1:
        return first + [one(a) for a in args[1:]]
    with ThreadPoolExecutor(workers) as pool:
        return first + list(pool.map(one, args[1:]))


def _solve_group(config, args, tols, mode="auto"):
    """Solve every trajectory of one static configuration for every tolerance: a list (one entry per
    trajectory) of lists (one per tolerance) of fit summaries. ``mode="vmap"`` batches the trajectories
    with ``jax.vmap``; "auto" does so on accelerators only. On a CPU the batched loop measured no faster
    than a loop over the trajectories (``benchmarks/bench_tune.py``), and the loop runs its trajectories
    in parallel threads, one per core."""
    param = config[6]
    vectorised = mode == "vmap" or (mode == "auto" and jax.default_backend() != "cpu")
    run = _runner(config, vectorised)
    tols = to_device(tols, jnp.result_type(float))  # converted on the host: no conversion program
    t0 = time.perf_counter()
    if vectorised:
        p0, prob, lr, hyper = _stack([(a[0], a[1], a[3], a[4]) for a in args])
        res = jax.tree_util.tree_map(np.asarray, run(p0, prob, hyper, tols, lr))
    else:  # the same (n_trajectories, n_tols, ...) host arrays from one call per trajectory
        outs = _each(run, args, tols, config[5])
        res = jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(x) for x in a]), *outs)
    seconds = (time.perf_counter() - t0) / (len(args) * len(tols))
    params = res.params.astype(np.float64)
    fits = []
    for i in range(len(args)):
        row = []
        for t in range(len(tols)):
            P = params[i, t]
            L = components_from_metric(0.5 * (P + P.T)) if param == "M" else P
            row.append(dict(L=L, loss=float(res.loss[i, t]), n_iter=int(res.n_iter[i, t]),
                            converged=float(res.converged[i, t]), failed=bool(res.failed[i, t]), time=seconds))
        fits.append(row)
    return fits


def _scores(fits, X, y, folds, points, metrics, knn_args):
    """k-NN accuracies of every grid point on every fold: one batched k-NN per fold."""
    per_fold = [[None] * len(folds) for _ in points]
    for f, (tr, te) in enumerate(folds):
        classes, codes = np.unique(y[tr], return_inverse=True)
        Ls = [fits[(f, i)]["L"] for i in range(len(points))]
        width = max(L.shape[0] for L in Ls)
        Lstack = np.zeros((len(Ls), width, X.shape[1]))
        for i, L in enumerate(Ls):
            Lstack[i, : L.shape[0]] = L
        Ztr, Zte = np.einsum("nd,mpd->mnp", X[tr], Lstack), np.einsum("nd,mpd->mnp", X[te], Lstack)
        for i in range(len(points)):
            per_fold[i][f] = {}
        for m in metrics:
            if isinstance(m, str):
                for i in range(len(points)):
                    per_fold[i][f][m] = float(fits[(f, i)][m])
                continue
            proba = knn_batched(Zte, Ztr, codes, len(classes), int(m), weights=knn_args.get("weights", "uniform"))
            acc = np.mean(classes[np.argmax(proba, axis=2)] == y[te][None, :], axis=1)
            for i in range(len(points)):
                per_fold[i][f][f"{int(m)}-NN"] = float(acc[i])
    return per_fold


@precise
def batched_grid(base, X, y, folds, points, metrics, knn_args, mode="auto"):
    """Per-point, per-fold metric dicts (``[point][fold] -> {name: value}``) computed by vectorised
    fits, or None when the grid does not qualify (the caller then fits one point at a time)."""
    if not _eligible(base, points, metrics, knn_args):
        return None
    tols = list(dict.fromkeys(p["tol"] for p in points)) if all("tol" in p for p in points) else None
    estimators = []
    for point in points:  # every point's values checked once, as its own fit would check them
        est = clone(base).set_params(**point)
        est._validate_params()
        estimators.append(est)
    # every fold padded to one width: the largest training fold, rounded up to a multiple of 16 (a
    # solver's cost grows with the square of the padded rows; one program serves the whole grid)
    width = -(-max(len(tr) for tr, _ in folds) // 16) * 16
    groups = {}
    for f, (tr, _) in enumerate(folds):
        # the preparation depends on the fold only: done once; a grid point's floats replace its values, and
        # the points that differ only in tol share one trajectory
        prep = _prepare(estimators[0], X[tr], y[tr], width)
        if prep is None:
            return None
        seen = {}
        for i, point in enumerate(points):
            config, (params0, problem, tol, lr, traced) = prep
            rest = tuple(sorted((k, v) for k, v in point.items() if k != "tol"))
            if rest not in seen:
                lr = point.get("learning_rate", lr)
                traced = {**traced, **{k: jnp.asarray(v) for k, v in rest if k != "learning_rate"}}
                members = groups.setdefault(config, ([], []))
                seen[rest] = len(members[0])
                members[0].append((params0, problem, tol, lr, traced))
                members[1].append([])
            groups[config][1][seen[rest]].append(((f, i), tols.index(point["tol"]) if tols else 0))
    fits = {}
    for config, (args, keys) in groups.items():
        solved = _solve_group(config, args, tols or [args[0][2]], mode)
        for row, members in zip(solved, keys):
            for key, t in members:
                fits[key] = row[t]
    bad = [k for k, v in fits.items() if v["failed"]]
    if any(fits[k]["n_iter"] == 0 for k in bad):
        raise FloatingPointError("the loss is not finite at the initial point of some fits; check the data scale "
                                 "and hyper-parameters.")
    late = sum(1 for v in fits.values() if not v["converged"])
    if bad:
        warn(f"{len(bad)} of {len(fits)} fits became non-finite; their best finite iterate is used.", RuntimeWarning)
    if late:
        warn(f"{type(base).__name__}: {late} of {len(fits)} fits did not converge in max_iter; increase max_iter.",
             ConvergenceWarning)
    return _scores(fits, X, y, folds, points, metrics, knn_args)
