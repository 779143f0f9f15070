"""scikit-learn estimators. Each one lives next to its method record in :mod:`jaxdml.methods`;
this package re-exports them."""

from ..methods import (ANMM, LFDA, MLKR, MMC, RCA, Covariance, DMLMJ, ITML, KANMM, KDA, KDMLMJ, KLMNN, LDA, LDML, LMNN, LSI, MCML, NCA, NCMC, NCMML,
                       PCA, BaseMetricLearner, DMLEig, Euclidean, GradientMetricLearner, KernelMetricLearner,
                       MetricLearner)
# weak supervision (metric-learn parity)
from ..methods import ITML_Supervised, LSML_Supervised, MMC_Supervised, SCML_Supervised, SDML_Supervised
from ..methods import RCA_Supervised
from ..methods import CMOML, KCMOML, KODML, LODML  # ordinal metric learning
from ..methods import GMML, KLLDA, LLDA  # pyDML's algorithms
from ..methods import LSML, SCML, SDML  # metric-learn's weakly supervised algorithms
from ..methods import Metric, Transformer  # fixed distances (pyDML's Metric, Transformer)

__all__ = [
    "BaseMetricLearner", "GradientMetricLearner", "KernelMetricLearner", "MetricLearner",
    "Euclidean", "PCA", "LDA", "NCA", "LMNN",
    "ANMM", "DMLMJ", "KDA", "KANMM", "KDMLMJ",
    "NCMML", "NCMC", "MCML", "LDML", "KLMNN",
    "ITML", "LSI", "DMLEig",
    "Covariance", "LFDA", "RCA", "MLKR", "MMC",
    # weak supervision (metric-learn parity)
    "ITML_Supervised", "MMC_Supervised", "SDML_Supervised", "LSML_Supervised", "SCML_Supervised", "RCA_Supervised",
    "LODML", "KODML", "CMOML", "KCMOML",  # ordinal metric learning
    "GMML", "LLDA", "KLLDA",  # pyDML's algorithms
    "SDML", "LSML", "SCML",  # metric-learn's weakly supervised algorithms
    "Metric", "Transformer",  # fixed distances (pyDML's Metric, Transformer)
]
