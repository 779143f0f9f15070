"""pyDML's 3-D classifier plot: the data on three features and the surfaces between the class regions.

The classifier is evaluated on a 3-D grid (a section of the feature space when there are more than
three features, as in the 2-D plots); a boundary point is the midpoint of two grid neighbours
(along any axis) predicted as the two classes of a pair. The boundary of each pair is drawn as a
triangulated surface, or as a cloud of points when it cannot be triangulated over the plane of the
first two axes (a surface parallel to the third axis).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ._common import _finish, _pyplot
from ._pydml import _fitted, _predictor
from ._style import axis_grid, check_data, colours, legend, make_style, resolve_attrs, section

__all__ = ["classifier_plot_3d", "boundary_points"]


def boundary_points(pred, axes, a: int, b: int) -> np.ndarray:
    """Midpoints of grid neighbours predicted as classes ``a`` and ``b``.

    Parameters
    ----------
    pred : int array of shape (nx, ny, nz)
        Class codes on the grid (``'ij'`` indexing of ``axes``).
    axes : three 1-D arrays
        The grid coordinates along each axis.
    a, b : int
        The two class codes.

    Returns
    -------
    ndarray of shape (n_points, 3)
    """
    out = []
    for k in range(3):
        lo = np.take(pred, np.arange(pred.shape[k] - 1), axis=k)
        hi = np.take(pred, np.arange(1, pred.shape[k]), axis=k)
        idx = np.nonzero(((lo == a) & (hi == b)) | ((lo == b) & (hi == a)))
        coords = [np.asarray(axes[m])[idx[m]] for m in range(3)]
        coords[k] = 0.5 * (np.asarray(axes[k])[idx[k]] + np.asarray(axes[k])[idx[k] + 1])
        out.append(np.stack(coords, axis=1))
    return np.concatenate(out)


def _surface(ax, P, colour, alpha):
    """A triangulated surface through the points ``P``, or the points themselves."""
    if len(P) >= 3:
        try:
            return ax.plot_trisurf(P[:, 0], P[:, 1], P[:, 2], color=colour, alpha=alpha, linewidth=0)
        except (ValueError, RuntimeError):  # degenerate in the (x, y) plane: qhull cannot triangulate
            pass
    return ax.scatter(P[:, 0], P[:, 1], P[:, 2], color=colour, alpha=alpha, s=3, depthshade=False)


def _pairs(region_pairs, classes):
    if region_pairs in ("all", True):
        return list(combinations(range(len(classes)), 2))
    if region_pairs in (None, False):
        return []
    out = []
    for pair in region_pairs:
        if len(pair) != 2 or not all(np.any(classes == c) for c in pair):
            raise ValueError(f"region_pairs: {pair!r} is not a pair of labels of y ({list(classes)}).")
        out.append(tuple(int(np.flatnonzero(classes == c)[0]) for c in pair))
    return out


def classifier_plot_3d(X, y, clf, attrs=None, sections="mean", fitted=False, *, ax=None, elev=0.0, azim=0.0,
                       title=None, region_pairs="all", zrange=None, zlabel=None, figsize=None, path=None, **style):
    """Class boundaries of any classifier on three features, in 3-D.

    Parameters
    ----------
    X : array or DataFrame of shape (n_samples, n_features >= 3)
    y : array of shape (n_samples,)
    clf : classifier
        Cloned and fitted on ``(X, y)`` unless ``fitted``.
    attrs : three ints or column names, optional
        The features drawn (default: the first three).
    sections : {"mean", "zeros"}
        The value of the other features.
    fitted : bool, default=False
    ax : a 3-D matplotlib Axes, optional
    elev, azim : float, default=0.0
        The view angles (``ax.view_init``).
    title : str, optional
    region_pairs : "all", None or list of label pairs, default="all"
        The boundaries drawn: between every pair of classes, none, or the pairs listed.
    zrange : (float, float), optional
        Range of the third feature (``xrange``/``yrange`` are drawing options).
    zlabel : str, optional
    figsize : (float, float), optional
    path : str or Path, optional
    **style
        Drawing options of :func:`~jaxdml.plotting.dml_plot` (``resolution`` default 20 per axis, an
        int or a triple; ``plot_regions`` switches the surfaces).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if style.get("grid_step") is not None:
        raise ValueError("classifier_plot_3d takes a number of grid points per axis (resolution), not grid_step.")
    res = style.pop("resolution", 20)
    res = (res,) * 3 if np.isscalar(res) else tuple(res)
    if len(res) != 3 or not all(isinstance(r, (int, np.integer)) and r >= 2 for r in res):
        raise ValueError(f"resolution must be an int >= 2 or three of them; got {res!r}.")
    style = make_style("classifier_plot_3d", dict(resolution=int(res[0]), legend_on_axis=True), **style)
    X, y, names = check_data(X, y, min_features=3)
    attrs = resolve_attrs(attrs, names, X.shape[1], 3)
    classes, codes = np.unique(y, return_inverse=True)
    cols = colours(style, len(classes))
    model = _fitted(clf, X, y, fitted)
    lims = (style.xrange, style.yrange, zrange)
    axes = [axis_grid(X[:, a], lim, r, False) for a, lim, r in zip(attrs, lims, res)]
    _, full = section(X, attrs, sections, axes)
    pred = _predictor(model, classes)(full).reshape(tuple(len(a) for a in axes))
    plt = _pyplot()
    if ax is None:
        fig = plt.figure(figsize=figsize or (6, 5))
        ax = fig.add_subplot(111, projection="3d")
    fig = ax.figure
    if style.plot_regions:
        for a, b in _pairs(region_pairs, classes):
            P = boundary_points(pred, axes, a, b)
            if len(P):
                mix = tuple(0.5 * (np.asarray(cols[a]) + np.asarray(cols[b])))
                _surface(ax, P, mix[:3], style.region_intensity)
    if style.plot_points:
        i, j, k = attrs
        ax.scatter(X[:, i], X[:, j], X[:, k], c=[cols[c] for c in codes], s=14, edgecolors="k", linewidths=0.3)
    labels = [style.xlabel, style.ylabel, zlabel]
    for setter, lab, a in zip((ax.set_xlabel, ax.set_ylabel, ax.set_zlabel), labels, attrs):
        text = lab if lab is not None else (names[a] if names is not None else None)
        if text is not None:
            setter(str(text))
    ax.view_init(elev=elev, azim=azim)
    if title:
        ax.set_title(title)
    legend(fig, ax, classes, cols, style)
    return _finish(fig, path)
