"""Library-wide settings: the memory budget of blockwise pairwise computations and the precision of
float32 matrix products on accelerators."""

from __future__ import annotations

import contextlib
import functools
import numbers

import jax

from ._runtime import _executable_cache

__all__ = ["set_memory_budget", "get_memory_budget", "memory_budget", "block_elements", "set_matmul_precision",
           "get_matmul_precision", "matmul_precision", "precise", "set_executable_cache", "get_executable_cache",
           "set_euclidean_blend", "get_euclidean_blend", "euclidean_blend"]

_STATE = {"budget": 1 << 30, "precision": "highest", "blend": "auto"}  # bytes; jax.default_matmul_precision name
_PRECISIONS = ("highest", "high", "default")

#: a block of pairwise work holds a few temporaries of its size (distances, weights, their
#: cotangents); the budget is divided by this factor and the item size.
_TEMPORARIES = 6


def set_memory_budget(nbytes: int) -> None:
    """Set the memory (bytes) a block of pairwise work may use (default 1 GiB).

    Losses, neighbour searches and distance computations process anchor rows in blocks sized so
    that the block's temporaries fit this budget; full-batch NCA or LMNN on N samples then needs
    O(budget + N d) memory instead of O(N^2). Read when a function is traced: set it before
    fitting (already compiled functions keep their block size).
    """
    nbytes = int(nbytes)
    if nbytes < 1 << 20:
        raise ValueError(f"memory budget must be at least 1 MiB; got {nbytes} bytes.")
    _STATE["budget"] = nbytes


def get_memory_budget() -> int:
    """The memory budget of blockwise pairwise computations, in bytes (see :func:`set_memory_budget`)."""
    return _STATE["budget"]


@contextlib.contextmanager
def memory_budget(nbytes: int):
    """Context manager form of :func:`set_memory_budget`."""
    old = _STATE["budget"]
    set_memory_budget(nbytes)
    try:
        yield
    finally:
        _STATE["budget"] = old


def block_elements(itemsize: int = 4) -> int:
    """Elements one block of pairwise work may hold under the current budget."""
    return max(1, _STATE["budget"] // (itemsize * _TEMPORARIES))


def set_matmul_precision(precision: str) -> None:
    """Set the precision of float32 matrix products in jaxdml's computations on accelerators.

    ``"highest"`` (default): full float32 products. On NVIDIA GPUs JAX's own default multiplies
    float32 matrices in TensorFloat-32 (about 3 significant digits): pairwise distances are then
    wrong in the fourth digit, so neighbour searches return other neighbours (measured on an H200:
    9 % of the 4 nearest neighbours of 900 rows differed from scikit-learn's) and loss values drift
    by ~3e-4. ``"high"`` or ``"default"`` trade that accuracy for speed (JAX's names). CPUs compute
    float32 products exactly whatever the setting. Read when a function is traced.
    """
    if precision not in _PRECISIONS:
        raise ValueError(f"matmul precision must be one of {_PRECISIONS}; got {precision!r}.")
    _STATE["precision"] = precision


def get_matmul_precision() -> str:
    """The precision of the metric views' matrix products (see :func:`set_matmul_precision`)."""
    return _STATE["precision"]


@contextlib.contextmanager
def matmul_precision(precision: str):
    """Context manager form of :func:`set_matmul_precision`."""
    old = _STATE["precision"]
    set_matmul_precision(precision)
    try:
        yield
    finally:
        _STATE["precision"] = old


def precise(fn):
    """Run ``fn`` (an entry point that traces and runs device computations) under jaxdml's matmul
    precision (:func:`set_matmul_precision`)."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        with jax.default_matmul_precision(_STATE["precision"]):
            return fn(*args, **kwargs)

    return call


def check_euclidean_blend(value) -> None:
    """``"auto"``, ``"off"`` or a weight in [0, 1]; a ``ValueError`` naming the value otherwise."""
    if isinstance(value, str) and value in ("auto", "off"):
        return
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0.0 <= float(value) <= 1.0:
        return
    raise ValueError(f"euclidean_blend must be 'auto', 'off' or a weight in [0, 1]; got {value!r}.")


def set_euclidean_blend(value) -> None:
    """Set how fits that do not say otherwise blend a learned metric with the Euclidean one.

    ``"auto"`` (default): a fit on more than 4096 rows of a method that learns a full-dimensional linear
    metric from class labels returns ``M_t = (1 - t) (tr M / d) I + t M``, ``t`` the largest of
    0, 1/4, 1/2, 3/4, 1 whose leave-one-out 3-NN accuracy on 2 000 of the training rows is the best
    (``t = 1``, the method's own metric, unless a blend scores higher; a warning says when ``t < 1``);
    ``"off"``: never; a weight in [0, 1]: that blend at any size. ``jaxdml.fit(..., euclidean_blend=...)``
    sets it for one fit. The rule and its measurements: ``benchmarks/PROTOCOL.md``, round 17.
    """
    check_euclidean_blend(value)
    _STATE["blend"] = value


def get_euclidean_blend():
    """How fits blend a learned metric with the Euclidean one (see :func:`set_euclidean_blend`)."""
    return _STATE["blend"]


@contextlib.contextmanager
def euclidean_blend(value):
    """Context manager form of :func:`set_euclidean_blend` (e.g. ``with euclidean_blend("off"):``)."""
    old = _STATE["blend"]
    set_euclidean_blend(value)
    try:
        yield
    finally:
        _STATE["blend"] = old


def set_executable_cache(on) -> None:
    """Turn the executable cache on (``True``), off (``False``) or back to its default (``None``:
    on wherever jaxdml's persistent compilation cache is on, unless ``JAXDML_EXECUTABLE_CACHE=0``).

    The executable cache stores each compiled program of a fit under a key jaxdml computes without
    tracing (the method and its static settings, padded shapes and dtypes, versions, backend and
    devices, CPU, XLA flags, jaxdml's source), so a second process loads it without tracing and
    lowering; see :mod:`jaxdml.compilation`. Turning it off leaves JAX's persistent cache alone.
    """
    if on is not None and not isinstance(on, bool):
        raise ValueError(f"set_executable_cache takes True, False or None; got {on!r}.")
    _executable_cache.set_enabled(on)


def get_executable_cache() -> bool:
    """Whether fits use the executable cache now (see :func:`set_executable_cache`)."""
    return _executable_cache.is_enabled()


def _traced_settings():
    """The settings programs read while tracing: part of every executable-cache key."""
    return ("jaxdml", get_memory_budget(), get_matmul_precision())


_executable_cache.add_context(_traced_settings)
