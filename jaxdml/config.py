"""Library-wide settings: the memory budget of blockwise pairwise computations."""

from __future__ import annotations

import contextlib

__all__ = ["set_memory_budget", "get_memory_budget", "memory_budget", "block_elements"]

_STATE = {"budget": 1 << 30}  # bytes

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
