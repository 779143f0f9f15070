"""Deprecated registration API of earlier versions, forwarding to the method records: the solver table
(``SolverSpec``, ``register_solver``, ``solvers_table``; once ``jaxdml.solvers.*``) and the loss table
(``register_loss``, ``loss_specs``, ``get_loss``; once ``jaxdml.losses.register/REGISTRY/get``)."""

from __future__ import annotations

import inspect
import warnings
from typing import Callable, NamedTuple, Optional

from ._registry import BUILTIN, methods, register_method
from .core._gradient import gradient_method
from .core._record import SETTINGS, LossSpec, Method

__all__ = ["SolverSpec", "register_solver", "solvers_table", "register_loss", "loss_specs", "get_loss"]


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


def register_loss(name: str, spec: LossSpec) -> None:
    """Deprecated: use ``jaxdml.register_method(jaxdml.methods.gradient_method(name, spec))``. A built-in
    method's name is left to the built-in record, as before."""
    warnings.warn("register_loss is deprecated; use "
                  "jaxdml.register_method(jaxdml.methods.gradient_method(name, spec)).", DeprecationWarning,
                  stacklevel=2)
    if spec.param not in ("L", "M"):
        raise ValueError(f"param must be 'L' or 'M'; got {spec.param!r}")
    if name not in {m.name for m in BUILTIN}:
        register_method(gradient_method(name, spec), replace=True)


def loss_specs() -> dict:
    """``{name: LossSpec}`` of every registered gradient method (a snapshot)."""
    return {n: m.loss for n, m in methods().items() if m.loss is not None}


def get_loss(name: str) -> LossSpec:
    """The :class:`LossSpec` of the gradient method ``name`` (its record's ``loss``)."""
    table = loss_specs()
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}. Valid gradient losses: {sorted(table)}.") from None
