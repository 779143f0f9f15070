"""Optimisation driver, initialisers and fitted-metric results.

``fit``, ``available_methods``, ``register_solver``, ``SolverSpec`` and ``SOLVERS`` moved to the
method layer (:func:`jaxdml.fit`, :func:`jaxdml.methods`, :func:`jaxdml.register_method`); they
are still reachable here, resolved on first access.
"""

import importlib as _importlib

from .._runtime import x64_call
from ._driver import SolverResult, make_optimizer, minimize, trace_count
from ._init import initial_components
from ._result import FittedMetric, KernelFittedMetric

__all__ = [
    "fit", "minimize", "make_optimizer", "SolverResult", "FittedMetric", "KernelFittedMetric",
    "initial_components", "register_solver", "SolverSpec", "SOLVERS", "available_methods",
    "trace_count", "x64_call",
]

#: names that live in the layer above, resolved lazily (this package must not import it)
_FORWARD = {
    "fit": ("jaxdml._fit", "fit"),
    "available_methods": ("jaxdml.methods._registry", "available_methods"),
    "register_solver": ("jaxdml.methods._compat", "register_solver"),
    "SolverSpec": ("jaxdml.methods._compat", "SolverSpec"),
}


def __getattr__(name):
    if name == "SOLVERS":
        return _importlib.import_module("jaxdml.methods._compat").solvers_table()
    if name in _FORWARD:
        module, attr = _FORWARD[name]
        return getattr(_importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
