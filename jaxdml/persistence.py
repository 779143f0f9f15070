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

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION"]

FORMAT = "jaxdml-metric"
FORMAT_VERSION = 1


def _plain_classes(classes):
    if classes is None:
        return np.zeros(0), "none"
    arr = np.asarray(classes)
    if arr.dtype.kind in "biufUS":
        return arr, "array"
    # object labels (mixed or arbitrary hashables) are stored by their text
    return np.asarray([str(c) for c in arr]), "str"


def save(metric, path) -> str:
    """Write ``metric`` to ``path`` (``.npz`` appended when missing); return the path written.

    Raises
    ------
    ValueError
        For a kernel metric with a callable kernel (its code cannot be stored portably; pickle the
        estimator instead, or use a named kernel).
    """
    from .solvers._result import KernelFittedMetric

    path = os.fspath(path)
    if not path.endswith(".npz"):
        path = path + ".npz"
    from . import __version__

    classes, classes_kind = _plain_classes(metric.classes)
    arrays = dict(
        format=np.asarray(FORMAT), format_version=np.asarray(FORMAT_VERSION),
        jaxdml_version=np.asarray(__version__), method=np.asarray(str(metric.method)),
        n_iter=np.asarray(int(metric.n_iter)), converged=np.asarray(bool(metric.converged)),
        loss_history=np.asarray(metric.loss_history, dtype=np.float64),
        loss=np.asarray(np.nan if metric.loss is None else float(metric.loss)),
        classes=classes, classes_kind=np.asarray(classes_kind),
        L=np.asarray(metric.L, dtype=np.float64),
    )
    if not isinstance(metric, KernelFittedMetric) or metric.metric_ is not None:
        arrays["M"] = np.asarray(metric.M, dtype=np.float64)
    if metric.input_scaling is not None:
        arrays["input_offset"] = np.asarray(metric.input_scaling[0], dtype=np.float64)
        arrays["input_scale"] = np.asarray(metric.input_scaling[1], dtype=np.float64)
    if isinstance(metric, KernelFittedMetric):
        if callable(metric.kernel):
            raise ValueError(
                "Cannot save a kernel metric whose kernel is a callable: its code cannot be stored in "
                "the file. Use a named kernel ('linear', 'poly', 'rbf', 'laplacian') or pickle the "
                "estimator."
            )
        arrays.update(kind=np.asarray("kernel"), X_fit=np.asarray(metric.X_fit, dtype=np.float64),
                      kernel=np.asarray(str(metric.kernel)),
                      kernel_params=np.asarray(json.dumps(_jsonable(metric.kernel_params))))
    else:
        arrays["kind"] = np.asarray("linear")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Cannot save the metric to {path!r}: folder {directory!r} does not exist.")
    np.savez(path, **arrays)
    return path


def _jsonable(params: dict) -> dict:
    out = {}
    for k, v in params.items():
        if isinstance(v, np.generic):
            v = v.item()
        if v is not None and not isinstance(v, (bool, int, float, str)):
            raise ValueError(f"Kernel parameter {k}={v!r} cannot be saved (not a number or string).")
        out[k] = v
    return out


def load(path):
    """Read a metric written by :func:`save`, ``FittedMetric.save`` or ``jaxdml fit --out``.

    Returns
    -------
    FittedMetric or KernelFittedMetric
        ``transform`` of the loaded object equals that of the saved one.
    """
    from .solvers._result import FittedMetric, KernelFittedMetric

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
