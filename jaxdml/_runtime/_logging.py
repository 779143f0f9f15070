"""The ``jaxdml`` logger: progress of the solvers when ``verbose`` is set.

Progress lines (iteration, loss, elapsed time) go to ``logging.getLogger("jaxdml")`` at INFO level.
A fit with ``verbose > 0`` makes sure they are seen: when the logger has no handler of its own it
gets one that writes to standard error. Configure the logger yourself (handlers, level, format)
to route the lines elsewhere; jaxdml then leaves it alone.
"""

from __future__ import annotations

import logging
import sys
import time

__all__ = ["logger", "show_progress", "progress_line", "log_history"]

logger = logging.getLogger("jaxdml")
_clock = {"start": time.perf_counter()}


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a line is logged (as ``logging.lastResort`` does),
    so that a later fit under ``contextlib.redirect_stderr`` or pytest's capture writes where
    stderr points then, not to the stream of the first verbose fit (stale or closed)."""

    def __init__(self):
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # set by StreamHandler.__init__; the stream is looked up on each line
        pass


def show_progress(verbose) -> None:
    """Prepare for a verbose fit: a stderr handler if the user configured none; restart the clock."""
    _clock["start"] = time.perf_counter()
    if not verbose:
        return
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)


def progress_line(it, value) -> None:
    """One progress line (called from inside jitted loops through ``jax.debug.callback``)."""
    logger.info("  iter %5d  loss % .6e  %8.2f s", int(it), float(value), time.perf_counter() - _clock["start"])


def log_history(name: str, history, every: int, *, n_iter: int, converged: bool) -> None:
    """Progress lines of a solver that reports its loss history only at the end, and a summary."""
    every = 10 if every is True or every == 1 else max(int(every), 1)
    for it in range(0, len(history), every):
        logger.info("  iter %5d  loss % .6e", it, float(history[it]))
    logger.info("%s: %d iterations, %s, %.2f s", name, n_iter, "converged" if converged else "not converged",
                time.perf_counter() - _clock["start"])
