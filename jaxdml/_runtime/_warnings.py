"""Warnings that point at the user's line, not at jaxdml's internals."""

from __future__ import annotations

import os
import sys
import warnings

from ..exceptions import ConvergenceWarning

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # jaxdml/

__all__ = ["warn", "warn_not_converged"]


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first calling frame outside the jaxdml package."""
    frame, level = sys._getframe(1), 2  # stacklevel 2 = the caller of this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def warn_not_converged(name: str, max_iter, tol) -> None:
    """The ConvergenceWarning of a solver that ended at ``max_iter`` without meeting its stopping
    test (the prefix ``[NCA] NCA did not converge`` is scikit-learn's wording for its NCA)."""
    label = name.upper()
    warn(f"[{label}] {label} did not converge in max_iter={max_iter} iterations (tol={tol}); increase max_iter.",
         ConvergenceWarning)
