"""Names that moved from :mod:`jaxdml.losses` to :mod:`jaxdml.solvers`, still reachable here (deprecated).

The iterative solvers of the weakly supervised methods (ITML, LSI, DML-eig, SDML, SCML) and their result
types left the maths layer for the optimisation layer above it. ``jaxdml.losses.<name>`` keeps working with a
:class:`DeprecationWarning` naming the new place, without ``jaxdml.losses`` importing ``jaxdml.solvers`` (a
lower layer never reaches up): the top-level ``jaxdml/__init__.py``, which imports both, fills
:data:`MOVED_TO_SOLVERS`, and the module ``__getattr__`` of ``jaxdml.losses`` calls :func:`moved`.
"""

from __future__ import annotations

from .._runtime._warnings import warn

__all__ = ["SOLVER_NAMES", "MOVED_TO_SOLVERS", "moved"]

#: the names that moved to :mod:`jaxdml.solvers`
SOLVER_NAMES = (
    "itml_bregman", "ITMLState", "lsi_solve", "lsi_whitening", "LSIState", "LSIWhitening",
    "dml_eig_solve", "DMLEigState", "sdml_admm", "SDMLState", "scml_rda", "SCMLState",
)

#: ``{name: object}`` for :data:`SOLVER_NAMES`, filled by ``jaxdml/__init__.py`` from :mod:`jaxdml.solvers`
MOVED_TO_SOLVERS: dict = {}


def moved(module: str, name: str):
    """The object a moved ``name`` of ``module`` now is, with a :class:`DeprecationWarning` attributed to the
    caller's line; an ``AttributeError`` for any other name (as a module without ``__getattr__`` raises)."""
    if name in SOLVER_NAMES and name in MOVED_TO_SOLVERS:
        warn(f"{module}.{name} is deprecated: it moved to jaxdml.solvers.{name} (the iterative solvers live in "
             f"jaxdml.solvers, the objectives in jaxdml.losses); import it from there.", DeprecationWarning)
        return MOVED_TO_SOLVERS[name]
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
