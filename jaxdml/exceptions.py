"""Exceptions and warnings raised by jaxdml."""

from sklearn.exceptions import ConvergenceWarning, NotFittedError

__all__ = ["NonPSDError", "InvalidParameterError", "ConvergenceWarning", "NotFittedError"]


class NonPSDError(ValueError):
    """A matrix that must be positive semidefinite is not."""


class InvalidParameterError(ValueError, TypeError):
    """A hyper-parameter has the wrong type or value (scikit-learn's parameter-constraint style).

    Subclasses ``ValueError`` (and ``TypeError``, as scikit-learn's own private class does), so
    existing ``except ValueError`` code keeps working.
    """
