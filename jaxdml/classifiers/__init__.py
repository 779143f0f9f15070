"""Distance-based classifiers that use learned metrics (k-NN, nearest centroids, LMNN energy)."""

from . import _energy, _knn, _ncmc
from ._energy import *  # noqa: F401,F403
from ._knn import *  # noqa: F401,F403
from ._ncmc import *  # noqa: F401,F403
from ._imls import IMLS  # pyDML's algorithms

__all__ = [*_knn.__all__, *_ncmc.__all__, *_energy.__all__,
           "IMLS"]  # pyDML's algorithms
