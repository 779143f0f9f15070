"""Optimisation driver, initialisers and fitted-metric results.

This layer sits below the method layer and does not reach into it: ``fit`` and the method registry
are :func:`jaxdml.fit`, :func:`jaxdml.methods` and :func:`jaxdml.register_method`.
"""

from .._runtime._device import x64_call
from ._driver import SolverResult, make_optimizer, minimize, trace_count
from ._init import initial_components
from ._lbfgs import lbfgs
from ._result import FittedMetric, KernelFittedMetric

__all__ = [
    "minimize", "make_optimizer", "lbfgs", "SolverResult", "FittedMetric", "KernelFittedMetric",
    "initial_components", "trace_count", "x64_call",
]
