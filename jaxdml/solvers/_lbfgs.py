"""L-BFGS as a one-evaluation-per-step optax transformation: the line search runs in the caller's loop.

The method is the textbook one. The direction ``d = -H g`` is the one of the two-loop recursion
(Nocedal & Wright, *Numerical Optimization*, 2nd ed., Algorithm 7.4) over the last ``memory_size``
pairs ``s_i = x_{i+1} - x_i``, ``y_i = g_{i+1} - g_i``, with the initial scaling
``H_0 = (s^T y / y^T y) I`` of the newest pair (their eq. 7.20), computed in the equivalent compact form
(:func:`_direction`); without a pair, ``d = -g / ||g||`` (a unit step along steepest descent).
The step ``t`` starts at 1 and backtracks (their Algorithm 3.1) until the Armijo condition
``f(x_t) <= f(x) + c1 g^T (x_t - x)`` holds, ``x_t = x + t d`` (or its projection, when the caller
projects: the condition is then the projected-arc one): a rejected ``t`` is replaced by the minimiser of the quadratic through ``f(x)``, ``g^T d`` and ``f(x_t)``, kept within
``[0.1 t, 0.5 t]`` (their section 3.5); a non-finite ``f(x_t)`` gives ``0.1 t``. A pair enters the memory
only if ``s^T y > eps ||s|| ||y||``, the curvature that keeps ``H`` positive definite (their section 7.2);
Armijo alone does not ensure it.

What is not textbook is where the evaluations happen. ``update(grad, state, params, value=f(params))``
is called once per evaluation of the loss, at the point the previous call proposed, and returns the
step to the next point to evaluate: the next trial of the line search, or, when ``params`` passed
Armijo, the first trial along the new direction. ``state.accepted`` tells whether ``params`` became the
new iterate. The caller's loop therefore holds the only call of the loss and its gradient, and no loop
is nested in it -- unlike ``optax.lbfgs``, whose zoom line search evaluates the loss in its own loop, at
three call sites: with it, the driver's compiled program held four copies of the loss (value and
gradient three times, and the value of the last iterate once); with this one it holds one, and the
first fit of a process (tracing and compiling) is shorter (``benchmarks/bench_lbfgs.py``).

A caller that projects the points proposed (the driver's ``projection``) gets a heuristic rather than a
theory: an accepted step that the projection shortened to under half of ``t d`` clears the memory (at
the boundary of the feasible set the quasi-Newton model does not describe the projected path, and
the next step is a projected steepest-descent one), and the driver asks for projected stationarity
before it reports convergence.

When ``max_linesearch_steps`` trials all fail, the memory is cleared and the search restarts along
steepest descent; when that fails too, the next point proposed is the iterate itself (accepted, with a
zero step), which a stopping test on the change of the iterates reads as "no descent left". In a plain
optax loop the losses evaluated are therefore not monotone (rejected trials are evaluated too); the
accepted ones are.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jax.scipy.linalg import solve_triangular

__all__ = ["lbfgs", "LbfgsState", "is_trial_state"]


class LbfgsState(NamedTuple):
    """The iterate, the line search along its direction, and the memory of pairs."""

    started: jax.Array  # an iterate exists (the first evaluation is accepted as x_0)
    accepted: jax.Array  # the point evaluated last became the iterate
    resting: jax.Array  # the point proposed is the iterate itself (both searches failed)
    anchor: jax.Array  # the iterate x, flattened
    f0: jax.Array  # f(x)
    g0: jax.Array  # grad f(x), flattened
    direction: jax.Array  # d
    slope: jax.Array  # g^T d < 0
    step: jax.Array  # t of the trial proposed
    trials: jax.Array  # trials rejected along d so far
    count: jax.Array  # pairs stored since the memory was last cleared
    s: jax.Array  # (memory_size, n), oldest first: the pairs in use are the last min(count, memory_size)
    y: jax.Array  # (memory_size, n)


def is_trial_state(state) -> bool:
    """True for an optimizer state whose ``update`` proposes points to evaluate (this module's L-BFGS):
    only the evaluations with ``accepted`` set are iterates."""
    return isinstance(state, LbfgsState)


def _direction(g, gg, used, S, Y):
    """``-H g`` from the compact form of the L-BFGS matrix (Byrd, Nocedal & Schnabel 1994, Theorem 2.2):
    ``H = gamma I + [S  gamma Y] [[R^-T (D + gamma Y^T Y) R^-1, -R^-T], [-R^-1, 0]] [S^T; gamma Y^T]``
    with ``R`` the upper triangle of ``S^T Y`` and ``D`` its diagonal; the pairs are the rows of ``S``
    and ``Y``, oldest first, the last ``used`` of them in use. A few matrix products and two
    triangular solves: the same ``H g`` as the two-loop recursion, in far fewer compiled kernels."""
    m = S.shape[0]
    live = jnp.arange(m) >= m - used
    S = jnp.where(live[:, None], S, 0.0)
    Y = jnp.where(live[:, None], Y, 0.0)
    SY = S @ jnp.concatenate([S, Y]).T  # (m, 2m): [S S^T | S Y^T]
    sy, YY = SY[:, m:], Y @ Y.T
    ab = jnp.concatenate([S, Y]) @ g
    a, b = ab[:m], ab[m:]
    diag = jnp.diagonal(sy)
    R = jnp.where(jnp.triu(jnp.ones((m, m), bool)), sy, 0.0) + jnp.diag(jnp.where(live, 0.0, 1.0))
    newest_sy, newest_yy = diag[m - 1], YY[m - 1, m - 1]
    gamma = jnp.where(used > 0, newest_sy / jnp.where(newest_yy > 0, newest_yy, 1.0),
                      1.0 / jnp.maximum(jnp.sqrt(gg), jnp.finfo(g.dtype).tiny))
    u = solve_triangular(R, a, lower=False)
    p1 = solve_triangular(R, diag * u + gamma * (YY @ u) - gamma * b, lower=False, trans=1)
    return -(gamma * g + jnp.concatenate([S, Y]).T @ jnp.concatenate([p1, -gamma * u]))


def lbfgs(memory_size: int = 10, max_linesearch_steps: int = 20, c1: float = 1e-4
          ) -> optax.GradientTransformationExtraArgs:
    """L-BFGS with a backtracking Armijo line search, one loss evaluation per ``update``.

    ``update(grad, state, params, *, value)``: ``grad`` and ``value`` are the loss's gradient and value
    at ``params``, the point the previous update proposed (any point, the first time); the returned
    update moves to the next point to evaluate. See the module docstring.
    """
    m = int(memory_size)
    max_trials = int(max_linesearch_steps)

    def init(params):
        flat, _ = ravel_pytree(params)
        n, dt = flat.shape[0], flat.dtype
        vec = jnp.zeros((n,), dt)
        no = jnp.asarray(False)
        return LbfgsState(started=no, accepted=no, resting=no, anchor=vec, f0=jnp.asarray(jnp.inf, dt), g0=vec,
                          direction=vec, slope=jnp.zeros((), dt), step=jnp.ones((), dt),
                          trials=jnp.asarray(0, jnp.int32), count=jnp.asarray(0, jnp.int32),
                          s=jnp.zeros((m, n), dt), y=jnp.zeros((m, n), dt))

    def update(updates, state, params=None, *, value, **extra):
        del extra
        x, unravel = ravel_pytree(params)
        g, _ = ravel_pytree(updates)
        dt = x.dtype
        v = jnp.asarray(value, dt)
        tiny = jnp.finfo(dt).tiny
        moved = x - state.anchor
        # every inner product of this step from one Gram matrix (one kernel, not one per product)
        V = jnp.stack([g, state.g0, moved, state.direction])
        G = V @ V.T
        gg, g0g0, mm, gg0, gm, g0m = G[0, 0], G[1, 1], G[2, 2], G[0, 1], G[0, 2], G[1, 2]
        # the caller's projection shortened the step to less than half of t d: near the boundary of the
        # feasible set the quasi-Newton model does not describe the projected path
        clipped = state.started & (mm < 0.25 * state.step ** 2 * G[3, 3])
        finite = jnp.isfinite(v) & jnp.isfinite(gg)  # gg is finite iff every entry of g is
        predicted = g0m  # g^T (x_t - x): t g^T d without a projection
        armijo = finite & (predicted < 0) & (v <= state.f0 + c1 * predicted)
        accepted = ~state.started | state.resting | armijo

        # accepted: a pair (if it has curvature), then the new direction from the new iterate
        sy = gm - g0m  # s^T (g - g0)
        yy = jnp.maximum(gg - 2.0 * gg0 + g0g0, 0.0)
        keep = state.started & armijo & (sy > jnp.finfo(dt).eps * jnp.sqrt(mm * yy))
        S = jnp.where(keep, jnp.concatenate([state.s[1:], moved[None]]), state.s)
        Y = jnp.where(keep, jnp.concatenate([state.y[1:], (g - state.g0)[None]]), state.y)
        count_acc = jnp.where(clipped, 0, state.count + keep.astype(jnp.int32))
        d_acc = _direction(g, gg, jnp.minimum(count_acc, m), S, Y)
        slope_acc = d_acc @ g
        descent = slope_acc < 0  # a stale memory can lose descent: steepest descent instead
        gnorm = jnp.maximum(jnp.sqrt(gg), tiny)
        d_acc = jnp.where(descent, d_acc, -g / gnorm)
        slope_acc = jnp.where(descent, slope_acc, -gg / gnorm)

        # rejected: a shorter trial; after max_trials, steepest descent with an empty memory; then rest
        t = state.step
        curv = v - state.f0 - state.slope * t  # f(x_t) above its linear model
        tq = -state.slope * t * t / (2.0 * jnp.where(curv > 0, curv, 1.0))
        shorter = jnp.where(jnp.isfinite(v) & (curv > 0), jnp.clip(tq, 0.1 * t, 0.5 * t), 0.1 * t)
        exhausted = state.trials + 1 >= max_trials
        restart = exhausted & (state.count > 0)
        rest = exhausted & (state.count == 0)
        g0norm = jnp.maximum(jnp.sqrt(g0g0), tiny)

        anchor = jnp.where(accepted, x, state.anchor)
        direction = jnp.where(accepted, d_acc, jnp.where(restart, -state.g0 / g0norm, state.direction))
        step = jnp.where(accepted | restart, jnp.ones((), dt), shorter)
        new = LbfgsState(
            started=jnp.asarray(True), accepted=accepted, resting=~accepted & rest, anchor=anchor,
            f0=jnp.where(accepted, v, state.f0), g0=jnp.where(accepted, g, state.g0), direction=direction,
            slope=jnp.where(accepted, slope_acc, jnp.where(restart, -g0g0 / g0norm, state.slope)),
            step=step, trials=jnp.where(accepted | restart, 0, state.trials + 1).astype(jnp.int32),
            count=jnp.where(accepted, count_acc, jnp.where(restart, 0, state.count)).astype(jnp.int32),
            s=S, y=Y,
        )
        target = jnp.where(new.resting, anchor, anchor + step * direction)
        return unravel(target - x), new

    return optax.GradientTransformationExtraArgs(init, update)
