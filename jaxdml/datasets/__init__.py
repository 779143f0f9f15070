"""Data loaders: scikit-learn bundled sets, CSV files, KEEL ``.dat`` / ARFF files and folds."""

from ._bundled import BUNDLED, load_csv, load_dataset

__all__ = ["BUNDLED", "load_dataset", "load_csv"]
