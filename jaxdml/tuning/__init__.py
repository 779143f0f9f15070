"""Tuning helpers with pyDML's vocabulary: :func:`tune`, :func:`tune_knn`, :func:`metadata_cross_validate`."""

from ._tune import TuneResult, metadata, metadata_cross_validate, tune, tune_knn

__all__ = ["tune", "tune_knn", "metadata_cross_validate", "metadata", "TuneResult"]
