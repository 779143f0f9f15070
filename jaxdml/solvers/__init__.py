"""Optimisation driver, initialisers and the ``fit`` front end."""

from ._api import SOLVERS, SolverSpec, available_methods, fit, register_solver, x64_call
from ._driver import SolverResult, make_optimizer, minimize, trace_count
from ._init import initial_components
from ._result import FittedMetric, KernelFittedMetric

# Method families registered with register_solver (closed forms, constraint-based, kernel/gradient).
from . import _closed_forms, _constraints, _gradient_methods  # noqa: E402,F401

__all__ = [
    "fit", "minimize", "make_optimizer", "SolverResult", "FittedMetric", "KernelFittedMetric",
    "initial_components", "register_solver", "SolverSpec", "SOLVERS", "available_methods",
    "trace_count", "x64_call",
]
