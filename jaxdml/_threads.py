"""Compatibility module: the BLAS thread limit now lives in :mod:`jaxdml._runtime`."""

from ._runtime import blas_single_threaded, single_threaded_blas

__all__ = ["single_threaded_blas", "blas_single_threaded"]
