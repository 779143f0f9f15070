"""Closed-form (eigen-solver) metric learning methods as pure ``jnp`` functions returning ``L``."""

from . import _anmm, _dmlmj, _kda
from ._anmm import *  # noqa: F401,F403
from ._covariance import covariance_components, inverse_sqrt_psd
from ._dmlmj import *  # noqa: F401,F403
from ._kda import *  # noqa: F401,F403
from ._lda import lda_components
from ._lfda import lfda_components, lfda_scatters
from ._pca import pca_components
from ._rca import chunklet_covariance, rca_components

from ._gmml import geometric_mean, gmml_metric, spd_power  # pyDML's algorithms
from ._llda import kllda_components  # pyDML's algorithms
from ._truncated import leading_eigh  # truncated eigensolver

__all__ = ["pca_components", "lda_components", "covariance_components", "inverse_sqrt_psd", "lfda_components", "lfda_scatters", "chunklet_covariance", "rca_components", *_anmm.__all__, *_dmlmj.__all__, *_kda.__all__,
           "geometric_mean", "gmml_metric", "spd_power", "kllda_components",  # pyDML's algorithms
           "leading_eigh"]  # truncated eigensolver
