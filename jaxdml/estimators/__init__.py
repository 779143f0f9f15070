"""scikit-learn estimators over :func:`jaxdml.fit`."""

from ._base import BaseMetricLearner, GradientMetricLearner
from ._classes import LDA, LMNN, NCA, PCA, Euclidean

__all__ = ["BaseMetricLearner", "GradientMetricLearner", "Euclidean", "PCA", "LDA", "NCA", "LMNN"]
