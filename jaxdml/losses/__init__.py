"""Pure, differentiable distance metric learning losses.

Each loss is ``loss(params, problem, **hyper) -> scalar``: parameters first (the linear map ``L``
or the metric ``M``), data through a problem pytree from :func:`jaxdml.make_problem`,
hyper-parameters keyword-only. They compose with ``jax.grad``, ``jax.jit`` and ``jax.vmap``.
"""

from ._lmnn import lmnn, lmnn_metric
from ._nca import nca
from ._registry import REGISTRY, LossSpec, get, register

# NCA: full-batch L-BFGS on the exact (blockwise, memory-bounded) objective, 100 iterations, chosen
# on the tuning half of benchmarks/defaults_split.json (benchmarks/PROTOCOL.md). Above 20000
# samples, where each exact step costs O(N^2 d), 1000 minibatch Adam steps of 256 anchors against
# 1024 sampled rows (batch_size applies to first-order optimizers only).
register("nca", LossSpec(nca, "L", optimizer="lbfgs", max_iter=100, batch_size=256, large_n=20000, large=dict(optimizer="adam", learning_rate=2e-2, max_iter=1000), candidates_above=20000, n_candidates=1024))  # noqa: E501
# LMNN: L-BFGS on the full objective; on large data (more than 4096 samples) minibatch Adam, with
# impostors sampled uniformly (an unbiased estimate of the push term) above 8192 samples.
register("lmnn", LossSpec(lmnn, "L", needs=frozenset({"targets"}), max_iter=200, large_n=4096,
                          large=dict(optimizer="adam", learning_rate=1e-2, max_iter=1000, batch_size=256),
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

__all__ = ["nca", "lmnn", "lmnn_metric", "LossSpec", "register", "get", "REGISTRY"] + [
    *_ncm.__all__, *_mcml.__all__, *_ldml.__all__, *_lsi.__all__, *_itml.__all__, *_dml_eig.__all__,
]
