"""Pure, differentiable distance metric learning losses.

Each loss is ``loss(params, problem, **hyper) -> scalar``: parameters first (the linear map ``L``
or the metric ``M``), data through a problem pytree from :func:`jaxdml.make_problem`,
hyper-parameters keyword-only. They compose with ``jax.grad``, ``jax.jit`` and ``jax.vmap``.

This package holds pure functions only: a method's optimisation defaults (:class:`jaxdml.methods.LossSpec`)
and the registry of methods (:func:`jaxdml.methods`) live in the method layer above it.
"""

from ._lmnn import lmnn, lmnn_metric, lmnn_pairs
from ._mlkr import RegressionProblem, mlkr
from ._nca import nca
from ._ncm import *  # noqa: E402,F401,F403
from ._mcml import *  # noqa: E402,F401,F403
from ._ldml import *  # noqa: E402,F401,F403
from ._lsi import *  # noqa: E402,F401,F403
from ._itml import *  # noqa: E402,F401,F403
from ._dml_eig import *  # noqa: E402,F401,F403
from ._embedding import embedded, on_embedding
from . import _dml_eig, _itml, _ldml, _lsi, _mcml, _ncm  # noqa: E402
from ._ordinal import OrdinalProblem, cmoml, odml, ordered_chains  # noqa: E402  (ordinal metric learning)
from . import _lsml, _scml, _sdml  # noqa: E402  (metric-learn's weakly supervised algorithms)
from ._lsml import *  # noqa: E402,F401,F403
from ._scml import *  # noqa: E402,F401,F403
from ._sdml import *  # noqa: E402,F401,F403

__all__ = ["nca", "mlkr", "RegressionProblem", "lmnn", "lmnn_metric", "lmnn_pairs", "embedded", "on_embedding"] + [
    *_ncm.__all__, *_mcml.__all__, *_ldml.__all__, *_lsi.__all__, *_itml.__all__, *_dml_eig.__all__,
]
__all__ += ["odml", "cmoml", "ordered_chains", "OrdinalProblem"]  # ordinal metric learning
__all__ += [*_sdml.__all__, *_lsml.__all__, *_scml.__all__]  # metric-learn's weakly supervised algorithms

from . import deep  # noqa: E402  (deep metric learning: losses, miners on a batch of embeddings)

__all__ += ["deep"]

from ._moved import moved as _moved  # noqa: E402  (the solvers that moved to jaxdml.solvers, deprecated here)


def __getattr__(name):
    return _moved(__name__, name)
