"""Warnings that point at the user's line, not at jaxdml's internals."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

__all__ = ["warn"]


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first calling frame outside the jaxdml package."""
    frame, level = sys._getframe(1), 2  # stacklevel 2 = the caller of this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
