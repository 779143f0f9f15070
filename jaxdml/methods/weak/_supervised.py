"""metric-learn's ``*_Supervised`` class names: the same learners, fitted from points and labels only.

In jaxdml one class takes both kinds of supervision (``ITML().fit(X, y)`` builds pairs from the
labels, ``ITML().fit(pairs, y)`` learns from given pairs). The ``*_Supervised`` names are thin
subclasses for code written against metric-learn: they take ``fit(X, y)`` only (3-D or index
tuples are read as points and rejected), and they read labels as metric-learn does: negative
integer labels (e.g. -1) mark unlabelled samples, which take part in no constraint (as in
:class:`jaxdml.Constraints`); the classes themselves (``jaxdml.ITML`` ...) read every label as a
class. Adding one is a line: ``NAME_Supervised =
supervised_alias(NAME)`` here, plus the export lines.
"""

from __future__ import annotations

from ._itml import ITML
from ._lsml import LSML
from ._mmc import MMC
from ._rca import RCA
from ._scml import SCML
from ._sdml import SDML

__all__ = ["supervised_alias", "ITML_Supervised", "MMC_Supervised", "SDML_Supervised", "LSML_Supervised",
           "SCML_Supervised", "RCA_Supervised"]


def supervised_alias(cls, name=None):
    """A subclass of ``cls`` named ``NAME_Supervised`` (picklable from this module) that fits from
    points and labels only."""
    name = name or f"{cls.__name__}_Supervised"
    doc = (f"metric-learn's ``{name}``: :class:`jaxdml.{cls.__name__}` fitted from points and labels "
           f"(``fit(X, y)``, constraints drawn from the labels; negative integer labels mark unlabelled samples, "
           f"as in metric-learn); see :class:`jaxdml.{cls.__name__}` for the parameters. For tuples, use the class "
           "itself.")
    alias = type(name, (cls,), {"__doc__": doc, "__module__": __name__, "_tuple_arities": (), "_partial_labels": True})
    alias.__qualname__ = name
    return alias


ITML_Supervised = supervised_alias(ITML)
MMC_Supervised = supervised_alias(MMC)
SDML_Supervised = supervised_alias(SDML)
LSML_Supervised = supervised_alias(LSML)
SCML_Supervised = supervised_alias(SCML)
RCA_Supervised = supervised_alias(RCA)
