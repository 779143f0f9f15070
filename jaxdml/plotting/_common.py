"""Helpers shared by the plotting modules (matplotlib is imported only when a figure is drawn)."""

from __future__ import annotations

import numpy as np


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def _as_transform(metric):
    if metric is None:
        return lambda Z: np.asarray(Z, dtype=np.float64)
    if hasattr(metric, "transform"):
        return lambda Z: np.asarray(metric.transform(np.asarray(Z, dtype=np.float64)), dtype=np.float64)
    if callable(metric):
        return lambda Z: np.asarray(metric(np.asarray(Z, dtype=np.float64)), dtype=np.float64)
    L = np.asarray(metric, dtype=np.float64)
    if L.ndim != 2:
        raise ValueError(f"metric must be an estimator, a callable or a 2-D matrix L; got shape {L.shape}.")
    return lambda Z: np.asarray(Z, dtype=np.float64) @ L.T


def _finish(fig, path, dpi=110):
    if path is not None:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        _pyplot().close(fig)
    return fig


def _check_2d(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"decision regions need 2-D data (n_samples, 2); got shape {X.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
    return X, y


def _region_grid(X, resolution, margin=0.08):
    lo, hi = X.min(0), X.max(0)
    pad = (hi - lo) * margin + 1e-9
    xs = np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution)
    ys = np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution)
    gx, gy = np.meshgrid(xs, ys)
    return gx, gy, np.c_[gx.ravel(), gy.ravel()]


def _draw_regions(ax, X, codes, Zfit, Zgrid, gx, gy, k, n_classes, cmap):
    from sklearn.neighbors import KNeighborsClassifier

    pred = KNeighborsClassifier(n_neighbors=min(k, len(codes))).fit(Zfit, codes).predict(Zgrid)
    ax.contourf(gx, gy, pred.reshape(gx.shape), levels=np.arange(n_classes + 1) - 0.5, cmap=cmap, alpha=0.3,
                vmin=-0.5, vmax=n_classes - 0.5)
    ax.scatter(X[:, 0], X[:, 1], c=codes, cmap=cmap, vmin=-0.5, vmax=n_classes - 0.5, s=14, edgecolors="k",
               linewidths=0.3)
