"""Runtime helpers shared by every entry point: BLAS threads and float64 closed-form calls.

On the CPU, JAX's ``eigh``/``cholesky``/``svd`` call SciPy's LAPACK (OpenBLAS). OpenBLAS's own
worker threads then compete with XLA's thread pool: on a 2-core machine a 256 x 256 ``eigh``
took 0.79 s instead of 4 ms, a 576 x 576 one ~70x longer than needed. jaxdml's entry points
(``fit``, ``minimize``, the closed-form solvers) run under a one-thread BLAS limit; the previous
setting is restored on exit, so the user's own BLAS use is unaffected.
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["single_threaded_blas", "blas_single_threaded", "x64_call", "to_device", "jit_quick_compile",
           "QUICK_COMPILE_OPTIONS"]


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
                jax.block_until_ready(out)
            except Exception:  # non-JAX results
                pass
            return out

    return wrapper


def x64_call(fn, *args, **kwargs):
    """Call a closed-form ``jnp`` solver in float64 (with one BLAS thread).

    Closed-form methods solve small (d x d or N x N) symmetric eigenproblems whose conditioning
    (e.g. a nearly singular within-class scatter) float32 cannot resolve; in float64 they match
    scikit-learn to ~1e-8. Float inputs are cast; results come back as float64 NumPy arrays (string
    leaves unchanged).
    """
    with jax.enable_x64(True), single_threaded_blas():
        # converted on the host, then transferred: jnp.asarray(a, float64) lowers and compiles a
        # conversion program per shape in every process (0.3-1 s of a second process's first fit)
        cast = [to_device(a, np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
        out = fn(*cast, **kwargs)
        # strings (e.g. which eigensolver ran) pass through unchanged
        return jax.tree_util.tree_map(lambda a: a if isinstance(a, str) else np.asarray(a, dtype=np.float64), out)


def to_device(x, dtype=None):
    """``x`` as a device array of ``dtype``: converted on the host, then transferred (``jnp.asarray``
    with a dtype compiles a conversion program per shape; this compiles nothing)."""
    return jax.device_put(np.asarray(x) if dtype is None else np.asarray(x, dtype=np.dtype(dtype)))


#: XLA options, on a CPU, for a program whose compilation is a large part of its cost (the tuning grid's
#: solver: compiled once per process, then run for a fraction of a second). XLA's classic loop-fusion
#: emitter and LLVM's -O2 instead of -O3 compile the grid's NCA/Adam solver on wine in ~0.35 s instead of
#: ~0.75 s; it runs 13-16 ms instead of 12 ms (``benchmarks/bench_tune.py``). The solvers of ordinary fits
#: keep XLA's defaults: the classic emitter saved no compile time for their L-BFGS loops and slowed NCA's
#: compilation on digits.
QUICK_COMPILE_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 2}
_QUICK = {"known": True}


def jit_quick_compile(fn):
    """``jax.jit(fn)``, compiled with :data:`QUICK_COMPILE_OPTIONS` when the default backend is a CPU.
    A jaxlib that does not know one of the options compiles with XLA's defaults instead (found out once
    per process)."""
    plain, quick = jax.jit(fn), jax.jit(fn, compiler_options=QUICK_COMPILE_OPTIONS)

    @functools.wraps(fn)
    def call(*args):
        if _QUICK["known"] and jax.default_backend() == "cpu":
            try:
                return quick(*args)
            except jax.errors.JaxRuntimeError as exc:
                if "compile option" not in str(exc):
                    raise
                _QUICK["known"] = False
        return plain(*args)

    return call
