"""scikit-learn estimators. Each one lives next to its method record in :mod:`jaxdml.methods`;
this package re-exports them."""

from ..methods import (ANMM, LFDA, MLKR, MMC, RCA, Covariance, DMLMJ, ITML, KANMM, KDA, KDMLMJ, KLMNN, LDA, LDML, LMNN, LSI, MCML, NCA, NCMC, NCMML,
                       PCA, BaseMetricLearner, DMLEig, Euclidean, GradientMetricLearner, KernelMetricLearner,
                       MetricLearner)
from ..methods import LSML, SCML, SDML  # metric-learn's weakly supervised algorithms

__all__ = [
    "BaseMetricLearner", "GradientMetricLearner", "KernelMetricLearner", "MetricLearner",
    "Euclidean", "PCA", "LDA", "NCA", "LMNN",
    "ANMM", "DMLMJ", "KDA", "KANMM", "KDMLMJ",
    "NCMML", "NCMC", "MCML", "LDML", "KLMNN",
    "ITML", "LSI", "DMLEig",
    "Covariance", "LFDA", "RCA", "MLKR", "MMC",
    "SDML", "LSML", "SCML",  # metric-learn's weakly supervised algorithms
]
