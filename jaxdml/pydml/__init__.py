"""pyDML's names, calls and plots over jaxdml: a pyDML script runs after replacing ``from dml import ...``
by ``from jaxdml.pydml import ...`` (or ``import dml`` by ``import jaxdml.pydml as dml``).

Every public name of pyDML's ``dml`` package (0.1.0, and the later GMML, LODML, KODML, CMOML,
CondensedNearestNeighbors, ReducedNearestNeighbors) is here with pyDML's signature (parameter names,
order and defaults) and return types, as a thin adapter over jaxdml's own classes:

* the learners (``NCA``, ``LMNN``, ``LDA``, ...; ``Metric``, ``Transformer``, ``Euclidean``,
  ``Covariance``): ``fit``, ``transform(X=None)`` (None: the training data), ``metric()``,
  ``transformer()``, ``metadata()`` under pyDML's keys; the jaxdml estimator is ``estimator_``;
* the classifiers ``kNN`` (``predict()``/``score()`` without data: leave-one-out on the training
  set; ``*_orig``: the Euclidean distance), ``NCMC_Classifier``, ``MultiDML_kNN`` (``add``,
  ``elapsed``), ``CondensedNearestNeighbors``, ``ReducedNearestNeighbors``;
* the plots of ``dml.dml_plot`` (``classifier_plot``, ``dml_plot``, ``knn_plot``, ``dml_multiplot``,
  the pair plots, ``classifier_plot_3d``) and the tuning functions of ``dml.tune`` (``tune``,
  ``tune_knn``, ``metadata_cross_validate``, ``cross_validate``; pandas DataFrames as in pyDML).

jaxdml trains the methods with its own solvers, so a pyDML option that tunes pyDML's solver (a step
size rule, a precision, an inner loop) has no counterpart: it is accepted, jaxdml's nearest setting
is used, each learner's docstring says which, and setting it warns once per process
(:class:`PyDMLCompatibilityWarning`). Results are therefore jaxdml's, not pyDML's digits.
"""

from ._base import DMLAlgorithm as DML_Algorithm
from ._base import KernelDMLAlgorithm as KernelDML_Algorithm
from ._base import PyDMLCompatibilityWarning
from ._classifiers import CondensedNearestNeighbors, MultiDML_kNN, NCMC_Classifier, ReducedNearestNeighbors, kNN
from ._gradient import CMOML, LDML, LMNN, LODML, MCML, NCA, NCMC, NCMML
from ._kernel import KANMM, KDA, KDMLMJ, KLLDA, KLMNN, KODML
from ._constraints import DML_eig, GMML, ITML, LSI
from ._learners import ANMM, DMLMJ, LDA, LLDA, PCA, Covariance, Euclidean, Metric, Transformer
from ._plot import (classifier_pairplots, classifier_plot, classifier_plot_3d, dml_multiplot, dml_pairplots, dml_plot,
                    knn_pairplots, knn_plot)
from ._tune import cross_validate, metadata_cross_validate, tune, tune_knn

__all__ = [
    # learners
    "NCA", "LDA", "PCA", "LMNN", "KLMNN", "LSI", "ANMM", "KANMM", "ITML", "DMLMJ", "KDMLMJ", "NCMML", "NCMC",
    "KDA", "DML_eig", "MCML", "LDML", "LLDA", "KLLDA", "GMML", "LODML", "KODML", "CMOML",
    "Metric", "Transformer", "Euclidean", "Covariance",
    # classifiers
    "kNN", "NCMC_Classifier", "MultiDML_kNN", "CondensedNearestNeighbors", "ReducedNearestNeighbors",
    # plots (dml.dml_plot)
    "classifier_plot", "dml_plot", "knn_plot", "dml_multiplot", "classifier_pairplots", "dml_pairplots",
    "knn_pairplots", "classifier_plot_3d",
    # tuning (dml.tune)
    "cross_validate", "tune_knn", "metadata_cross_validate", "tune",
    # bases and the compatibility warning
    "DML_Algorithm", "KernelDML_Algorithm", "PyDMLCompatibilityWarning",
]
