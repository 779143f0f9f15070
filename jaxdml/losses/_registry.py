"""The optimisation defaults of a gradient loss (:class:`LossSpec`), and the deprecated name table.

A method's record (:class:`jaxdml.methods.Method`) carries its ``LossSpec``; the registry of
methods is :func:`jaxdml.methods`. ``register``/``get``/``REGISTRY`` are kept for compatibility.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Callable, NamedTuple, Optional


class LossSpec(NamedTuple):
    """How the driver should treat a registered loss.

    Attributes
    ----------
    fn : the pure loss ``fn(params, problem, **hyper) -> scalar``.
    param : ``"L"`` (linear map, any n_components) or ``"M"`` (PSD metric, full dimension).
    needs : problem fields the loss requires (``"targets"``, ``"centroids"``).
    optimizer : default optimizer name (see :func:`jaxdml.solvers.make_optimizer`).
    learning_rate : default learning rate for first-order optimizers (ignored by L-BFGS).
    max_iter : default iteration budget.
    projection : name of the projection applied after each step (``"psd"``) or None.
    batch_size : default minibatch size (None: full batch). The loss must accept ``anchors=``.
    large_n : sample count above which ``large`` replaces the defaults the user did not set
        (e.g. switch a full-batch L-BFGS method to minibatch Adam on large data).
    large : overrides for large data (keys among optimizer, learning_rate, max_iter, batch_size).
    candidates_above : sample count above which each minibatch step compares its anchors with
        ``n_candidates`` uniformly sampled rows instead of every sample (the loss must accept
        ``candidates=``).
    n_candidates : size of that sample.
    """

    fn: Callable
    param: str
    needs: frozenset = frozenset()
    optimizer: str = "lbfgs"
    learning_rate: Optional[float] = None
    max_iter: int = 100
    projection: Optional[str] = None
    batch_size: Optional[int] = None
    large_n: Optional[int] = None
    large: Optional[dict] = None
    candidates_above: Optional[int] = None
    n_candidates: int = 4096


#: losses registered through the deprecated :func:`register` (the built-in ones are method records)
REGISTRY: dict[str, LossSpec] = {}


def register(name: str, spec: LossSpec) -> None:
    """Deprecated: use ``jaxdml.register_method(jaxdml.methods.gradient_method(name, spec))``."""
    warnings.warn("jaxdml.losses.register is deprecated; use "
                  "jaxdml.register_method(jaxdml.methods.gradient_method(name, spec)).", DeprecationWarning,
                  stacklevel=2)
    if spec.param not in ("L", "M"):
        raise ValueError(f"param must be 'L' or 'M'; got {spec.param!r}")
    REGISTRY[name] = spec


def specs() -> dict:
    """``{name: LossSpec}`` of every registered gradient method."""
    table = importlib.import_module("jaxdml.methods._registry").methods()  # the layer above, at call time
    return {n: m.loss for n, m in table.items() if m.loss is not None}


def get(name: str) -> LossSpec:
    """The :class:`LossSpec` of the gradient method ``name`` (its record's ``loss``)."""
    table = specs()
    try:
        return table[name]
    except KeyError:
        raise ValueError(
            f"Unknown loss {name!r}. Valid gradient losses: {sorted(table)}."
        ) from None
