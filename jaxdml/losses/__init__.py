"""Pure, differentiable distance metric learning losses.

Each loss is ``loss(params, problem, **hyper) -> scalar``: parameters first (the linear map ``L``
or the metric ``M``), data through a problem pytree from :func:`jaxdml.make_problem`,
hyper-parameters keyword-only. They compose with ``jax.grad``, ``jax.jit`` and ``jax.vmap``.
"""

from ._lmnn import lmnn, lmnn_metric, lmnn_pairs
from ._nca import nca
from ._registry import REGISTRY, LossSpec, get, register

# NCA: small Adam steps on minibatches of 256 anchors (full batch on small data). The bounded
# step budget (learning_rate * max_iter ~ 1) regularises: fully converged NCA overfits small, noisy
# data sets (see README, "Defaults").
# Large data (more than 4096 samples): more and larger steps (overfitting is less of a concern
# than under-fitting), and above 8192 samples each step compares its 256 anchors with 1024
# uniformly sampled rows (a sampled softmax) instead of every sample.
register("nca", LossSpec(nca, "L", optimizer="adam", learning_rate=1e-2, max_iter=100, batch_size=256,
                         large_n=4096, large=dict(learning_rate=2e-2, max_iter=1000),
                         candidates_above=8192, n_candidates=1024))
# LMNN: L-BFGS on the full objective; on large data (more than 4096 samples) the active-set solver
# (jaxdml/solvers/_lmnn_active.py: exact impostor search refreshed every 50 L-BFGS steps). A user
# who sets optimizer/batch_size/n_candidates gets the former large-data path: minibatch Adam, with
# impostors sampled uniformly (an unbiased estimate of the push term) above 8192 samples.
register("lmnn", LossSpec(lmnn, "L", needs=frozenset({"targets"}), max_iter=200, large_n=4096,
                          large=dict(optimizer="adam", learning_rate=1e-2, max_iter=1000, batch_size=256,
                                     solver="lmnn_active_set"),
                          candidates_above=8192, n_candidates=1024))
register(
    "lmnn_metric",
    LossSpec(lmnn_metric, "M", needs=frozenset({"targets"}), optimizer="adam",
             learning_rate=1e-2, max_iter=300, projection="psd"),
)

# Further families; each module lists its public functions in __all__ and registers its losses.
from ._ncm import *  # noqa: E402,F401,F403
from ._mcml import *  # noqa: E402,F401,F403
from ._ldml import *  # noqa: E402,F401,F403
from ._lsi import *  # noqa: E402,F401,F403
from ._itml import *  # noqa: E402,F401,F403
from ._dml_eig import *  # noqa: E402,F401,F403
from . import _dml_eig, _itml, _ldml, _lsi, _mcml, _ncm  # noqa: E402

__all__ = ["nca", "lmnn", "lmnn_metric", "lmnn_pairs", "LossSpec", "register", "get", "REGISTRY"] + [
    *_ncm.__all__, *_mcml.__all__, *_ldml.__all__, *_lsi.__all__, *_itml.__all__, *_dml_eig.__all__,
]
