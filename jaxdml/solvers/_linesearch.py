"""Whether an optax optimizer runs a line search (and so needs full batches, and the driver's
stopping test may trust a short step): read from the structure of its state."""

from __future__ import annotations

import weakref

import jax
import jax.numpy as jnp
import numpy as np
import optax
from optax import tree_utils as otu

from .._runtime._device import paused_gc
from ._lbfgs import is_trial_state

__all__ = ["has_linesearch_state", "uses_linesearch", "default_patience"]


def has_linesearch_state(state) -> bool:
    """True if an optimizer state holds line-search information: optax's line searches (their cached
    value and gradient) or the trial points of :func:`jaxdml.solvers.lbfgs`."""
    if is_trial_state(state):
        return True
    try:
        return otu.tree_get(state, "info") is not None and otu.tree_get(state, "value") is not None
    except Exception:  # pragma: no cover - tree_get raises on ambiguous keys
        return False


#: optimizer.init -> {params signature: uses a line search}; weak keys, so a user's optimizers are not kept
_LINESEARCH = weakref.WeakKeyDictionary()


def uses_linesearch(optimizer, params) -> bool:
    """True if ``optimizer`` keeps line-search state (e.g. L-BFGS): it then needs full batches.

    Found from the shape of ``optimizer.init(params)`` (traced once per optimizer and parameter
    signature in a process, then remembered: a fit asks twice, and tracing costs about a millisecond)."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    signature = (treedef, tuple((np.shape(x), str(jnp.result_type(x))) for x in leaves))
    try:
        known = _LINESEARCH.setdefault(optimizer.init, {})
    except TypeError:  # an init that cannot be weakly referenced: not remembered
        known = {}
    if signature not in known:
        wrapped = optimizer
        if not isinstance(wrapped, optax.GradientTransformationExtraArgs):
            wrapped = optax.with_extra_args_support(wrapped)
        with paused_gc():
            known[signature] = has_linesearch_state(jax.eval_shape(wrapped.init, params))
    return known[signature]


def default_patience(optimizer, params) -> int:
    """The full-batch loop's default ``patience``: 2 with a line search, 10 otherwise."""
    return 2 if uses_linesearch(optimizer, params) else 10
