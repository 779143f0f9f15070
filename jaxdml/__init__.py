"""jaxdml: JAX-accelerated, differentiable distance metric learning.

The building blocks are pure functions: losses of the linear map ``L`` or the metric ``M``
(:mod:`jaxdml.losses`), projections (:mod:`jaxdml.projections`), closed-form eigen-solvers
(:mod:`jaxdml.eigen`) and one optax-driven optimisation loop (:func:`jaxdml.minimize`).
:func:`jaxdml.fit` and the scikit-learn estimators are thin layers over them.
"""

from . import eigen, linalg, losses, projections
from .problems import LabeledProblem, PairsProblem, make_pairs_problem, make_problem
from .solvers import FittedMetric, available_methods, fit, minimize
from .estimators import LDA, LMNN, NCA, PCA, Euclidean

__version__ = "0.1.0"

__all__ = [
    "Euclidean",
    "PCA",
    "LDA",
    "NCA",
    "LMNN",
    "fit",
    "minimize",
    "make_problem",
    "make_pairs_problem",
    "LabeledProblem",
    "PairsProblem",
    "FittedMetric",
    "available_methods",
    "losses",
    "projections",
    "eigen",
    "linalg",
]
