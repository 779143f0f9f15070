"""Plots of learned metrics and experiment results (matplotlib, imported only when a function runs).

* :func:`plot_decision_regions` -- k-NN decision regions of 2-D data under a (learned) transform;
* :func:`plot_metric_comparison` -- the tutorial's first use-case figure: k-NN regions under the
  Euclidean distance and under a learned metric side by side, plus the transformed data;
* :func:`plot_projection` -- a 2-D embedding (e.g. digits by a learned 2-row ``L``);
* :func:`plot_dim_curves` -- accuracy against dimension for the ``dim`` experiment;
* :func:`plot_sign_test` -- the posterior of a Bayesian sign test on the simplex;
* pyDML's region plots: :func:`classifier_plot`, :func:`dml_plot`, :func:`knn_plot`,
  :func:`dml_multiplot`, the pair plots and :func:`classifier_plot_3d` (``_pydml.py``, ``_pydml3d.py``).

Every function returns the matplotlib ``Figure``; with ``path`` it also saves it (PNG, PDF, ...
by extension) and closes it. ``metric`` arguments accept a fitted jaxdml estimator or
:class:`~jaxdml.FittedMetric` (anything with ``transform``), a linear map ``L`` as an array, a
callable ``X -> Z``, or None (the Euclidean distance).
"""

from __future__ import annotations

import re

import numpy as np

from ._common import _as_transform, _check_2d, _draw_regions, _finish, _pyplot, _region_grid
from ._pydml import (classifier_pairplots, classifier_plot, dml_multiplot, dml_pairplots, dml_plot, knn_pairplots,
                     knn_plot)
from ._pydml3d import classifier_plot_3d

__all__ = [
    "plot_decision_regions",
    "plot_metric_comparison",
    "plot_projection",
    "plot_dim_curves",
    "plot_sign_test",
    # tools: pyDML's plots
    "classifier_plot",
    "dml_plot",
    "knn_plot",
    "dml_multiplot",
    "classifier_pairplots",
    "dml_pairplots",
    "knn_pairplots",
    "classifier_plot_3d",
]


def plot_decision_regions(X, y, metric=None, *, k: int = 3, ax=None, resolution: int = 150, title=None,
                          cmap="tab10", path=None):
    """k-NN decision regions on 2-D data, with distances measured after ``metric``.

    Parameters
    ----------
    X : array of shape (n_samples, 2)
    y : array of shape (n_samples,)
    metric : estimator, FittedMetric, array L, callable or None
        The learned transformation (None: Euclidean).
    k : int, default=3
    ax : matplotlib Axes, optional
    resolution : int, default=150
        Grid points per axis.
    title : str, optional
    path : str or Path, optional
        Save the figure there (and close it).

    Returns
    -------
    matplotlib.figure.Figure
    """
    X, y = _check_2d(X, y)
    classes, codes = np.unique(y, return_inverse=True)
    tf = _as_transform(metric)
    plt = _pyplot()
    fig = ax.figure if ax is not None else plt.subplots(figsize=(4.5, 4))[0]
    ax = ax if ax is not None else fig.axes[0]
    gx, gy, grid = _region_grid(X, resolution)
    _draw_regions(ax, X, codes, tf(X), tf(grid), gx, gy, k, len(classes), cmap)
    ax.set_title(title or ("Euclidean" if metric is None else "learned metric") + f", {k}-NN")
    ax.set_xticks([])
    ax.set_yticks([])
    return _finish(fig, path)


def plot_metric_comparison(X, y, metric, *, k: int = 3, names=("Euclidean distance", "learned distance"),
                           resolution: int = 150, cmap="tab10", path=None):
    """Three panels: k-NN regions under the Euclidean distance, under the learned ``metric`` (in the
    original space), and the transformed data ``L x`` with its k-NN regions.

    ``metric`` must map 2-D data to 1 or 2 dimensions for the third panel (a 1-D embedding is
    drawn on a line).
    """
    X, y = _check_2d(X, y)
    classes, codes = np.unique(y, return_inverse=True)
    tf = _as_transform(metric)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    gx, gy, grid = _region_grid(X, resolution)
    _draw_regions(axes[0], X, codes, X, grid, gx, gy, k, len(classes), cmap)
    axes[0].set_title(f"{names[0]}, {k}-NN")
    _draw_regions(axes[1], X, codes, tf(X), tf(grid), gx, gy, k, len(classes), cmap)
    axes[1].set_title(f"{names[1]}, {k}-NN")
    Z = tf(X)
    if Z.shape[1] >= 2:
        Z2 = Z[:, :2]
        hx, hy, hgrid = _region_grid(Z2, resolution)
        _draw_regions(axes[2], Z2, codes, Z2, hgrid, hx, hy, k, len(classes), cmap)
        axes[2].set_title("transformed data" + (" (first 2 dims)" if Z.shape[1] > 2 else ""))
    else:
        axes[2].scatter(Z[:, 0], np.zeros(len(Z)), c=codes, cmap=cmap, vmin=-0.5, vmax=len(classes) - 0.5, s=14,
                        edgecolors="k", linewidths=0.3)
        axes[2].set_title("transformed data (1-D)")
    for a in axes:
        a.set_xticks([])
        a.set_yticks([])
    fig.tight_layout()
    return _finish(fig, path)


def plot_projection(X, y, metric=None, *, ax=None, title=None, annotate: bool = False, cmap="tab10", path=None):
    """Scatter plot of the first two coordinates of ``metric.transform(X)`` coloured by class
    (``annotate=True`` writes each sample's label instead of a dot, as in the digits figures)."""
    Z = _as_transform(metric)(X)
    y = np.asarray(y)
    if Z.ndim != 2 or Z.shape[1] < 2:
        raise ValueError(f"the projection needs at least 2 output dimensions; got shape {Z.shape}.")
    classes, codes = np.unique(y, return_inverse=True)
    plt = _pyplot()
    fig = ax.figure if ax is not None else plt.subplots(figsize=(5, 4.5))[0]
    ax = ax if ax is not None else fig.axes[0]
    colors = plt.get_cmap(cmap)(codes % 10 if cmap == "tab10" else codes / max(len(classes) - 1, 1))
    if annotate:
        for (a, b), lab, col in zip(Z[:, :2], y, colors):
            ax.text(a, b, str(lab), color=col, fontsize=7, ha="center", va="center")
        ax.set_xlim(Z[:, 0].min(), Z[:, 0].max())
        ax.set_ylim(Z[:, 1].min(), Z[:, 1].max())
    else:
        ax.scatter(Z[:, 0], Z[:, 1], c=colors, s=8)
        handles = [plt.Line2D([], [], marker="o", ls="", color=plt.get_cmap(cmap)(i % 10), label=str(c))
                   for i, c in enumerate(classes)] if len(classes) <= 12 else []
        if handles:
            ax.legend(handles=handles, fontsize=7, loc="best", markerscale=0.8)
    ax.set_title(title or "2-D projection")
    return _finish(fig, path)


def _dim_of(label: str) -> float:
    m = re.search(r"\((\d+)\)\s*$", str(label)) or re.match(r"^\s*(\d+)\s*$", str(label))
    return float(m.group(1)) if m else np.nan


def plot_dim_curves(test, train=None, *, title=None, ax=None, path=None):
    """Accuracy against dimension, one line per algorithm (the ``dim`` experiment).

    Parameters
    ----------
    test : Table
        A ``dim`` table (rows are dimensions such as ``"10"`` or ``"max (60)"``; rows without a
        number, such as the published labels ``"N. Clases - 1"`` and ``"Dim. máxima"``, are not drawn).
    train : Table, optional
        Drawn dashed in the same colours.
    """
    plt = _pyplot()
    fig = ax.figure if ax is not None else plt.subplots(figsize=(6, 4))[0]
    ax = ax if ax is not None else fig.axes[0]
    dims = np.array([_dim_of(r) for r in test.rows])
    order = np.argsort(dims, kind="stable")
    keep = order[~np.isnan(dims[order])]
    # duplicates (e.g. "1" and "classes-1 (1)") are drawn once
    _, first = np.unique(dims[keep], return_index=True)
    keep = keep[np.sort(first)]
    for j, col in enumerate(test.columns):
        color = plt.get_cmap("tab10")(j % 10)
        v = test.values[keep, j]
        ax.plot(dims[keep], v, marker="o", ms=3, color=color, label=col)
        if train is not None:
            ax.plot(dims[keep], train.values[keep, j], ls="--", lw=0.8, color=color)
    ax.set_xscale("log")
    ax.set_xticks(dims[keep])
    ax.set_xticklabels([str(int(d)) for d in dims[keep]], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("dimension")
    ax.set_ylabel("accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title((title or test.title or "accuracy vs dimension") + (" (dashed: train)" if train is not None else ""),
                 fontsize=10)
    return _finish(fig, path)


def plot_sign_test(result, *, ax=None, max_points: int = 20000, path=None):
    """The posterior samples of a :func:`~jaxdml.experiments.bayesian_sign_test` on the simplex.

    Vertices: first algorithm better (bottom left), second better (bottom right), rope (top); the
    lines from the centre split the triangle into the regions where each is most probable.
    """
    plt = _pyplot()
    fig = ax.figure if ax is not None else plt.subplots(figsize=(5, 4.6))[0]
    ax = ax if ax is not None else fig.axes[0]
    h = np.sqrt(3) / 2
    S = np.asarray(result.samples)[:max_points]
    px = S[:, 2] + 0.5 * S[:, 1]
    py = h * S[:, 1]
    ax.plot([0, 1, 0.5, 0], [0, 0, h, 0], color="k", lw=1)
    c = (0.5, h / 3)
    for m in ((0.5, 0), (0.25, h / 2), (0.75, h / 2)):
        ax.plot([c[0], m[0]], [c[1], m[1]], color="0.4", lw=0.8, ls="--")
    ax.hexbin(px, py, gridsize=40, mincnt=1, cmap="Blues", extent=(0, 1, 0, h), linewidths=0.1)
    a, b = result.names
    ax.text(0, -0.05, f"{a}\np = {result.p_first:.3f}", ha="center", va="top", fontsize=9)
    ax.text(1, -0.05, f"{b}\np = {result.p_second:.3f}", ha="center", va="top", fontsize=9)
    ax.text(0.5, h + 0.03, f"rope [-{result.rope:g}, {result.rope:g}]\np = {result.p_rope:.3f}", ha="center",
            va="bottom", fontsize=9)
    ax.set_xlim(-0.15, 1.15)
    ax.set_ylim(-0.2, h + 0.17)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"Bayesian sign test: {a} vs {b}", fontsize=10)
    return _finish(fig, path)
