"""The registry of methods: an explicit table of the built-in records, plus the user's own.

``jaxdml.fit(X, y, loss=name)``, the experiment runner and :class:`jaxdml.MetricLearner` look a
method up here by name; :func:`register_method` adds one. Nothing registers itself at import time:
the built-in methods are the tuple :data:`BUILTIN` below.
"""

from __future__ import annotations

import numbers

import numpy as np

from .closed_form._anmm import ANMM_METHOD, KANMM_METHOD
from .closed_form._covariance import COVARIANCE_METHOD
from .closed_form._dmlmj import DMLMJ_METHOD, KDMLMJ_METHOD
from .closed_form._kda import KDA_METHOD
from .closed_form._lfda import LFDA_METHOD
from .closed_form._linear import EUCLIDEAN, LDA_METHOD, PCA_METHOD
from .closed_form._llda import KLLDA_METHOD, LLDA_METHOD  # pyDML's algorithms
from .core._gradient import gradient_method
from .core._record import LossSpec, Method
from .gradient._collapse import LDML_METHOD, MCML_METHOD
from .gradient._klmnn import KLMNN_METHOD
from .gradient._lmnn import LMNN_METHOD, LMNN_METRIC_METHOD
from .gradient._mlkr import MLKR_METHOD
from .gradient._nca import NCA_METHOD
from .gradient._ncm import NCMC_METHOD, NCMML_METHOD
from .ordinal._cmoml import CMOML_METHOD, KCMOML_METHOD  # ordinal metric learning
from .ordinal._odml import KODML_METHOD, LODML_METHOD  # ordinal metric learning
from .weak._dml_eig import DML_EIG_METHOD
from .weak._gmml import GMML_METHOD  # pyDML's algorithms
from .weak._itml import ITML_METHOD
from .weak._lsi import LSI_METHOD
from .weak._lsml import LSML_METHOD  # metric-learn's weakly supervised algorithms
from .weak._mmc import MMC_METHOD
from .weak._rca import RCA_METHOD
from .weak._scml import SCML_METHOD
from .weak._sdml import SDML_METHOD

__all__ = ["BUILTIN", "methods", "register_method", "get_method", "resolve", "available_methods"]

#: the built-in methods, in the order of the paper's tables
BUILTIN = (
    EUCLIDEAN, PCA_METHOD, LDA_METHOD,                      # linear baselines
    NCA_METHOD, LMNN_METHOD, LMNN_METRIC_METHOD,            # neighbourhood losses
    NCMML_METHOD, NCMC_METHOD, MCML_METHOD, LDML_METHOD,    # class-mean / collapsing / logistic losses
    ITML_METHOD, LSI_METHOD, DML_EIG_METHOD,                # pair-constrained solvers
    ANMM_METHOD, DMLMJ_METHOD,                              # closed forms
    KLMNN_METHOD, KDA_METHOD, KANMM_METHOD, KDMLMJ_METHOD,  # kernel methods
    COVARIANCE_METHOD, LFDA_METHOD, RCA_METHOD, MLKR_METHOD, MMC_METHOD,  # metric-learn's algorithms
    LODML_METHOD, KODML_METHOD, CMOML_METHOD, KCMOML_METHOD,  # ordinal metric learning (integer grades)
    GMML_METHOD, LLDA_METHOD, KLLDA_METHOD,  # pyDML's algorithms
    SDML_METHOD, LSML_METHOD, SCML_METHOD,  # metric-learn's weakly supervised algorithms
)

_TABLE: dict = {m.name: m for m in BUILTIN}


def methods() -> dict:
    """Every method :func:`jaxdml.fit` accepts by name: ``{name: Method}``, sorted by name."""
    return dict(sorted(_TABLE.items()))


def available_methods() -> list:
    """The names of :func:`methods` (kept for compatibility)."""
    return list(methods())


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Register ``method`` so that ``jaxdml.fit(X, y, loss=method.name)``, :class:`jaxdml.MetricLearner`
    and ``jaxdml experiment --algorithms NAME`` can use it.

    Parameters
    ----------
    method : Method
        The record (see :class:`jaxdml.methods.Method`; :func:`jaxdml.methods.gradient_method`
        builds one from a pure loss).
    replace : bool, default=False
        Allow replacing a method of the same name.

    Returns
    -------
    Method
        ``method`` itself.
    """
    if not isinstance(method, Method):
        raise TypeError(f"register_method expects a jaxdml.methods.Method record; got {type(method).__name__}.")
    if not isinstance(method.name, str) or not method.name or "+" in method.name:
        raise ValueError(f"A method name must be a non-empty string without '+'; got {method.name!r}.")
    if method.learns not in ("L", "M", "A"):
        raise ValueError(f"Method.learns must be 'L', 'M' or 'A'; got {method.learns!r}.")
    if not callable(method.solve):
        raise ValueError("Method.solve must be callable.")
    if method.name in _TABLE and not replace:
        raise ValueError(f"A method named {method.name!r} is already registered; pass replace=True to replace it.")
    _TABLE[method.name] = method
    return method


def get_method(name: str) -> Method:
    """The record registered under ``name`` (ValueError naming the valid names otherwise)."""
    table = methods()
    try:
        return table[name]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown loss {name!r}. Valid names: {list(table)}.") from None


def _combined(loss: dict) -> Method:
    """The record of a weighted sum of gradient losses, ``{name: weight}``."""
    from .core._gradient import combined_loss

    if not loss:
        raise ValueError("A combined loss needs at least one {name: weight} entry.")
    names = tuple(loss)
    records = [get_method(n) for n in names]
    if any(r.loss is None for r in records):
        raise ValueError(f"Only gradient losses can be combined; {[r.name for r in records if r.loss is None]} "
                         "are not.")
    specs = [r.loss for r in records]
    if len({s.param for s in specs}) != 1:
        raise ValueError(
            f"Cannot combine losses with different parametrizations: "
            f"{ {n: s.param for n, s in zip(names, specs)} } (all must be 'L' or all 'M')."
        )
    weights = []
    for n in names:
        w = loss[n]
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not np.isfinite(w) or not w > 0:
            raise ValueError(f"The weight of loss {n!r} must be a positive finite number (a negative weight "
                             f"maximises that loss, a zero weight drops it); got {w!r}.")
        weights.append(float(w))
    accepted = tuple(frozenset(r.constraints) for r in records)
    spec = specs[0]._replace(
        fn=combined_loss(tuple(s.fn for s in specs), accepted, "+".join(names)),
        needs=frozenset().union(*(s.needs for s in specs)),
        max_iter=max(s.max_iter for s in specs),
        optimizer="lbfgs" if all(s.optimizer == "lbfgs" for s in specs) else specs[0].optimizer,
        auto_hyper={k: v for s in specs for k, v in s.auto_hyper.items()},
    )
    constraints = {k: v for r in records for k, v in r.constraints.items()}
    defaults = {k: v for r in records for k, v in r.defaults.items()}
    # no route: a route's solver (LMNN's active set) minimises its own method's unweighted objective, not
    # a weighted sum, so every weighted loss takes the driver
    return gradient_method("+".join(names), spec, defaults=defaults, constraints=constraints, weights=tuple(weights))


def resolve(loss) -> Method:
    """The record for ``jaxdml.fit``'s ``loss``: a name, a ``{name: weight}`` dict or a callable."""
    if isinstance(loss, Method):
        return loss
    if isinstance(loss, str):
        return get_method(loss)
    if isinstance(loss, dict):
        return _combined(loss)
    if callable(loss):
        spec = LossSpec(loss, "L", needs=frozenset({"targets"}))
        return gradient_method(getattr(loss, "__name__", "callable"), spec, probe=True)._replace(constraints=None)
    raise ValueError(
        f"loss must be a name, a dict of {{name: weight}} or a callable f(L, problem); got {loss!r}. "
        f"Valid names: {available_methods()}."
    )
