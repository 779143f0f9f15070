"""Host callbacks of the jitted optimisation loops: progress lines and the user's per-step callback."""

from __future__ import annotations

import jax

from .._runtime._logging import progress_line

__all__ = ["progress", "user_callback", "run_with_callback"]


def progress(show, it, value):
    """A progress line on the ``jaxdml`` logger when ``show`` (traced bool) holds; None: never."""
    if show is not None:
        jax.lax.cond(show, lambda: jax.debug.callback(progress_line, it, value), lambda: None)


#: id(user callback) -> the first exception it raised during the current run (re-raised by minimize)
CALLBACK_ERRORS: dict = {}


def user_callback(callback):
    """``callback(params, n_iter, loss)`` on the host, from inside the jitted loop (None: no-op).

    An exception of the callback is kept (later steps skip the callback) and :func:`minimize`
    raises it after the run, instead of a runtime error from inside the compiled loop."""
    if callback is None:
        return lambda params, it, value: None
    key = id(callback)

    def host(p, i, v):
        if key in CALLBACK_ERRORS:
            return
        try:
            callback(p, int(i), float(v))
        except Exception as exc:  # noqa: BLE001 - re-raised on the caller's thread
            CALLBACK_ERRORS[key] = exc

    def call(params, it, value):
        jax.debug.callback(host, params, it, value)

    return call


def run_with_callback(callback, run, *args):
    """``run(*args)`` (a compiled loop that calls ``callback``), then wait for its host callbacks and
    re-raise the first exception ``callback`` raised during this run."""
    if callback is None:
        return run(*args)
    CALLBACK_ERRORS.pop(id(callback), None)  # a fresh run: no error of an earlier one
    res = run(*args)
    jax.effects_barrier()
    exc = CALLBACK_ERRORS.pop(id(callback), None)
    if exc is not None:
        raise exc
    return res
