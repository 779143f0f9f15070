"""jaxdml: JAX-accelerated, differentiable distance metric learning.

The building blocks are pure functions: losses of the linear map ``L`` or the metric ``M``
(:mod:`jaxdml.losses`), projections (:mod:`jaxdml.projections`), closed-form eigen-solvers
(:mod:`jaxdml.eigen`) and one optax-driven optimisation loop (:func:`jaxdml.minimize`).
:func:`jaxdml.fit` and the scikit-learn estimators are thin layers over them.
"""

import importlib as _importlib

from . import (classifiers, config, datasets, eigen, estimators, kernels, linalg, losses, methods, neighbors,
               projections)
from . import retrieval  # retrieval metrics of an embedding (precision@1, MAP@R, Recall@K, NMI/AMI)
from ._fit import fit
from .classifiers import *  # noqa: F401,F403
from .estimators import *  # noqa: F401,F403
from .methods import Method, available_methods, get_method, register_method
from .methods import Constraints  # weak supervision (metric-learn parity)
from .persistence import load
from .problems import LabeledProblem, PairsProblem, make_pairs_problem, make_problem
from .solvers import FittedMetric, KernelFittedMetric, minimize
from . import solvers as _solvers
from .losses._moved import MOVED_TO_SOLVERS as _MOVED_TO_SOLVERS
from .losses._moved import SOLVER_NAMES as _SOLVER_NAMES
from .tuning import TuneResult, metadata_cross_validate, tune, tune_knn

from ._version import __version__

# jaxdml.losses.itml_bregman etc. (moved to jaxdml.solvers) still resolve, with a DeprecationWarning: the
# maths layer cannot import the optimisation layer, so the table it forwards through is filled here
_MOVED_TO_SOLVERS.update({_name: getattr(_solvers, _name) for _name in _SOLVER_NAMES})

#: the application layer and optional helpers (``pydml``: pyDML's names), imported on first attribute access
_LAZY = ("experiments", "plotting", "cli", "compilation", "pydml")


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "fit",
    "load",
    "minimize",
    "make_problem",
    "make_pairs_problem",
    "LabeledProblem",
    "PairsProblem",
    "FittedMetric",
    "KernelFittedMetric",
    "available_methods",
    "methods",
    "register_method",
    "get_method",
    "Method",
    "MetricLearner",
    "losses",
    "projections",
    "eigen",
    "linalg",
    "kernels",
    "classifiers",
    "datasets",
    "experiments",
    "plotting",
    "neighbors",
    "retrieval",
    "config",
    *[n for n in estimators.__all__ if not n.endswith("Learner")],
    *classifiers.__all__,
    # tools: tuning helpers
    "tune",
    "tune_knn",
    "metadata_cross_validate",
    "TuneResult",
    # weak supervision (metric-learn parity)
    "Constraints",
]
