"""Data loaders: scikit-learn bundled sets, CSV files, KEEL ``.dat`` / ARFF files and folds."""

from . import _folds, _keel
from ._bundled import BUNDLED, load_csv, load_dataset
from ._keel import *  # noqa: F401,F403
from ._folds import *  # noqa: F401,F403

__all__ = ["BUNDLED", "load_dataset", "load_csv", *_keel.__all__, *_folds.__all__]
