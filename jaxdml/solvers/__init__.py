"""Optimisation driver, initialisers and fitted-metric results.

This layer sits below the method layer and does not reach into it: ``fit`` and the method registry
are :func:`jaxdml.fit`, :func:`jaxdml.methods` and :func:`jaxdml.register_method`.
"""

from .._runtime._device import x64_call
from ._dml_eig import DMLEigState, dml_eig_solve
from ._driver import SolverResult, make_optimizer, minimize, trace_count
from ._init import initial_components
from ._itml import ITMLState, itml_bregman
from ._lbfgs import lbfgs
from ._lsi import LSIState, LSIWhitening, lsi_solve, lsi_whitening
from ._result import FittedMetric, KernelFittedMetric
from ._scml import SCMLState, scml_rda
from ._sdml import SDMLState, sdml_admm

__all__ = [
    "minimize", "make_optimizer", "lbfgs", "SolverResult", "FittedMetric", "KernelFittedMetric",
    "initial_components", "trace_count", "x64_call",
    # the iterative solvers of the weakly supervised methods (their objectives are in jaxdml.losses)
    "itml_bregman", "ITMLState", "lsi_solve", "lsi_whitening", "LSIState", "LSIWhitening",
    "dml_eig_solve", "DMLEigState", "sdml_admm", "SDMLState", "scml_rda", "SCMLState",
]
