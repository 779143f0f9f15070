"""The method layer: one record per method, next to its estimator, and the registry.

A :class:`Method` record holds everything specific to a method (name, what it learns, its
hyper-parameters with constraints and defaults, its large-data policy, its host-side preparation
and solve step). :func:`methods` lists the registered ones; :func:`register_method` adds a user's
own, which :func:`jaxdml.fit`, :class:`MetricLearner` and ``jaxdml experiment`` then accept by
name. :func:`gradient_method` makes the record of a method that minimises a pure loss.

The package itself is callable: ``jaxdml.methods()`` is :func:`methods`.
"""

import sys as _sys
import types as _types

from .._validation import Interval, Options
from ._compat import SolverSpec, register_solver  # noqa: F401  (deprecated: register_method, Method)
from ._fixed import Metric, Transformer  # fixed distances (pyDML's Metric, Transformer)
from ._learner import MetricLearner
from ._registry import BUILTIN, available_methods, get_method, methods, register_method, resolve
from .closed_form._anmm import ANMM, KANMM
from .closed_form._covariance import Covariance
from .closed_form._dmlmj import DMLMJ, KDMLMJ
from .closed_form._kda import KDA
from .closed_form._lfda import LFDA
from .closed_form._linear import LDA, PCA, Euclidean
from .closed_form._llda import KLLDA, LLDA  # pyDML's algorithms
from .core._base import BaseMetricLearner, GradientMetricLearner, KernelMetricLearner
from .core._engine import run
from .core._gradient import gradient_method
from .core._record import SETTINGS, LossSpec, Method
from .core._tuple_classifiers import _PairsClassifierMixin, _QuadrupletsClassifierMixin, _TripletsClassifierMixin
from .gradient._collapse import LDML, MCML
from .gradient._klmnn import KLMNN
from .gradient._lmnn import LMNN
from .gradient._mlkr import MLKR
from .gradient._nca import NCA
from .gradient._ncm import NCMC, NCMML
from .ordinal._cmoml import CMOML, KCMOML  # ordinal metric learning
from .ordinal._odml import KODML, LODML  # ordinal metric learning
from .weak._constraints import Constraints  # weak supervision and the Mahalanobis API (metric-learn parity)
from .weak._dml_eig import DMLEig
from .weak._gmml import GMML  # pyDML's algorithms
from .weak._itml import ITML
from .weak._lsi import LSI
from .weak._lsml import LSML  # metric-learn's weakly supervised algorithms
from .weak._mmc import MMC
from .weak._rca import RCA
from .weak._scml import SCML
from .weak._sdml import SDML
from .weak._supervised import (
    ITML_Supervised,
    LSML_Supervised,
    MMC_Supervised,
    RCA_Supervised,
    SCML_Supervised,
    SDML_Supervised,
    supervised_alias,
)

__all__ = [
    "Method", "LossSpec", "methods", "register_method", "get_method", "available_methods", "gradient_method", "run",
    "resolve", "BUILTIN", "SETTINGS", "MetricLearner", "Interval", "Options",
    "BaseMetricLearner", "GradientMetricLearner", "KernelMetricLearner",
    "Euclidean", "PCA", "LDA", "NCA", "LMNN", "NCMML", "NCMC", "MCML", "LDML", "KLMNN",
    "ANMM", "DMLMJ", "KDA", "KANMM", "KDMLMJ", "ITML", "LSI", "DMLEig",
    "Covariance", "LFDA", "RCA", "MLKR", "MMC",
    # weak supervision and the Mahalanobis API (metric-learn parity)
    "Constraints", "ITML_Supervised", "MMC_Supervised", "SDML_Supervised", "LSML_Supervised", "SCML_Supervised",
    "RCA_Supervised", "supervised_alias",
    "LODML", "KODML", "CMOML", "KCMOML",  # ordinal metric learning
    "GMML", "LLDA", "KLLDA",  # pyDML's algorithms
    "SDML", "LSML", "SCML",  # metric-learn's weakly supervised algorithms
    "Metric", "Transformer",  # fixed distances (pyDML's Metric, Transformer)
]


class _CallableModule(_types.ModuleType):
    """This package, callable: ``jaxdml.methods()`` lists the registered methods."""

    def __call__(self) -> dict:
        return methods()


_sys.modules[__name__].__class__ = _CallableModule
