"""scikit-learn estimators over :func:`jaxdml.fit`."""

from . import _closed_form, _constraints, _gradient_methods
from ._base import BaseMetricLearner, GradientMetricLearner, KernelMetricLearner
from ._classes import LDA, LMNN, NCA, PCA, Euclidean
from ._closed_form import *  # noqa: F401,F403
from ._constraints import *  # noqa: F401,F403
from ._gradient_methods import *  # noqa: F401,F403

__all__ = [
    "BaseMetricLearner", "GradientMetricLearner", "KernelMetricLearner",
    "Euclidean", "PCA", "LDA", "NCA", "LMNN",
    *_closed_form.__all__, *_gradient_methods.__all__, *_constraints.__all__,
]
