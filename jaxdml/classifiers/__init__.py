"""Distance-based classifiers that use learned metrics (k-NN, nearest centroids, LMNN energy)."""

from . import _energy, _knn, _multidml, _ncmc
from ._energy import *  # noqa: F401,F403
from ._knn import *  # noqa: F401,F403
from ._multidml import MultiDML_kNN  # noqa: F401
from ._ncmc import *  # noqa: F401,F403
from . import _ordinal  # ordinal metric learning
from ._ordinal import *  # noqa: F401,F403
from ._imls import IMLS  # pyDML's algorithms
from ._prototypes import CondensedNearestNeighbors, ReducedNearestNeighbors  # prototype selection (pyDML's CNN, RNN)

__all__ = [*_knn.__all__, *_ncmc.__all__, *_energy.__all__,
           # tools: multi-metric k-NN
           "MultiDML_kNN",
           *_ordinal.__all__,  # ordinal metric learning
           "IMLS",  # pyDML's algorithms
           "CondensedNearestNeighbors", "ReducedNearestNeighbors"]  # prototype selection (pyDML's CNN, RNN)
