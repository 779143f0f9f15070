"""Keep SciPy's OpenBLAS single-threaded while JAX runs LAPACK-backed kernels.

On the CPU, JAX's ``eigh``/``cholesky``/``svd`` call SciPy's LAPACK (OpenBLAS). OpenBLAS's own
worker threads then compete with XLA's thread pool: on a 2-core machine a 256 x 256 ``eigh``
took 0.79 s instead of 4 ms. jaxdml's entry points (``fit``, ``minimize``, the closed-form
solvers) run under this limit; the previous setting is restored on exit, so the user's own BLAS
use is unaffected.
"""

from __future__ import annotations

import contextlib
import functools


@functools.lru_cache(maxsize=1)
def _controller():
    try:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController()
    except Exception:  # pragma: no cover - threadpoolctl missing or unsupported platform
        return None


@contextlib.contextmanager
def single_threaded_blas():
    """Context manager limiting BLAS libraries to one thread (no-op if unavailable)."""
    ctl = _controller()
    if ctl is None:
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield


def blas_single_threaded(fn):
    """Decorator: run ``fn`` (and wait for its JAX results) under :func:`single_threaded_blas`."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with single_threaded_blas():
            out = fn(*args, **kwargs)
            try:
                import jax

                jax.block_until_ready(out)
            except Exception:  # non-JAX results
                pass
            return out

    return wrapper
