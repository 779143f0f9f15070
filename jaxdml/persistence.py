"""Saving and loading learned metrics (``.npz``, no pickle).

:func:`save` writes a :class:`~jaxdml.FittedMetric` (linear map ``L``, metric ``M``) or a
:class:`~jaxdml.KernelFittedMetric` (coefficients ``A``, the training data, the kernel's name and
parameters) with its diagnostics, the input scaling when there is one, and the format and jaxdml
versions; :func:`load` rebuilds an object that transforms new data exactly as the saved one did.
Files are plain NumPy archives read with ``allow_pickle=False``, so loading never runs code.

:func:`load` is the one reader of these files: whatever is wrong with a file (empty, cut short,
corrupted, another kind of file, a field missing or of the wrong shape, NaN in the map) it raises
a ``ValueError`` that names the file and the field, never a ``KeyError`` or a zip error from
inside NumPy, and never returns a metric that would transform data into NaN.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .kernels import KERNELS
from .solvers._result import FORMAT, FORMAT_VERSION, FittedMetric, KernelFittedMetric

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION"]

#: the fields every metric file has (kernel metrics also ``X_fit``, ``kernel``, ``kernel_params``)
REQUIRED = ("format", "format_version", "kind", "method", "n_iter", "converged", "loss_history",
            "loss", "classes", "classes_kind", "L")


def save(metric, path) -> str:
    """Write ``metric`` to ``path`` (``.npz`` appended when missing); return the path written.

    ``metric`` is a :class:`~jaxdml.FittedMetric` (what :func:`jaxdml.fit` returns; the same as
    ``metric.save(path)``) or a fitted jaxdml estimator (its ``result_`` is written). Anything else
    (an array, an unfitted estimator) is a ``TypeError`` naming what was given; a kernel metric with
    a callable kernel is a ``ValueError`` (its code cannot be stored portably; pickle the estimator
    instead).
    """
    if not isinstance(metric, FittedMetric):
        result = getattr(metric, "__dict__", {}).get("result_")
        if isinstance(result, FittedMetric):
            metric = result
        elif hasattr(metric, "get_params") and hasattr(type(metric), "_record"):
            what = ("holds a fixed matrix, not a learned result (save its components_ with NumPy)"
                    if hasattr(metric, "components_") else
                    "is not fitted; fit it first (save writes the learned metric)")
            raise TypeError(f"jaxdml.save: this {type(metric).__name__} {what}.")
        else:
            raise TypeError(f"jaxdml.save: expected a fitted metric (what jaxdml.fit returns, or a fitted jaxdml "
                            f"estimator); got {type(metric).__name__}"
                            + (f" of shape {np.shape(metric)}" if isinstance(metric, np.ndarray) else "") + ".")
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"jaxdml.save: path must be a str or os.PathLike; got {type(path).__name__}.")
    return metric.save(os.fsdecode(path))


def load(path):
    """Read a metric written by :func:`save`, ``FittedMetric.save`` or ``jaxdml fit --out``.

    Returns
    -------
    FittedMetric or KernelFittedMetric
        ``transform`` of the loaded object equals that of the saved one.

    Raises
    ------
    FileNotFoundError
        No file at ``path`` (nor at ``path + ".npz"``).
    ValueError
        The file is not a readable jaxdml metric file: not a NumPy ``.npz`` archive, damaged, a
        field missing, of the wrong type or shape, or not finite. The message names the file and
        the field.
    """
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"jaxdml.load: path must be a str or os.PathLike; got {type(path).__name__}.")
    path = os.fsdecode(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path = path + ".npz"
    if not os.path.exists(path):
        raise FileNotFoundError(f"jaxdml.load: no metric file {path!r}.")
    if os.path.isdir(path):
        raise ValueError(f"jaxdml.load: {path!r} is a folder, not a jaxdml metric file (.npz).")
    return _metric(_Fields(_read(path), path))


def _read(path) -> dict:
    """Every array of the archive at ``path`` (each member read, so its checksum is verified)."""
    try:
        data = np.load(path, allow_pickle=False)
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # empty, cut short, not NumPy, pickled: whatever numpy raises
        raise ValueError(f"jaxdml.load: {path!r} is not a jaxdml metric file (.npz): {type(exc).__name__}: "
                         f"{exc}") from exc
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"jaxdml.load: {path!r} holds a single NumPy array, not a jaxdml metric file (an .npz "
                         "archive written by jaxdml.save).")
    try:
        with data:
            return {name: data[name] for name in data.files}
    except Exception as exc:  # a damaged member (bad CRC, truncated, pickled object array)
        raise ValueError(f"jaxdml.load: {path!r} is damaged or not a jaxdml metric file: {type(exc).__name__}: "
                         f"{exc}") from exc


class _Fields:
    """The arrays of a metric file, each checked when read; errors name the file and the field."""

    def __init__(self, arrays: dict, path: str):
        self.arrays, self.path = arrays, path

    def error(self, name, what) -> ValueError:
        return ValueError(f"jaxdml.load: {self.path!r}: the field {name!r} {what}.")

    def __contains__(self, name) -> bool:
        return name in self.arrays

    def array(self, name, ndim=None, finite=True) -> np.ndarray:
        if name not in self.arrays:
            raise self.error(name, f"is missing (a jaxdml metric file has {', '.join(REQUIRED)})")
        a = self.arrays[name]
        if ndim is not None and a.ndim != ndim:
            raise self.error(name, f"must be a {ndim}-D array; it has shape {a.shape}")
        if finite:
            if a.dtype.kind not in "biuf":
                raise self.error(name, f"must hold numbers; it holds {a.dtype}")
            if not np.all(np.isfinite(a)):
                raise self.error(name, "contains NaN or infinity")
        return a

    def scalar(self, name, kind):
        """A 0-d field as ``kind`` (str, int, float or bool)."""
        a = self.array(name, finite=False)
        if a.size != 1:
            raise self.error(name, f"must be a single value; it has shape {a.shape}")
        value = a.reshape(()).item()
        if kind is str:
            if not isinstance(value, str):
                raise self.error(name, f"must be a string; it is {value!r}")
            return value
        whole = not isinstance(value, float) or value.is_integer()
        if isinstance(value, (str, bytes)) or value is None or (kind is not float and not whole):
            raise self.error(name, f"must be a {kind.__name__}; it is {value!r}")
        return kind(value)


def _metric(f: _Fields):
    """The metric described by the checked fields of a file."""
    if "format" not in f or f.arrays["format"].dtype.kind != "U" or str(f.arrays["format"]) != FORMAT:
        raise ValueError(f"jaxdml.load: {f.path!r} is not a jaxdml metric file (no '{FORMAT}' format tag).")
    version = f.scalar("format_version", int)
    if not 1 <= version <= FORMAT_VERSION:
        raise f.error("format_version", f"is {version}, written by jaxdml {f.arrays.get('jaxdml_version')}; this "
                                        f"jaxdml reads versions 1 to {FORMAT_VERSION}")
    kind = f.scalar("kind", str)
    if kind not in ("linear", "kernel"):
        raise f.error("kind", f"must be 'linear' or 'kernel'; it is {kind!r}")
    L = f.array("L", ndim=2).astype(np.float64)
    if L.size == 0:
        raise f.error("L", f"is empty (shape {L.shape})")
    n_iter = f.scalar("n_iter", int)
    if n_iter < 0:
        raise f.error("n_iter", f"must be >= 0; it is {n_iter}")
    loss = f.scalar("loss", float)
    common = dict(L=L, method=f.scalar("method", str), n_iter=n_iter, converged=f.scalar("converged", bool),
                  loss_history=f.array("loss_history", ndim=1, finite=False).astype(np.float64),
                  loss=None if np.isnan(loss) else loss, classes=_classes(f), metric_=_metric_matrix(f, L))
    if kind == "kernel":
        X_fit = f.array("X_fit", ndim=2).astype(np.float64)
        if X_fit.shape[0] != L.shape[1]:
            raise f.error("X_fit", f"must have one row per column of L ({L.shape[1]}); it has shape {X_fit.shape}")
        kernel, params = f.scalar("kernel", str), _kernel_params(f)
        if kernel not in KERNELS:
            raise f.error("kernel", f"must be one of {sorted(KERNELS)}; it is {kernel!r}")
        return KernelFittedMetric(X_fit=X_fit, kernel=kernel, kernel_params=params,
                                  input_scaling=_scaling(f, X_fit.shape[1]), **common)
    return FittedMetric(input_scaling=_scaling(f, L.shape[1]), **common)


def _classes(f: _Fields):
    kind = f.scalar("classes_kind", str)
    if kind not in ("none", "array", "str"):
        raise f.error("classes_kind", f"must be 'none', 'array' or 'str'; it is {kind!r}")
    return None if kind == "none" else f.array("classes", ndim=1, finite=False)


def _metric_matrix(f: _Fields, L):
    if "M" not in f:
        return None
    M = f.array("M", ndim=2).astype(np.float64)
    if M.shape != (L.shape[1], L.shape[1]):
        raise f.error("M", f"must have shape {(L.shape[1], L.shape[1])} (L has {L.shape[1]} columns); it has "
                           f"shape {M.shape}")
    return M


def _scaling(f: _Fields, n_features: int):
    """``(offset, scale)`` of the input scaling, or None; the two fields come together."""
    present = [name for name in ("input_offset", "input_scale") if name in f]
    if not present:
        return None
    if len(present) == 1:
        missing = ({"input_offset", "input_scale"} - set(present)).pop()
        raise f.error(missing, f"is missing (the file has {present[0]!r}; the input scaling needs both)")
    out = []
    for name in ("input_offset", "input_scale"):
        a = f.array(name, ndim=1).astype(np.float64)
        if a.shape[0] != n_features:
            raise f.error(name, f"must have one entry per feature ({n_features}); it has {a.shape[0]}")
        out.append(a)
    return tuple(out)


def _kernel_params(f: _Fields) -> dict:
    text = f.scalar("kernel_params", str)
    try:
        params = json.loads(text)
    except ValueError:
        raise f.error("kernel_params", "is not valid JSON") from None
    if not isinstance(params, dict) or not all(
            v is None or isinstance(v, (bool, int, float, str)) for v in params.values()):
        raise f.error("kernel_params", f"must be a JSON object of numbers or strings; it is {text[:80]!r}")
    return params
