"""Drawing options of pyDML's region plots, and the helpers every such plot shares: input checks
(feature names of a DataFrame), the section grid, one colour per class and the legend.

The options travel as one :class:`Style` (built by :func:`make_style` from a function's keyword
arguments, so that a misspelt option raises a ``TypeError`` naming it).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ._common import _pyplot


@dataclass(frozen=True)
class Style:
    """How a region plot is drawn (every field is a keyword argument of the plotting functions).

    Attributes
    ----------
    resolution : int or (int, int), default=120
        Grid points per axis of the region grid (a pair: along x, along y).
    grid_step : float or (float, float), optional
        Spacing of the grid instead of a number of points.
    cmap : str or Colormap, default="tab10"
        Colours of the classes (None: matplotlib's default map).
    label_colors : list of colours, optional
        One matplotlib colour per class, in the order of the sorted labels (overrides ``cmap``).
    region_intensity : float in [0, 1], default=0.4
        Opacity of the regions.
    plot_points, plot_regions : bool, default=True
    legend : bool, default=True
    legend_loc : str or pair of float, optional
        Where the legend goes ("lower right" on the axes, "center right" on the figure).
    legend_on_axis : bool, default=False
        Legend inside the axes instead of beside them.
    legend_plot_points, legend_plot_regions : bool, default=True
        Draw a point marker, a region patch, or both, for each class in the legend.
    xrange, yrange : (float, float), optional
        Limits of the region grid and of the axes (default: the data range plus a margin).
    xlabel, ylabel : str, optional
        Axis labels (default: the column names of a DataFrame, else none).
    """

    resolution: Any = 120
    grid_step: Any = None
    cmap: Any = "tab10"
    label_colors: Any = None
    region_intensity: float = 0.4
    plot_points: bool = True
    plot_regions: bool = True
    legend: bool = True
    legend_loc: Any = None
    legend_on_axis: bool = False
    legend_plot_points: bool = True
    legend_plot_regions: bool = True
    xrange: Any = None
    yrange: Any = None
    xlabel: Any = None
    ylabel: Any = None


STYLE_FIELDS = tuple(f.name for f in fields(Style))


def _pair(value, name, kind):
    """``value`` as a pair of ``kind`` (a scalar is used for both axes)."""
    pair = (value, value) if np.isscalar(value) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, kind) and not isinstance(v, bool) for v in pair):
        raise ValueError(f"{name} must be a {kind.__name__} or a pair of them; got {value!r}.")
    return pair


def make_style(owner: str, defaults: dict | None = None, **options) -> Style:
    """The :class:`Style` of ``owner``'s call: its ``defaults`` updated with the caller's ``options``."""
    unknown = sorted(set(options) - set(STYLE_FIELDS))
    if unknown:
        raise TypeError(f"{owner}() got unexpected keyword argument(s) {unknown}; its drawing options are "
                        f"{list(STYLE_FIELDS)}.")
    style = replace(Style(**(defaults or {})), **options)
    if style.grid_step is None and not all(v >= 2 for v in _pair(style.resolution, "resolution", numbers.Integral)):
        raise ValueError(f"resolution must be at least 2 points per axis; got {style.resolution!r}.")
    if style.grid_step is not None and not all(v > 0 for v in _pair(style.grid_step, "grid_step", numbers.Real)):
        raise ValueError(f"grid_step must be positive; got {style.grid_step!r}.")
    if not 0.0 <= float(style.region_intensity) <= 1.0:
        raise ValueError(f"region_intensity must be between 0 and 1; got {style.region_intensity!r}.")
    for name in ("xrange", "yrange"):
        r = getattr(style, name)
        if r is not None and (len(r) != 2 or not float(r[0]) < float(r[1])):
            raise ValueError(f"{name} must be a pair (min, max) with min < max; got {r!r}.")
    return style


# ---------------------------------------------------------------------------------------------- data
def feature_names(X):
    """The column names of a DataFrame-like ``X`` (anything with ``columns``), else None."""
    cols = getattr(X, "columns", None)
    return None if cols is None else list(cols)


def resolve_attrs(attrs, names, n_features: int, count: int, what: str = "attrs") -> tuple:
    """Feature positions of ``attrs`` (column names of a DataFrame, or positions); ``count`` of them,
    all different (None: the first ``count`` features)."""
    if attrs is None:
        return tuple(range(count))
    out = []
    for a in attrs:
        if names is not None and not isinstance(a, (bool, np.bool_)) and a in names:
            out.append(names.index(a))
        elif isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_)) and 0 <= a < n_features:
            out.append(int(a))
        else:
            known = f"column names {names} or " if names is not None else ""
            raise ValueError(f"{what}: {a!r} is not a feature; give {known}positions below {n_features}.")
    if len(out) != count or len(set(out)) != count:
        raise ValueError(f"{what} must be {count} different features; got {list(attrs)!r}.")
    return tuple(out)


def check_data(X, y, min_features: int = 2):
    """``(X as float64, y as an array, column names or None)``, with clear errors for bad shapes."""
    names = feature_names(X)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] < min_features:
        raise ValueError(f"the plots need data of shape (n_samples, >= {min_features} features); got {X.shape}.")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has shape {y.shape}; give one label per row.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values.")
    return X, y, names


def axis_grid(values, lim, n_or_step, by_step: bool, margin: float = 0.08):
    """Grid coordinates along one axis: over ``lim`` or the data range plus a margin."""
    if lim is None:
        lo, hi = float(values.min()), float(values.max())
        pad = (hi - lo) * margin + 1e-9
        lo, hi = lo - pad, hi + pad
    else:
        lo, hi = float(lim[0]), float(lim[1])
    return np.arange(lo, hi, n_or_step) if by_step else np.linspace(lo, hi, int(n_or_step))


def section(X, attrs, sections: str, axes: list):
    """Rows of a grid over features ``attrs`` (coordinates ``axes``, meshed with 'xy' indexing for two
    features, 'ij' for three); the other features at their mean (``"mean"``) or zero (``"zeros"``).

    Returns the meshed coordinates and the (n_grid, n_features) rows."""
    if sections not in ("mean", "zeros"):
        raise ValueError(f"sections must be 'mean' or 'zeros'; got {sections!r}.")
    mesh = np.meshgrid(*axes, indexing="xy" if len(axes) == 2 else "ij")
    base = X.mean(0) if sections == "mean" else np.zeros(X.shape[1])
    full = np.repeat(base[None, :], mesh[0].size, axis=0)
    for a, m in zip(attrs, mesh):
        full[:, a] = m.ravel()
    return mesh, full


def region_grid(X, attrs, sections: str, style: Style):
    """The 2-D section grid of :func:`section` with the style's resolution, step and ranges."""
    by_step = style.grid_step is not None
    steps = _pair(style.grid_step, "grid_step", numbers.Real) if by_step else _pair(
        style.resolution, "resolution", numbers.Integral)
    axes = [axis_grid(X[:, a], lim, s, by_step) for a, lim, s in zip(attrs, (style.xrange, style.yrange), steps)]
    if min(len(a) for a in axes) < 2:
        raise ValueError("grid_step is larger than the plotted range; use a smaller step.")
    (gx, gy), full = section(X, attrs, sections, axes)
    return gx, gy, full


# ---------------------------------------------------------------------------------------------- colours
def colours(style: Style, n: int) -> list:
    """One RGBA colour per class: ``label_colors``, or the qualitative map's own colours (tab10), or
    ``n`` samples of a continuous map."""
    from matplotlib.colors import to_rgba

    if style.label_colors is not None:
        given = list(style.label_colors)
        if len(given) < n:
            raise ValueError(f"label_colors has {len(given)} colours for {n} classes; give one per class.")
        try:
            return [to_rgba(c) for c in given[:n]]
        except ValueError as err:
            raise ValueError(f"label_colors: {err}") from None
    cm = _pyplot().get_cmap(style.cmap)
    return [cm(c % cm.N) if cm.N <= 20 else cm(c / max(n - 1, 1)) for c in range(n)]


def legend(fig, ax, classes, cols, style: Style) -> None:
    """The class legend (up to 12 classes): a point marker, a region patch, or both per class, on the
    axes (``legend_on_axis``) or beside them."""
    if not style.legend or len(classes) > 12:
        return
    plt = _pyplot()
    from matplotlib.patches import Patch

    points = style.legend_plot_points and style.plot_points
    regions = style.legend_plot_regions and style.plot_regions
    handles = []
    for col in cols:
        marker = plt.Line2D([], [], marker="o", ls="", color=col, markeredgecolor="k")
        patch = Patch(color=col, alpha=style.region_intensity)
        handles.append((patch, marker) if points and regions else patch if regions else marker)
    labels = [str(c) for c in classes]
    if style.legend_on_axis and ax is not None:
        ax.legend(handles, labels, loc=style.legend_loc or "lower right", fontsize=8)
    else:
        fig.legend(handles, labels, loc=style.legend_loc or "center right", fontsize=8)
