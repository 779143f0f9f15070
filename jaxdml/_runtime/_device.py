"""Runtime helpers shared by every entry point: BLAS threads, garbage-collector pauses while
programs are traced and compiled, and float64 closed-form calls.

On the CPU, JAX's ``eigh``/``cholesky``/``svd`` call SciPy's LAPACK (OpenBLAS). OpenBLAS's own
worker threads then compete with XLA's thread pool: on a 2-core machine a 256 x 256 ``eigh``
took 0.79 s instead of 4 ms, a 576 x 576 one ~70x longer than needed. jaxdml's entry points
(``fit``, ``minimize``, the closed-form solvers) run under a one-thread BLAS limit; the previous
setting is restored on exit, so the user's own BLAS use is unaffected.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import os
import threading

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["single_threaded_blas", "blas_single_threaded", "paused_gc", "x64_call", "to_device", "jit_quick_compile",
           "QUICK_COMPILE_OPTIONS", "QUICK_COMPILE_MAX_ELEMENTS", "quick_compile_options", "quick_compile_applies",
           "call_quick", "brief_programs"]


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


_GC = {"depth": 0, "resume": False}
_GC_LOCK = threading.Lock()


@contextlib.contextmanager
def paused_gc():
    """Context manager: Python's cyclic garbage collector does not run inside it.

    Tracing, lowering and compiling a solver allocates hundreds of thousands of small Python
    objects; each allocation threshold crossed starts a collection, and the older generations'
    ones scan every object of the process (JAX's own modules included): about 40 collections and
    80 ms of a first LMNN fit on wine (0.77 s in all). Reference counting still frees what is
    unreachable; cycles wait for the next collection after the block. Re-entrant and thread-safe:
    the collector is re-enabled when the outermost block (of any thread) ends, and only if it was
    enabled when the first began."""
    with _GC_LOCK:
        if _GC["depth"] == 0:
            _GC["resume"] = gc.isenabled()
            gc.disable()
        _GC["depth"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC["depth"] -= 1
            if _GC["depth"] == 0 and _GC["resume"]:
                gc.enable()


def x64_call(fn, *args, **kwargs):
    """Call a closed-form ``jnp`` solver in float64 (with one BLAS thread).

    Closed-form methods solve small (d x d or N x N) symmetric eigenproblems whose conditioning
    (e.g. a nearly singular within-class scatter) float32 cannot resolve; in float64 they match
    scikit-learn to ~1e-8. Float inputs are cast; results come back as float64 NumPy arrays (string
    leaves unchanged).
    """
    with jax.enable_x64(True), single_threaded_blas(), paused_gc():
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


def as_device(x, dtype=None):
    """:func:`to_device` for host values; a device array stays where it is (cast there when its dtype is not
    ``dtype``), so that an accelerator's arrays never make a round trip through the host."""
    if isinstance(x, jax.Array):
        return x if dtype is None or x.dtype == np.dtype(dtype) else x.astype(dtype)
    return to_device(x, dtype)


#: XLA options, on a CPU, for a program whose compilation is a large part of its cost (the tuning grid's
#: solver: compiled once per process, then run for a fraction of a second). XLA's classic loop-fusion
#: emitter and LLVM's -O2 instead of -O3 compile the grid's NCA/Adam solver on wine in ~0.35 s instead of
#: ~0.75 s; it runs 13-16 ms instead of 12 ms (``benchmarks/bench_tune.py``). The solvers of ordinary fits
#: take them on small data only (:data:`QUICK_COMPILE_MAX_ELEMENTS`): on digits (1617 x 64) NCA's L-BFGS
#: program compiles 0.3 s faster with them but runs 23 % slower.
QUICK_COMPILE_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 2}
_QUICK = {"known": True}

#: On a CPU, every program of the executable cache (:func:`jaxdml._runtime._executable_cache.cached_jit`: the
#: solvers of ordinary fits) whose traced arguments hold at most this many elements in all is compiled
#: with :data:`QUICK_COMPILE_OPTIONS` too: on such data the compile is most of a fit's cost. The bound
#: is where a first fit and nine more of the same shape in one process (a 10-fold cross-validation)
#: stop gaining (``benchmarks/bench_compile.py``, 3-class ``make_classification``, quick vs default
#: options, seconds): NCA 1.08 vs 1.63 at 180 x 13, 2.25 vs 2.28 at 405 x 20, 3.44 vs 3.96 at 630 x 26,
#: 7.2 vs 6.2 at 990 x 32 (each run 15-40 % slower, each compile 0.6-0.9 s faster); LMNN 0.97 vs 1.45,
#: 1.26 vs 2.11, 1.83 vs 2.11, 4.17 vs 4.34; ITML level or faster throughout. A single first fit
#: gains at every size measured (up to 1530 x 40).
QUICK_COMPILE_MAX_ELEMENTS = 16_384

#: set inside :func:`brief_programs` (per thread and task)
_BRIEF = contextvars.ContextVar("jaxdml_brief_programs", default=False)


@contextlib.contextmanager
def brief_programs():
    """Within it, every program of the executable cache compiles with :data:`QUICK_COMPILE_OPTIONS` on a
    CPU, whatever the size of its arguments: for a solver whose programs the quick options compile faster and
    run no slower, where the size rule (:data:`QUICK_COMPILE_MAX_ELEMENTS`, set by NCA's dense softmax, which
    runs 23 % slower with them) would leave XLA's defaults. LMNN's active-set phases (above 4096 rows;
    ``benchmarks/PROTOCOL.md``, round 19): the L-BFGS program on 1 M impostor pairs of the 18 000-row stand-in
    of ``benchmarks/bench_scale_matrix.py`` compiles in 0.8 s instead of 1.25 s, and runs 7 warm steps in 0.21
    - 0.24 s instead of 0.24 - 0.28 s; 160 steps on 40 780 rows of electricity took 2.7 and 3.9 s against 2.8
    and 3.6 s (two runs each); 10 steps on 8 M pairs 8.5 - 9.3 s against 10.8 - 11.6 s."""
    token = _BRIEF.set(True)
    try:
        yield
    finally:
        _BRIEF.reset(token)


def quick_compile_options() -> dict:
    """:data:`QUICK_COMPILE_OPTIONS` less the ones the user set in ``XLA_FLAGS`` (theirs win; a
    compile option would override the flag)."""
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in QUICK_COMPILE_OPTIONS.items() if f"--{k}=" not in flags}


def quick_compile_applies(leaves) -> bool:
    """Whether a program traced on these argument leaves is compiled with the quick options: a CPU
    backend, a jaxlib that knows them, options left to set (:func:`quick_compile_options`), and at
    most :data:`QUICK_COMPILE_MAX_ELEMENTS` array elements in all (Python scalars count as one), or any
    size inside :func:`brief_programs`."""
    if not _QUICK["known"] or jax.default_backend() != "cpu" or not quick_compile_options():
        return False
    return _BRIEF.get() or sum(int(getattr(x, "size", 1)) for x in leaves) <= QUICK_COMPILE_MAX_ELEMENTS


def call_quick(quick, plain, *args, **kwargs):
    """``quick(*args, **kwargs)`` (a jitted function with :data:`QUICK_COMPILE_OPTIONS`), or ``plain``
    when this jaxlib does not know one of the options (found out once per process)."""
    if _QUICK["known"]:
        try:
            return quick(*args, **kwargs)
        except jax.errors.JaxRuntimeError as exc:
            if "compile option" not in str(exc):
                raise
            _QUICK["known"] = False
    return plain(*args, **kwargs)


def jit_quick_compile(fn):
    """``jax.jit(fn)``, compiled with :func:`quick_compile_options` when the default backend is a CPU.
    A jaxlib that does not know one of the options compiles with XLA's defaults instead (found out once
    per process)."""
    options = quick_compile_options()
    plain, quick = jax.jit(fn), jax.jit(fn, compiler_options=options)

    @functools.wraps(fn)
    def call(*args):
        if options and jax.default_backend() == "cpu":
            return call_quick(quick, plain, *args)
        return plain(*args)

    return call
