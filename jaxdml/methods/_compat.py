"""Deprecated registration API of earlier versions (``jaxdml.solvers.register_solver``, ``SolverSpec``,
``SOLVERS``), forwarding to the method records."""

from __future__ import annotations

import inspect
import warnings
from typing import Callable, NamedTuple, Optional

from ._record import SETTINGS, Method
from ._registry import methods, register_method

__all__ = ["SolverSpec", "register_solver", "solvers_table"]


class SolverSpec(NamedTuple):
    """Deprecated: use :class:`jaxdml.methods.Method`."""

    fn: Callable
    supervised: bool = True
    max_components: Optional[Callable] = None
    full_rank_only: bool = False
    constraints: dict = {}


def register_solver(name: str, spec: SolverSpec) -> None:
    """Deprecated: use :func:`jaxdml.register_method` with a :class:`jaxdml.methods.Method`."""
    warnings.warn("register_solver is deprecated; use jaxdml.register_method(jaxdml.methods.Method(...)).",
                  DeprecationWarning, stacklevel=2)
    params = inspect.signature(spec.fn).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    register_method(Method(
        name, "L", spec.fn, constraints=None if takes_any else dict(spec.constraints),
        settings=frozenset(k for k in SETTINGS if k in params), supervised=spec.supervised,
        max_components=spec.max_components, full_rank_only=spec.full_rank_only,
    ), replace=True)


def solvers_table() -> dict:
    """The methods that are not plain gradient losses, ``{name: Method}`` (a snapshot)."""
    return {n: m for n, m in methods().items() if m.loss is None}
