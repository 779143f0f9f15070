"""Closed-form (eigen-solver) metric learning methods as pure ``jnp`` functions returning ``L``."""

from ._lda import lda_components
from ._pca import pca_components

__all__ = ["pca_components", "lda_components"]
