"""Optimisation driver, initialisers and the ``fit`` front end."""

from ._api import SOLVERS, SolverSpec, available_methods, fit, register_solver
from ._driver import SolverResult, make_optimizer, minimize, trace_count
from ._init import initial_components
from ._result import FittedMetric

__all__ = [
    "fit", "minimize", "make_optimizer", "SolverResult", "FittedMetric", "initial_components",
    "register_solver", "SolverSpec", "SOLVERS", "available_methods", "trace_count",
]
