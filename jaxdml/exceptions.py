"""Exceptions and warnings raised by jaxdml."""

from sklearn.exceptions import ConvergenceWarning, NotFittedError

__all__ = ["NonPSDError", "ConvergenceWarning", "NotFittedError"]


class NonPSDError(ValueError):
    """A matrix that must be positive semidefinite is not."""
