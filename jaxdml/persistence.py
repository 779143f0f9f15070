"""Saving and loading learned metrics (``.npz``, no pickle).

:func:`save` writes a :class:`~jaxdml.FittedMetric` (linear map ``L``, metric ``M``) or a
:class:`~jaxdml.KernelFittedMetric` (coefficients ``A``, the training data, the kernel's name and
parameters) with its diagnostics, the input scaling when there is one, and the format and jaxdml
versions; :func:`load` rebuilds an object that transforms new data exactly as the saved one did.
Files are plain NumPy archives read with ``allow_pickle=False``, so loading never runs code.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .solvers._result import FORMAT, FORMAT_VERSION, FittedMetric, KernelFittedMetric

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION"]


def save(metric, path) -> str:
    """Write ``metric`` to ``path`` (``.npz`` appended when missing); return the path written.

    The same as ``metric.save(path)``; raises ``ValueError`` for a kernel metric with a callable
    kernel (its code cannot be stored portably; pickle the estimator instead).
    """
    return metric.save(path)


def load(path):
    """Read a metric written by :func:`save`, ``FittedMetric.save`` or ``jaxdml fit --out``.

    Returns
    -------
    FittedMetric or KernelFittedMetric
        ``transform`` of the loaded object equals that of the saved one.
    """
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path = path + ".npz"
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path!r} is not a jaxdml metric file (.npz): {exc}") from exc
    with data:
        if "format" not in data.files or str(data["format"]) != FORMAT:
            raise ValueError(f"{path!r} is not a jaxdml metric file (no '{FORMAT}' format tag).")
        version = int(data["format_version"])
        if version > FORMAT_VERSION:
            raise ValueError(
                f"{path!r} was written in format version {version} by jaxdml "
                f"{data['jaxdml_version']}; this jaxdml reads up to version {FORMAT_VERSION}."
            )
        kind = str(data["classes_kind"])
        classes = None if kind == "none" else data["classes"]
        loss = float(data["loss"])
        common = dict(
            L=data["L"], method=str(data["method"]), n_iter=int(data["n_iter"]),
            converged=bool(data["converged"]), loss_history=data["loss_history"],
            loss=None if np.isnan(loss) else loss, classes=classes,
            metric_=data["M"] if "M" in data.files else None,
            input_scaling=(data["input_offset"], data["input_scale"]) if "input_offset" in data.files else None,
        )
        if str(data["kind"]) == "kernel":
            return KernelFittedMetric(X_fit=data["X_fit"], kernel=str(data["kernel"]),
                                      kernel_params=json.loads(str(data["kernel_params"])), **common)
        return FittedMetric(**common)
