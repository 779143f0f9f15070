"""One optimisation trajectory, several stopping tolerances.

``tol`` only decides where the optax driver stops: the iterates ``x_0, x_1, ...`` of a fit do not depend on
it. A grid over ``tol`` therefore needs one trajectory per value of the *other* parameters; along it, every
tolerance keeps its own stopping test, its own best iterate and its own iteration count, and is frozen
where its test first holds -- exactly what :func:`jaxdml.solvers.minimize` returns for that tolerance
alone: the loop is composed of the driver's own pieces (its initial state, value and gradient, finiteness
check and stopping tests ``settled``/``stationary``), with the same final evaluation of the last iterate. The trajectory stops when every tolerance has stopped, at
``max_iter`` or at a non-finite loss.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax

from .._runtime._device import jit_quick_compile
from ..solvers._driver import (SolverResult, all_finite, count_trace, has_linesearch_state, initial_state, settled,
                               stationary, value_and_grad_for)
from ..solvers._lbfgs import is_trial_state

__all__ = ["multi_tol_runner"]


def _where(mask, new, old):
    """Per-tolerance select: ``mask`` (T,) against leaves of shape (T, ...)."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b),
                                  new, old)


def _tile(tree, T):
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (T,) + a.shape), tree)


def _trial_body(optimizer, f, vg, projection, patience: int, max_iter: int, tols):
    """The loop body for jaxdml's L-BFGS: every evaluation is a trial point, the accepted ones are the
    iterates x_0 .. x_max_iter (``it`` counts them), as in the driver; nothing is evaluated after the loop."""

    def trial_body(c):
        params, state, it, active = c["params"], c["state"], c["it"], ~c["done"]
        value, grad = vg(params)
        updates, new_state = optimizer.update(grad, state, params, value=value, grad=grad, value_fn=f)
        acc = new_state.accepted
        now = active & acc
        finite = all_finite(value, grad)
        better = now & finite & (value < c["best"])
        small = finite & settled(value, c["prev"], params, c["prev_params"], tols)
        if projection is not None:  # as the driver asks of its L-BFGS along a projected path
            small = small & stationary(value, grad, params, projection, tols)
        stall = jnp.where(now, jnp.where(small, c["stall"] + 1, 0), c["stall"])
        converged_now = now & (stall >= patience)
        new_params = optax.apply_updates(params, updates)
        keep = lambda a, b: jax.tree_util.tree_map(lambda u, w: jnp.where(acc, u, w), a, b)  # noqa: E731
        return dict(
            params=projection(new_params) if projection is not None else new_params,
            state=new_state,  # (jaxdml's L-BFGS keeps its state's dtypes: no cast as for optax's below)
            it=it + acc.astype(it.dtype), prev=jnp.where(acc, value, c["prev"]),
            prev_params=keep(params, c["prev_params"]),
            hist=jnp.where(acc, c["hist"].at[it].set(value), c["hist"]),
            best=jnp.where(better, value, c["best"]),
            best_params=_where(better, _tile(params, tols.shape[0]), c["best_params"]),
            stall=stall, n_iter=jnp.where(now, it, c["n_iter"]),
            converged=c["converged"] | converged_now, failed=c["failed"] | (now & ~finite),
            done=c["done"] | converged_now | (now & ~finite) | (now & (it >= max_iter)),
        )

    return trial_body


@functools.lru_cache(maxsize=32)
def multi_tol_runner(loss_fn, optimizer, projection, max_iter: int, patience: int, static_items: tuple):
    """``run(params0, problem, hyper, tols, learning_rate) -> SolverResult`` with a leading axis of
    ``len(tols)`` on every field (``loss_history`` is the shared trajectory's); jitted, cached per
    static configuration (compiled with :func:`jaxdml._runtime._device.jit_quick_compile`)."""
    static = dict(static_items)

    def run(params0, problem, hyper, tols, learning_rate):
        count_trace()  # a solver runner is traced: counted with the driver's
        f = lambda p: loss_fn(p, problem, **static, **hyper)  # noqa: E731
        state0 = initial_state(optimizer, params0, learning_rate)
        has_ls = has_linesearch_state(state0)
        trial = is_trial_state(state0)
        vg, cached = value_and_grad_for(f, has_ls, projection, state0)
        dtype = jnp.result_type(*jax.tree_util.tree_leaves(params0))
        T = tols.shape[0]
        inf = jnp.asarray(jnp.inf, dtype)

        def cond(c):
            return (c["it"] <= max_iter) & ~jnp.all(c["done"])

        def body(c):
            # Iterations 0 .. max_iter - 1 evaluate the shared iterate and step. If tolerances are still
            # running when they are used up, one more pass (``last``) evaluates the final update, as the
            # driver does after its loop, and takes no step: the loss is compiled once, here.
            params, state, it, active = c["params"], c["state"], c["it"], ~c["done"]
            last = it >= max_iter
            value, grad = vg(params, state=state) if cached else vg(params)
            finite = all_finite(value, grad)
            usable = jnp.where(last, jnp.isfinite(value), finite)  # the last pass needs the value only
            better = active & usable & (value < c["best"])
            best_params = _where(better, _tile(params, T), c["best_params"])
            small = finite & settled(value, c["prev"], params, c["prev_params"], tols)
            if not has_ls:
                small = small & stationary(value, grad, params, projection, tols)
            stall = jnp.where(active, jnp.where(small, c["stall"] + 1, 0), c["stall"])
            converged_now = active & (stall >= patience) & ~last

            def step():
                updates, new_state = optimizer.update(grad, state, params, value=value, grad=grad, value_fn=f)
                new_params = optax.apply_updates(params, updates)
                # the state's dtypes as they came in (older optax returns int32 counters for int64 ones)
                new_state = jax.tree_util.tree_map(lambda a, b: a.astype(b.dtype), new_state, state)
                return (projection(new_params) if projection is not None else new_params), new_state

            new_params, state = jax.lax.cond(last, lambda: (params, state), step)
            step_taken = active & ~last
            return dict(
                params=new_params, state=state, it=jnp.where(last, it, it + 1), prev=value, prev_params=params,
                hist=c["hist"].at[it].set(jnp.where(usable | ~last, value, jnp.nan)),
                best=jnp.where(better, value, c["best"]), best_params=best_params, stall=stall,
                n_iter=jnp.where(step_taken, it + 1, c["n_iter"]), converged=c["converged"] | converged_now,
                failed=c["failed"] | (step_taken & ~finite),
                done=c["done"] | converged_now | ~finite | last,
            )

        zeros_t = jnp.zeros((T,), bool)
        carry = dict(params=params0, state=state0, it=jnp.asarray(0), prev=inf, prev_params=params0,
                     hist=jnp.full((max_iter + 1,), jnp.nan, dtype), best=jnp.full((T,), inf),
                     best_params=_tile(params0, T), stall=jnp.zeros((T,), jnp.asarray(0).dtype),
                     n_iter=jnp.zeros((T,), jnp.asarray(0).dtype), converged=zeros_t, failed=zeros_t, done=zeros_t)
        # A tolerance that converged stopped at an iterate it had evaluated, so its best is final; a failed
        # one keeps its best finite iterate; the others took the last pass.
        loop_body = _trial_body(optimizer, f, vg, projection, patience, max_iter, tols) if trial else body
        c = jax.lax.while_loop(cond, loop_body, carry)
        return SolverResult(c["best_params"], c["best"], c["n_iter"], c["converged"], c["hist"], c["failed"])

    return jit_quick_compile(run)
