"""The object every fit returns."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .._version import __version__
from ..linalg import pairwise_sq_dists

__all__ = ["FittedMetric", "KernelFittedMetric", "FORMAT", "FORMAT_VERSION"]

#: tag and version of the ``.npz`` files written by ``save`` (read by :func:`jaxdml.load`)
FORMAT = "jaxdml-metric"
FORMAT_VERSION = 1


@dataclass
class FittedMetric:
    """A learned Mahalanobis distance: the linear map ``L`` and the metric ``M = L^T L``.

    Attributes
    ----------
    L : ndarray of shape (n_components, n_features)
        The learned linear map; ``transform(X) = X @ L.T``.
    method : str
        Name of the loss or solver that produced it.
    n_iter : int
        Optimisation steps taken (0 for closed-form methods).
    converged : bool
        Whether the stopping test (rather than the iteration budget) ended the optimisation.
    loss_history : ndarray
        Loss value at each iterate (empty for closed-form methods).
    loss : float or None
        Final (best) loss value.
    classes : ndarray or None
        The label values, in the order of the codes used internally.
    info : dict
        Method-specific diagnostics (eigenvalues, constraint satisfaction, ...).
    input_scaling : tuple of two ndarrays or None
        ``(offset, scale)`` applied to inputs before the map, ``x -> x * scale + offset`` (the
        min-max scaling the command line fits; None for metrics learned on the data as given).
    """

    L: np.ndarray
    method: str = ""
    n_iter: int = 0
    converged: bool = True
    loss_history: np.ndarray = field(default_factory=lambda: np.zeros(0))
    loss: Optional[float] = None
    classes: Optional[np.ndarray] = None
    info: dict = field(default_factory=dict)
    metric_: Optional[np.ndarray] = None
    input_scaling: Optional[tuple] = None

    def _prepare(self, X, dtype=None) -> np.ndarray:
        """``X`` as a finite 2-D float array of ``n_features`` columns (``dtype``: default float32
        or wider), scaled as at fit time; a ``ValueError`` naming the problem otherwise."""
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ValueError("X must be real; it holds complex numbers.")
        if X.dtype.kind not in "biuf":
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"X must be numeric; it holds values that are not numbers (dtype {X.dtype}).") \
                    from None
        X = X.astype(np.result_type(X.dtype, np.float32) if dtype is None else dtype, copy=False)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X has shape {X.shape}; this metric was learned on {self.n_features} features."
            )
        bad = ~np.isfinite(X)
        if bad.any():
            raise ValueError(f"X contains NaN or infinity ({int(bad.sum())} value(s), the first in row "
                             f"{int(np.argwhere(bad)[0, 0])}); a metric cannot embed them.")
        if self.input_scaling is not None:
            offset, scale = self.input_scaling
            X = X * np.asarray(scale, dtype=X.dtype) + np.asarray(offset, dtype=X.dtype)
        return X

    @property
    def M(self) -> np.ndarray:
        """The metric matrix ``L^T L`` (n_features, n_features)."""
        if self.metric_ is not None:
            return self.metric_
        return self.L.T @ self.L

    @property
    def n_components(self) -> int:
        """Number of rows of ``L``: the dimension of the embedding."""
        return self.L.shape[0]

    @property
    def n_features(self) -> int:
        """Number of input features: the columns of ``L``."""
        return self.L.shape[1]

    def transform(self, X) -> np.ndarray:
        """Embed ``X``: ``X @ L.T`` (squared Euclidean distances there are Mahalanobis under M)."""
        X = self._prepare(X)
        return X @ self.L.T.astype(X.dtype, copy=False)

    def pairwise_distances(self, X, Y=None, *, squared: bool = False) -> np.ndarray:
        """Mahalanobis distances between the rows of ``X`` and ``Y`` (default ``X``), in the dtype of
        the embedding (computed in float64 after a translation, :func:`jaxdml.linalg.pairwise_sq_dists`:
        the expansion ``|a|^2 + |b|^2 - 2 a.b`` cancels badly in float32 and far from the origin; a
        point's distance to itself is 0)."""
        A = self.transform(X)
        B = A if Y is None else self.transform(Y)
        D = pairwise_sq_dists(A.astype(np.float64), None if Y is None else B.astype(np.float64), xp=np)
        if Y is None:
            np.fill_diagonal(D, 0.0)
        return (D if squared else np.sqrt(D)).astype(np.result_type(A.dtype, B.dtype), copy=False)

    def pair_distance(self, a, b, *, squared: bool = False) -> np.ndarray:
        """Distance between corresponding rows of ``a`` and ``b``."""
        A, B = self.transform(a), self.transform(b)
        if A.shape[0] != B.shape[0]:
            raise ValueError(f"pair_distance: a and b must have as many rows (one pair per row); got {A.shape[0]} "
                             f"and {B.shape[0]}.")
        diff = A - B
        d2 = (diff * diff).sum(axis=1)
        return d2 if squared else np.sqrt(d2)

    def save(self, path) -> str:
        """Write the metric to a ``.npz`` file that :func:`jaxdml.load` reads back.

        Returns the path written (numpy adds ``.npz`` when ``path`` lacks it).
        """
        return save_npz(self, path)

    def __repr__(self) -> str:
        return (
            f"FittedMetric(method={self.method!r}, L.shape={self.L.shape}, n_iter={self.n_iter}, "
            f"converged={self.converged}, loss={self.loss})"
        )


@dataclass
class KernelFittedMetric(FittedMetric):
    """A metric learned in a kernel feature space: ``L phi(x) = A k(x)``.

    ``A`` (n_components, n_train) is stored in ``L``'s place: ``transform(X) = K(X, X_fit) A^T``.
    ``M`` is the metric on kernel columns (``A^T A``, n_train x n_train).
    """

    X_fit: Optional[np.ndarray] = None
    kernel: Any = "rbf"
    kernel_params: dict = field(default_factory=dict)

    @property
    def A(self) -> np.ndarray:
        """The coefficients on the training rows: ``L`` (n_components, n_fit), metric-learn's name."""
        return self.L

    @property
    def n_features(self) -> int:
        """Number of input features: the columns of ``X_fit``."""
        return self.X_fit.shape[1]

    def kernel_columns(self, X) -> np.ndarray:
        """The kernel between the rows of ``X`` and the training rows: ``K(X, X_fit)``, (n, n_fit)."""
        from ..kernels import kernel_matrix

        X = self._prepare(X, np.float64)
        return kernel_matrix(X, self.X_fit, kernel=self.kernel, **self.kernel_params)

    def transform(self, X) -> np.ndarray:
        """Embed ``X``: ``K(X, X_fit) @ L.T``."""
        return self.kernel_columns(X) @ self.L.T



def _is_kernel(metric) -> bool:
    return isinstance(metric, KernelFittedMetric)


def _plain_classes(classes):
    if classes is None:
        return np.zeros(0), "none"
    arr = np.asarray(classes)
    if arr.dtype.kind in "biufUS":
        return arr, "array"
    # object labels (mixed or arbitrary hashables) are stored by their text
    return np.asarray([str(c) for c in arr]), "str"


def save_npz(metric, path) -> str:
    """Write ``metric`` to ``path`` (``.npz`` appended when missing); return the path written.

    Raises
    ------
    ValueError
        For a kernel metric with a callable kernel (its code cannot be stored portably; pickle the
        estimator instead, or use a named kernel).
    """
    path = os.fspath(path)
    if not path.endswith(".npz"):
        path = path + ".npz"
    if os.path.isdir(path):
        raise ValueError(f"Cannot save the metric to {path!r}: it is a folder.")
    for name, arr in (("L", metric.L), ("M", metric.metric_), ("X_fit", getattr(metric, "X_fit", None))):
        if arr is not None and not np.all(np.isfinite(np.asarray(arr, dtype=np.float64))):
            raise ValueError(f"Cannot save the metric to {path!r}: its {name} contains NaN or infinity (a file "
                             "that jaxdml.load would refuse).")
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
    if not _is_kernel(metric) or metric.metric_ is not None:
        arrays["M"] = np.asarray(metric.M, dtype=np.float64)
    if metric.input_scaling is not None:
        arrays["input_offset"] = np.asarray(metric.input_scaling[0], dtype=np.float64)
        arrays["input_scale"] = np.asarray(metric.input_scaling[1], dtype=np.float64)
    if _is_kernel(metric):
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
