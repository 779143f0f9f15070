"""One optimisation driver for every gradient-trained method.

``minimize`` runs the whole loop inside a single jitted ``lax.while_loop``: optax step, optional
projection, best-value tracking, a fixed-size loss history and a stopping test. The compiled
runner is cached per *static* configuration (loss function, optimizer, projection, ``max_iter``,
integer hyper-parameters), while the parameters, the data pytree, float hyper-parameters, ``tol``
and the learning rate are traced arguments: refitting data of the same shape, or changing a float
hyper-parameter, does not recompile.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from optax import tree_utils as otu

from .._runtime._logging import show_progress
from .._runtime._executable_cache import cached_jit, register_name
from .._runtime._device import paused_gc
from .._runtime._device import blas_single_threaded
from ._callbacks import progress, run_with_callback, user_callback
from ._lbfgs import is_trial_state, lbfgs
from ._linesearch import default_patience, has_linesearch_state, uses_linesearch
from ._sharding import data_parallel_objective as _objective
from ._sharding import make_mesh

__all__ = ["SolverResult", "minimize", "make_optimizer", "make_mesh", "split_hyper", "trace_count", "uses_linesearch",
           # the pieces of the full-batch loop, for loops that compose them (tuning/_multitol.py)
           "count_trace", "has_linesearch_state", "initial_state", "value_and_grad_for", "all_finite", "settled",
           "stationary", "default_patience"]


class SolverResult(NamedTuple):
    """What :func:`minimize` returns (all JAX arrays).

    Attributes
    ----------
    params : the best parameters seen (lowest loss, after projection).
    loss : their loss value.
    n_iter : number of optimizer steps taken.
    converged : True when the stopping test (not ``max_iter``) ended the loop.
    loss_history : (max_iter + 1,) loss at each iterate, NaN after the last one.
    failed : True when a non-finite loss or gradient stopped the loop (``params`` is then the last
        finite best iterate).
    """

    params: Any
    loss: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    loss_history: jax.Array
    failed: jax.Array


@functools.lru_cache(maxsize=None)
def make_optimizer(name: str) -> optax.GradientTransformationExtraArgs:
    """A cached default optimizer by name; first-order ones take a traced learning rate.

    ``"lbfgs"`` (:func:`jaxdml.solvers.lbfgs`: backtracking line search, one loss evaluation per loop
    step; for full-batch losses), ``"adam"``, ``"sgd"``
    (with Nesterov momentum 0.9) and ``"adagrad"``. Returning the same object for the same name
    lets every fit with default settings share one compiled runner.
    """
    if name == "lbfgs":
        return register_name(lbfgs(), f"jaxdml.make_optimizer({name!r})")
    if name == "adam":
        opt = optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)
    elif name == "sgd":
        opt = optax.inject_hyperparams(optax.sgd)(learning_rate=1e-2, momentum=0.9, nesterov=True)
    elif name == "adagrad":
        opt = optax.inject_hyperparams(optax.adagrad)(learning_rate=1e-1)
    else:
        raise ValueError(f"Unknown optimizer {name!r}; use 'lbfgs', 'adam', 'sgd', 'adagrad' or an optax transformation.")
    return register_name(optax.with_extra_args_support(opt), f"jaxdml.make_optimizer({name!r})")


def _jit(run, print_every, mesh, callback):
    """The runner's jit: through the executable cache unless it prints, calls back or shards
    (host callbacks and meshes are not part of a cacheable program)."""
    return jax.jit(run) if (print_every or mesh is not None or callback is not None) else cached_jit(run)


def split_hyper(hyper: dict) -> tuple[tuple, dict]:
    """Split hyper-parameters into static ones (Python ints/bools/str/None: shape-affecting,
    part of the compiled configuration) and traced ones (floats and arrays)."""
    static, traced = [], {}
    for k, v in hyper.items():
        if v is None or isinstance(v, (bool, str, numbers.Integral)) or callable(v):
            static.append((k, v))
        elif isinstance(v, (float, np.ndarray, np.generic)):
            traced[k] = jax.device_put(v)  # as jnp.asarray (same dtype, weak type), with nothing to compile
        else:
            traced[k] = jnp.asarray(v)
    return tuple(sorted(static, key=lambda kv: kv[0])), traced


_TRACES = {"count": 0}


def trace_count() -> int:
    """How many times a runner has been traced (compiled) in this process; for tests."""
    return _TRACES["count"]


def count_trace() -> None:
    """Count one trace of a solver runner (every runner calls it inside its traced function)."""
    _TRACES["count"] += 1


def initial_state(optimizer, params0, learning_rate):
    """``optimizer.init(params0)`` with ``learning_rate`` (traced) set in an ``inject_hyperparams`` state."""
    state0 = optimizer.init(params0)
    if learning_rate is not None:
        try:
            state0 = otu.tree_set(state0, learning_rate=jnp.asarray(learning_rate))
        except Exception:
            pass  # optimizer without an injected learning rate
    return state0


def value_and_grad_for(f, has_ls: bool, projection, state0=None):
    """``(vg, cached)``: the loop's value and gradient. An optax line search caches them at the point it
    accepted (``cached``: call ``vg(params, state=state)``); after a projection the iterate is evaluated
    afresh, and so is every trial point of :func:`jaxdml.solvers.lbfgs` (``state0`` tells)."""
    cached = has_ls and projection is None and not is_trial_state(state0)
    return (optax.value_and_grad_from_state(f) if cached else jax.value_and_grad(f)), cached


def all_finite(value, grad):
    """True when the loss value and every gradient entry are finite."""
    leaves = jax.tree_util.tree_leaves(grad)
    return jnp.isfinite(value) & jnp.all(jnp.asarray([jnp.all(jnp.isfinite(g)) for g in leaves]))


def _norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree_util.tree_leaves(tree)))


def settled(value, prev, params, prev_params, tol):
    """The full-batch stopping test between two consecutive iterates ``x_{k-1} -> x_k``:

    * relative change of the loss ``|f_{k-1} - f_k| <= tol * max(|f_k|, 1)``, and
    * relative step ``||x_k - x_{k-1}|| <= sqrt(tol) * max(||x_k||, 1)`` (Frobenius norms).

    The second condition is what makes it a convergence test rather than a "progress became
    small" test: a first-order method with a fixed step size (Adam, SGD) keeps moving by about its
    learning rate while it is away from a stationary point, however little the loss changes per
    step; only steps that have actually shrunk -- as L-BFGS's do near the optimum, where its
    quadratic model holds -- count. (With ``f`` smooth and ``||x_k - x_{k-1}|| = O(sqrt(tol))``, a
    loss change of ``O(tol)`` is the first-order optimality scale of the step.)
    """
    df = jnp.abs(prev - value) <= tol * jnp.maximum(jnp.abs(value), 1.0)
    step = jax.tree_util.tree_map(lambda a, b: a - b, params, prev_params)
    dx = _norm(step) <= jnp.sqrt(tol) * jnp.maximum(_norm(params), 1.0)
    return df & dx


def stationary(value, grad, params, projection, tol):
    """First-order stationarity for optimizers without a line search:
    ``||G|| * max(||x||, 1) <= sqrt(tol) * max(|f|, 1)``, with ``G`` the gradient, or with a
    projection ``x - P(x - g)`` (the projected-gradient map, zero exactly at constrained
    stationary points). Adam, SGD or Adagrad take small steps for reasons of their own (a decayed
    or normalised step size), so a small step alone does not show that no descent is left; for
    L-BFGS the line search itself found no worthwhile step, which covers non-smooth (hinge) and
    projected losses too."""
    if projection is None:
        G = grad
    else:
        G = jax.tree_util.tree_map(lambda a, b: a - b, params,
                                   projection(jax.tree_util.tree_map(lambda a, g: a - g, params, grad)))
    return _norm(G) * jnp.maximum(_norm(params), 1.0) <= jnp.sqrt(tol) * jnp.maximum(jnp.abs(value), 1.0)


def _result(c, f, trial: bool) -> SolverResult:
    """The full-batch loop's result from its final carry ``c``."""
    if trial:  # every iterate x_0 .. x_n was evaluated: n steps, n + 1 values in the history
        n_iter = jnp.maximum(c["it"] - 1, 0)
        return SolverResult(c["best_params"], c["best"], n_iter, c["converged"], c["hist"], c["failed"])
    # The last update produced an iterate that has not been evaluated yet.
    final = f(c["params"])
    ok = jnp.isfinite(final) & ~c["failed"]
    hist = jnp.where(ok, c["hist"].at[c["it"]].set(final), c["hist"])
    better = ok & (final < c["best"])
    params = jax.tree_util.tree_map(lambda new, old: jnp.where(better, new, old), c["params"], c["best_params"])
    best = jnp.where(better, final, c["best"])
    return SolverResult(params, best, c["it"], c["converged"], hist, c["failed"])


@functools.lru_cache(maxsize=256)
def _runner(loss_fn, optimizer, projection, max_iter, patience, static_hyper, print_every, mesh=None,
            callback=None):
    obj = _objective(loss_fn, dict(static_hyper), mesh, False)
    notify = user_callback(callback)

    def run(params0, problem, hyper, tol, learning_rate):
        count_trace()
        f = lambda p: obj(p, problem, hyper, None, None)  # noqa: E731
        state0 = initial_state(optimizer, params0, learning_rate)
        has_ls = has_linesearch_state(state0)
        # jaxdml's L-BFGS proposes trial points: only the evaluations it accepts are iterates, and the
        # loop's one evaluation of the loss is its line search too (no evaluation after the loop)
        trial = is_trial_state(state0)
        vg, cached = value_and_grad_for(f, has_ls, projection, state0)
        dtype = jnp.result_type(*jax.tree_util.tree_leaves(params0))
        inf = jnp.asarray(jnp.inf, dtype)
        last_it = max_iter + 1 if trial else max_iter  # iterates x_0 .. x_max_iter, all evaluated

        def cond(c):
            return (c["it"] < last_it) & ~c["done"]

        def body(c):
            params, state = c["params"], c["state"]
            value, grad = vg(params, state=state) if cached else vg(params)
            updates, state = optimizer.update(
                grad, state, params, value=value, grad=grad, value_fn=f
            )
            acc = state.accepted if trial else jnp.asarray(True)
            finite = all_finite(value, grad)
            hist = jnp.where(acc, c["hist"].at[c["it"]].set(value), c["hist"])
            better = acc & finite & (value < c["best"])
            best_params = jax.tree_util.tree_map(
                lambda new, old: jnp.where(better, new, old), params, c["best_params"]
            )
            small = finite & settled(value, c["prev"], params, c["prev_params"], tol)
            if not has_ls or (trial and projection is not None):
                # a fixed-step method, or jaxdml's L-BFGS along a projected path (whose steps can stay
                # short far from the optimum): also ask for (projected) stationarity
                small = small & stationary(value, grad, params, projection, tol)
            stall = jnp.where(acc, jnp.where(small, c["stall"] + 1, 0), c["stall"])
            best = jnp.where(better, value, c["best"])
            # a step starts from each iterate but the last (x_max_iter of jaxdml's L-BFGS)
            starts = acc & (c["it"] < max_iter)
            progress(starts & (c["it"] % print_every == 0) if print_every else None, c["it"], value)
            if trial:
                jax.lax.cond(starts, lambda: notify(params, c["it"], value), lambda: None)
            else:
                notify(params, c["it"], value)
            new_params = optax.apply_updates(params, updates)
            if projection is not None:
                new_params = projection(new_params)
            converged = stall >= patience
            # the test held at ``params``: stop there rather than one step further
            new_params = jax.tree_util.tree_map(lambda a, b: jnp.where(converged, b, a), new_params, params)
            failed = acc & ~finite
            return dict(
                params=new_params, state=state, it=c["it"] + acc.astype(c["it"].dtype), best=best,
                best_params=best_params, stall=stall, hist=hist, prev=jnp.where(acc, value, c["prev"]),
                prev_params=jax.tree_util.tree_map(lambda a, b: jnp.where(acc, a, b), params, c["prev_params"]),
                done=converged | failed, converged=converged, failed=failed,
            )

        carry = dict(
            params=params0, state=state0, it=jnp.asarray(0), best=inf, best_params=params0, prev=inf,
            prev_params=params0, stall=jnp.asarray(0), hist=jnp.full((max_iter + 1,), jnp.nan, dtype),
            done=jnp.asarray(False), converged=jnp.asarray(False), failed=jnp.asarray(False),
        )
        return _result(jax.lax.while_loop(cond, body, carry), f, trial)

    return _jit(run, print_every, mesh, callback)


@functools.lru_cache(maxsize=256)
def _runner_minibatch(loss_fn, optimizer, projection, max_iter, patience, static_hyper,
                      print_every, batch_size, n_rows, n_candidates=None, mesh=None, callback=None):
    """Minibatch variant: ``max_iter`` optimizer steps, each on ``batch_size`` anchor rows drawn
    without replacement from a fresh permutation every epoch (each anchor is still compared with
    every sample by the loss, or with ``n_candidates`` rows drawn uniformly per step). The history
    holds each step's minibatch loss; the stopping test compares epoch means; the last iterate is
    returned."""
    obj = _objective(loss_fn, dict(static_hyper), mesh, n_candidates is not None)
    notify = user_callback(callback)
    spe = -(-n_rows // batch_size)  # steps per epoch

    def run(params0, problem, hyper, tol, learning_rate, key):
        count_trace()
        state0 = initial_state(optimizer, params0, learning_rate)
        dtype = jnp.result_type(*jax.tree_util.tree_leaves(params0))
        mask = problem.sample_mask

        def batch_loss(p, idx, cidx):
            return obj(p, problem, hyper, idx, cidx)

        vg = jax.value_and_grad(batch_loss)
        ckey = jax.random.fold_in(key, 2**31 - 1)

        def epoch_order(epoch):
            perm = jax.random.permutation(jax.random.fold_in(key, epoch), n_rows)
            perm = perm[jnp.argsort(mask[perm] <= 0, stable=True)]  # real rows first
            # int32 whatever jax_enable_x64 says: the loop carry holds the order as int32
            return jnp.concatenate([perm, perm[: spe * batch_size - n_rows]]).astype(jnp.int32)

        def cond(c):
            return (c["it"] < max_iter) & ~c["done"]

        def body(c):
            it = c["it"]
            pos = it % spe
            order = jax.lax.cond(pos == 0, lambda: epoch_order(it // spe), lambda: c["order"])
            idx = jax.lax.dynamic_slice(order, (pos * batch_size,), (batch_size,))
            w = jnp.sum(mask[idx])
            cidx = None
            if n_candidates is not None:
                cidx = jax.random.randint(jax.random.fold_in(ckey, it), (n_candidates,), 0, n_rows)
            params, state = c["params"], c["state"]
            value, grad = vg(params, idx, cidx)
            finite = all_finite(value, grad)
            updates, new_state = optimizer.update(grad, state, params, value=value, grad=grad,
                                                  value_fn=lambda p: batch_loss(p, idx, cidx))
            new_params = optax.apply_updates(params, updates)
            if projection is not None:
                new_params = projection(new_params)
            keep = finite & (w > 0)
            params = jax.tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), new_params, params)
            state = jax.tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), new_state, state)
            hist = c["hist"].at[it].set(jnp.where(w > 0, value, jnp.nan))
            tot = c["tot"] + jnp.where(keep, value * w, 0.0)
            wsum = c["wsum"] + jnp.where(keep, w, 0.0)
            end = (pos == spe - 1) | (it == max_iter - 1)
            epoch_mean = tot / jnp.maximum(wsum, 1.0)
            small = epoch_mean > c["best"] - tol * jnp.maximum(jnp.abs(epoch_mean), 1.0)
            stall = jnp.where(end, jnp.where(small, c["stall"] + 1, 0), c["stall"])
            best = jnp.where(end, jnp.minimum(c["best"], epoch_mean), c["best"])
            progress(end & ((it // spe) % max(1, print_every // 10) == 0) if print_every else None, it, epoch_mean)
            notify(params, it, value)
            converged = stall >= patience
            zero = jnp.zeros((), dtype)
            return dict(params=params, state=state, it=it + 1, order=order, hist=hist,
                        tot=jnp.where(end, zero, tot), wsum=jnp.where(end, zero, wsum),
                        last=jnp.where(end, epoch_mean, c["last"]), best=best, stall=stall,
                        done=converged | ~finite, converged=converged, failed=~finite)

        zero = jnp.zeros((), dtype)
        c = dict(params=params0, state=state0, it=jnp.asarray(0),
                 order=jnp.zeros(spe * batch_size, jnp.int32), hist=jnp.full((max_iter + 1,), jnp.nan, dtype),
                 tot=zero, wsum=zero, last=jnp.asarray(jnp.nan, dtype), best=jnp.asarray(jnp.inf, dtype),
                 stall=jnp.asarray(0), done=jnp.asarray(False), converged=jnp.asarray(False),
                 failed=jnp.asarray(False))
        c = jax.lax.while_loop(cond, body, c)
        return SolverResult(c["params"], c["last"], c["it"], c["converged"], c["hist"], c["failed"])

    return _jit(run, print_every, mesh, callback)


@blas_single_threaded
def minimize(
    loss_fn: Callable,
    params0,
    problem,
    *,
    optimizer: Optional[optax.GradientTransformation] = None,
    projection: Optional[Callable] = None,
    max_iter: int = 100,
    tol: float = 1e-5,
    patience: int | None = None,
    learning_rate: float | None = None,
    hyper: Optional[dict] = None,
    verbose: int = 0,
    batch_size: int | None = None,
    key=None,
    n_candidates: int | None = None,
    devices=None,
    callback: Optional[Callable] = None,
) -> SolverResult:
    """Minimise ``loss_fn(params, problem, **hyper)`` with an optax optimizer.

    Parameters
    ----------
    loss_fn : callable
        Pure scalar loss ``loss_fn(params, problem, **hyper)``.
    params0 : array or pytree
        Initial parameters.
    problem : pytree
        The data (e.g. from :func:`jaxdml.make_problem`); traced, so new data of the same shapes
        reuse the compiled loop.
    optimizer : optax.GradientTransformation, default L-BFGS
        Any optax transformation; the default is :func:`jaxdml.solvers.lbfgs`, whose line search
        runs in this loop (only the points it accepts are iterates: they make ``n_iter``, the history
        and the stopping test). Optimizers built with ``optax.inject_hyperparams`` get
        ``learning_rate`` as traced state.
    projection : callable, optional
        Applied to the parameters after every step (projected gradient), e.g.
        :func:`jaxdml.projections.projection_psd`.
    max_iter : int
        Maximum number of steps (static: it sizes the loss history).
    tol : float
        Full batch: stop (``converged=True``) when, for ``patience`` consecutive steps, the loss
        changed by at most ``tol * max(|loss|, 1)`` *and* the step was at most
        ``sqrt(tol) * max(||params||, 1)`` (Frobenius); the iterate where the test held is
        returned; optimizers without a line search (Adam, SGD, Adagrad), and jaxdml's L-BFGS with a
        projection, must moreover satisfy
        ``||G|| * max(||params||, 1) <= sqrt(tol) * max(|loss|, 1)`` with ``G`` the gradient (the
        projected-gradient map ``x - P(x - g)`` with a projection). A first-order optimizer that
        merely slowed down therefore does not report convergence. Minibatch: stop when the epoch-mean loss has not improved on the best
        epoch mean by more than ``tol * max(|loss|, 1)`` for ``patience`` epochs (a plateau test
        on a stochastic estimate).
    patience : int, optional
        Default 2 for optimizers with a line search, 10 otherwise.
    learning_rate : float, optional
        Overrides the learning rate of an ``inject_hyperparams`` optimizer (traced).
    hyper : dict, optional
        Loss hyper-parameters. Floats/arrays are traced; Python ints, bools and strings are static.
    verbose : int
        If > 0, print the loss every ``verbose`` iterations (every 10 when ``verbose == 1``).
    batch_size : int, optional
        Minibatch training: each step evaluates the loss on ``batch_size`` shuffled anchor rows
        (the loss must accept ``anchors=``; each anchor is still compared with every sample, so the
        per-anchor terms are exact). ``max_iter`` still counts optimizer steps; rows are drawn
        without replacement from a new permutation each epoch; the history holds the minibatch
        losses, the stopping test compares epoch means, and the last iterate is returned.
        Requires a first-order optimizer (not L-BFGS).
    key : jax.random key, optional
        Shuffling key for minibatch training (default ``jax.random.key(0)``).
    n_candidates : int, optional
        Minibatch only: each step draws this many rows uniformly as the candidate set the loss
        compares anchors with (the loss must accept ``candidates=``), instead of every sample.
    devices : sequence of jax devices, "all" or None
        Data parallelism: anchors (the batch, or all rows) are split across these devices with
        ``shard_map``; data and parameters are replicated and XLA all-reduces the gradient.
        ``problem.X.shape[0]`` (full batch) or ``batch_size`` must be divisible by their number
        (``jaxdml.fit`` pads accordingly). None uses one device.

    Returns
    -------
    SolverResult
    """
    optimizer = make_optimizer("lbfgs") if optimizer is None else optimizer
    if not isinstance(optimizer, optax.GradientTransformationExtraArgs):
        optimizer = optax.with_extra_args_support(optimizer)
    linesearch = uses_linesearch(optimizer, params0)
    static_hyper, traced = split_hyper(hyper or {})
    print_every = 0 if not verbose else (10 if verbose == 1 else int(verbose))
    show_progress(verbose)
    # host-side casts (NumPy scalars are valid jit arguments): no conversion program to compile
    lr = None if learning_rate is None else np.asarray(learning_rate, jnp.result_type(float))
    tol = np.asarray(tol, jnp.result_type(float))
    n_rows = int(problem.X.shape[0])
    mesh = None
    if devices is not None:
        devs = jax.devices() if isinstance(devices, str) and devices == "all" else list(devices)
        if len(devs) > 1:
            mesh = make_mesh(devs)
    n_dev = 1 if mesh is None else mesh.devices.size
    if batch_size is not None:
        if linesearch:
            raise ValueError("Minibatch training needs a first-order optimizer (e.g. 'adam'), not L-BFGS.")
        batch_size = int(min(batch_size, n_rows))
        if batch_size % n_dev:
            raise ValueError(f"batch_size={batch_size} must be divisible by the {n_dev} devices.")
        run = _runner_minibatch(loss_fn, optimizer, projection, int(max_iter), int(patience or 3),
                                static_hyper, print_every, batch_size, n_rows,
                                None if n_candidates is None else int(n_candidates), mesh, callback)
        key = jax.random.key(0) if key is None else key
        return run_with_callback(callback, run, params0, problem, traced, tol, lr, key)
    if n_candidates is not None:
        raise ValueError("n_candidates needs minibatch training (set batch_size).")
    if n_rows % n_dev:
        raise ValueError(f"The {n_rows} rows must be divisible by the {n_dev} devices (pad the problem).")
    if patience is None:
        patience = 2 if linesearch else 10
    run = _runner(loss_fn, optimizer, projection, int(max_iter), int(patience), static_hyper, print_every, mesh,
                  callback)
    with paused_gc():  # a runner that prints, calls back or shards is traced by jax.jit itself, here
        return run_with_callback(callback, run, params0, problem, traced, tol, lr)
