"""scikit-learn estimators. Each one lives next to its method record in :mod:`jaxdml.methods`;
this package re-exports them."""

# weak supervision (metric-learn parity)
from ..methods import (  # ordinal metric learning  # pyDML's algorithms  # metric-learn's weakly supervised algorithms  # fixed distances (pyDML's Metric, Transformer)
                       ANMM,
                       CMOML,
                       DMLMJ,
                       GMML,
                       ITML,
                       KANMM,
                       KCMOML,
                       KDA,
                       KDMLMJ,
                       KLLDA,
                       KLMNN,
                       KODML,
                       LDA,
                       LDML,
                       LFDA,
                       LLDA,
                       LMNN,
                       LODML,
                       LSI,
                       LSML,
                       MCML,
                       MLKR,
                       MMC,
                       NCA,
                       NCMC,
                       NCMML,
                       PCA,
                       RCA,
                       SCML,
                       SDML,
                       BaseMetricLearner,
                       Covariance,
                       DMLEig,
                       Euclidean,
                       GradientMetricLearner,
                       ITML_Supervised,
                       KernelMetricLearner,
                       LSML_Supervised,
                       Metric,
                       MetricLearner,
                       MMC_Supervised,
                       RCA_Supervised,
                       SCML_Supervised,
                       SDML_Supervised,
                       Transformer,
)

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
