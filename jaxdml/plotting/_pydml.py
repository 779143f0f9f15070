"""pyDML's plots: class regions of a classifier, under a learned distance, on one or every pair of features.

* :func:`classifier_plot` -- the regions of any classifier on two features;
* :func:`dml_plot` -- the same after a distance: a metric matrix ``M``, a linear map ``L`` or a metric
  learner (fitted here unless ``dml_fitted``); ``transform=True`` draws the transformed data and the
  regions in the transformed space, ``transform=False`` the regions in the original space;
* :func:`knn_plot` -- :func:`dml_plot` with a k-NN classifier;
* :func:`dml_multiplot` -- a grid of such plots (several learners, several k, or learners x k);
* :func:`classifier_pairplots`, :func:`dml_pairplots`, :func:`knn_pairplots` -- the regions on every
  pair of features (a scatter-plot matrix; per-class histograms on the diagonal);
* :func:`~jaxdml.plotting.classifier_plot_3d` (in ``_pydml3d``) -- the boundaries between the regions
  on three features.

With more than two features the regions are a *section* of the feature space: the features not drawn
are held at their mean (``sections="mean"``) or at zero (``sections="zeros"``). ``X`` may be a
DataFrame: ``attrs``/``xattrs``/``yattrs`` then take its column names, which also label the axes.
``fitted=True`` means the caller's classifier (``clf``, ``knn_clf``, ``clfs``) is already fitted; a
k-NN classifier a function builds itself from ``k``/``ks`` is always fitted here.

Drawing options (keyword arguments of every function, see :class:`~jaxdml.plotting._style.Style`):
``resolution`` or ``grid_step``, ``cmap``, ``label_colors``, ``region_intensity``, ``plot_points``,
``plot_regions``, ``legend``, ``legend_loc``, ``legend_on_axis``, ``legend_plot_points``,
``legend_plot_regions``, ``xrange``, ``yrange``, ``xlabel``, ``ylabel``; and ``figsize``, ``title``,
``path``. Every function returns the matplotlib ``Figure``; with ``path`` it saves it and closes it.
"""

from __future__ import annotations

import numpy as np

from ._common import _finish, _pyplot
from ._style import check_data, colours, legend, make_style, region_grid, resolve_attrs

__all__ = ["classifier_plot", "dml_plot", "knn_plot", "dml_multiplot", "classifier_pairplots", "dml_pairplots",
           "knn_pairplots"]


def _knn(k, name="k"):
    """A k-NN classifier; ``k`` a positive int (a clear error otherwise: ``k=0`` is not 1-NN)."""
    from sklearn.neighbors import KNeighborsClassifier

    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{name} must be a positive int (the k of a k-NN classifier); got {k!r}.")
    return KNeighborsClassifier(n_neighbors=int(k))


def _fitted(est, X, y, fitted: bool):
    if fitted:
        return est
    from sklearn.base import clone

    return clone(est).fit(X, y)


def _distance_map(X, y, metric=None, transformer=None, dml=None, dml_fitted=False):
    """``X -> Z`` for the distance given as a PSD ``metric``, a linear ``transformer`` or a ``dml``
    (None when no distance is given: the Euclidean distance on ``X``)."""
    given = [a is not None for a in (metric, transformer, dml)]
    if sum(given) > 1:
        raise ValueError("give at most one of metric, transformer and dml.")
    if dml is not None:
        learner = _fitted(dml, X, y, dml_fitted)
        return lambda A: np.asarray(learner.transform(np.asarray(A, dtype=np.float64)), dtype=np.float64)
    if metric is not None:
        from ..linalg import components_from_metric

        M = np.asarray(metric, dtype=np.float64)
        if M.ndim != 2 or M.shape != (X.shape[1], X.shape[1]):
            raise ValueError(f"metric must be a square (PSD) matrix of shape {(X.shape[1],) * 2}; got shape {M.shape}.")
        transformer = components_from_metric(M)
    if transformer is not None:
        L = np.asarray(transformer, dtype=np.float64)
        if L.ndim != 2 or L.shape[1] != X.shape[1]:
            raise ValueError(f"transformer must have shape (n_components, {X.shape[1]}); got {L.shape}.")
        return lambda A: np.asarray(A, dtype=np.float64) @ L.T
    return None


def _panel(ax, X, codes, cols, predict, attrs, sections, style, names):
    """Regions of ``predict`` (rows -> class codes) on a section, and the points, on ``ax``."""
    from matplotlib.colors import ListedColormap

    i, j = attrs
    n = len(cols)
    kw = dict(cmap=ListedColormap(cols), vmin=-0.5, vmax=n - 0.5)
    if style.plot_regions:
        gx, gy, full = region_grid(X, attrs, sections, style)
        ax.contourf(gx, gy, predict(full).reshape(gx.shape), levels=np.arange(n + 1) - 0.5,
                    alpha=style.region_intensity, **kw)
    if style.plot_points:
        ax.scatter(X[:, i], X[:, j], c=codes, s=12, edgecolors="k", linewidths=0.3, **kw)
    if style.xrange is not None:
        ax.set_xlim(*style.xrange)
    if style.yrange is not None:
        ax.set_ylim(*style.yrange)
    xlabel = style.xlabel if style.xlabel is not None else (names[i] if names is not None else None)
    ylabel = style.ylabel if style.ylabel is not None else (names[j] if names is not None else None)
    if xlabel is not None:
        ax.set_xlabel(str(xlabel), fontsize=8)
    if ylabel is not None:
        ax.set_ylabel(str(ylabel), fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def _predictor(clf, classes):
    def predict(A):
        pred = np.asarray(clf.predict(A))
        codes = np.searchsorted(classes, pred)
        codes = np.clip(codes, 0, len(classes) - 1)
        if not np.all(classes[codes] == pred):
            raise ValueError(f"the classifier predicts labels that are not in y: {np.setdiff1d(pred, classes)[:5]}.")
        return codes

    return predict


def _one(X, y, clf, attrs, sections, fitted, tf, transform, ax, title, style, names):
    """One region plot: ``clf`` on ``tf(X)``; drawn in the transformed space or in the original one."""
    classes, codes = np.unique(y, return_inverse=True)
    cols = colours(style, len(classes))
    Z = X if tf is None else tf(X)
    if tf is not None and transform and Z.shape[1] < 2:
        raise ValueError("transform=True needs a map to at least 2 dimensions; use transform=False.")
    model = _fitted(clf, Z, y, fitted)
    if tf is None or not transform:  # regions drawn in the original space (named features)
        space, predict = X, (lambda A: _predictor(model, classes)(A if tf is None else tf(A)))
    else:  # the transformed data: the drawn features are its coordinates ``attrs`` (default: the first two)
        space, predict, names = Z, _predictor(model, classes), None
    if max(attrs) >= space.shape[1]:
        raise ValueError(f"attrs {attrs} do not exist in the {space.shape[1]}-dimensional transformed data.")
    _panel(ax, space, codes, cols, predict, attrs, sections, style, names)
    if title:
        ax.set_title(title, fontsize=9)
    return classes, cols


def _figure(ax, figsize, default):
    if ax is not None:
        return ax.figure, ax
    return _pyplot().subplots(figsize=figsize or default)


def dml_plot(X, y, clf, attrs=None, sections="mean", fitted=False, metric=None, transformer=None, dml=None,
             dml_fitted=False, transform=True, *, ax=None, title=None, figsize=None, path=None, **style):
    """Class regions of ``clf`` under a distance on two features.

    Parameters
    ----------
    X : array or DataFrame of shape (n_samples, n_features)
    y : array of shape (n_samples,)
    clf : classifier
        Cloned and fitted on the (transformed) data unless ``fitted``.
    attrs : pair of int or column names, optional
        The two features drawn (default: the first two; of the transformed data when ``transform``).
    sections : {"mean", "zeros"}
        The value of the features not drawn.
    fitted : bool, default=False
        ``clf`` is already fitted (on the transformed data when a distance is given).
    metric : (d, d) PSD matrix, optional
    transformer : (p, d) linear map, optional
    dml : metric learner, optional
        Fitted on ``(X, y)`` here unless ``dml_fitted``. At most one of metric, transformer, dml.
    transform : bool, default=True
        Draw the transformed data ``L x`` and the regions there; False: the regions in the original
        space under the learned distance.
    ax : matplotlib Axes, optional
    title : str, optional
        The panel's title.
    figsize : (float, float), optional
        Size of a new figure.
    path : str or Path, optional
        Save the figure there (and close it).
    **style
        Drawing options (module docstring): ``resolution`` (default 120), ``cmap``, ``label_colors``,
        ``region_intensity``, ``legend_*``, ``xrange``/``yrange``, ...

    Returns
    -------
    matplotlib.figure.Figure
    """
    style = make_style("dml_plot", None, **style)
    X, y, names = check_data(X, y)
    tf = _distance_map(X, y, metric, transformer, dml, dml_fitted)
    fig, ax = _figure(ax, figsize, (4.8, 4.2))
    pair = resolve_attrs(attrs, names, X.shape[1], 2)
    classes, cols = _one(X, y, clf, pair, sections, fitted, tf, transform, ax, title, style, names)
    legend(fig, ax, classes, cols, style)
    return _finish(fig, path)


def classifier_plot(X, y, clf, attrs=None, sections="mean", fitted=False, **kwargs):
    """Class regions of any classifier on two features (see :func:`dml_plot` for the options)."""
    return dml_plot(X, y, clf, attrs, sections, fitted, transform=False, **kwargs)


def knn_plot(X, y, k=1, attrs=None, sections="mean", knn_clf=None, fitted=False, metric=None, transformer=None,
             dml=None, dml_fitted=False, transform=True, **kwargs):
    """k-NN regions under a distance on two features (:func:`dml_plot` with ``KNeighborsClassifier(k)``,
    or with ``knn_clf``; ``fitted`` applies to ``knn_clf`` only)."""
    if knn_clf is None:
        clf, fitted = _knn(k), False
        kwargs.setdefault("title", f"{k}-NN")
    else:
        clf = knn_clf
    return dml_plot(X, y, clf, attrs, sections, fitted, metric, transformer, dml, dml_fitted, transform, **kwargs)


def _broadcast(n, **lists):
    out = {}
    for name, v in lists.items():
        v = [None] if v is None else list(v)
        if len(v) not in (1, n):
            raise ValueError(f"{name} has {len(v)} entries; give 1 or {n} (one per plot).")
        out[name] = v * n if len(v) == 1 else v
    return out


def _crossed(dmls, ks, subtitles):
    """Every distance of ``dmls`` (rows) with every k of ``ks`` (columns)."""
    dl, kl = list(dmls or [None]), list(ks or [1])
    if subtitles is None:
        subtitles = [f"{'Euclidean' if d is None else type(d).__name__}, {k}-NN" for d in dl for k in kl]
    return [d for d in dl for _ in kl], [k for _ in dl for k in kl], len(dl), len(kl), subtitles


def dml_multiplot(X, y, nrow=None, ncol=None, ks=None, clfs=None, attrs=None, sections="mean", fitted=False,
                  metrics=None, transformers=None, dmls=None, dml_fitted=False, transforms=None, title=None,
                  subtitles=None, *, cross=False, figsize=None, path=None, **style):
    """A grid of region plots, one per (classifier or k, distance).

    Each list (``ks`` -- k-NN classifiers, ``clfs``, ``metrics``, ``transformers``, ``dmls``,
    ``transforms``, ``subtitles``) holds one entry per plot, or one entry for all; a plot whose
    ``clfs`` entry is None uses a k-NN classifier with its ``ks`` entry (1 if None). ``fitted``
    applies to the classifiers of ``clfs`` only. ``cross=True`` draws every distance of ``dmls``
    (rows; None: Euclidean) with every k of ``ks`` (columns): the grid of learners x k.
    ``transforms`` defaults to False (regions in the original space). ``title`` is the figure's
    title, ``subtitles`` the panels'. Drawing options as :func:`dml_plot` (``resolution`` 80).

    Returns
    -------
    matplotlib.figure.Figure
    """
    style = make_style("dml_multiplot", dict(resolution=80), **style)
    X, y, names = check_data(X, y)
    pair = resolve_attrs(attrs, names, X.shape[1], 2)
    if cross:
        dmls, ks, nrow, ncol, subtitles = _crossed(dmls, ks, subtitles)
    lists = (ks, clfs, metrics, transformers, dmls, transforms, subtitles)
    n = max((len(v) for v in lists if v is not None), default=1)
    b = _broadcast(n, ks=ks, clfs=clfs, metrics=metrics, transformers=transformers, dmls=dmls,
                   transforms=transforms or [False], subtitles=subtitles)
    if nrow is None or ncol is None:
        ncol = ncol or int(np.ceil(np.sqrt(n)))
        nrow = nrow or int(np.ceil(n / ncol))
    if nrow * ncol < n:
        raise ValueError(f"a {nrow} x {ncol} grid cannot hold {n} plots.")
    fig, axes = _pyplot().subplots(nrow, ncol, figsize=figsize or (3.2 * ncol, 3 * nrow), squeeze=False)
    classes = cols = None
    for p, ax in enumerate(axes.ravel()):
        if p >= n:
            ax.axis("off")
            continue
        own = b["clfs"][p] is None  # a k-NN classifier built here: never "fitted" by the caller
        k = 1 if b["ks"][p] is None else b["ks"][p]  # None: 1-NN; 0 or -1 is an error, not 1-NN
        clf = _knn(k, f"ks[{p}]") if own else b["clfs"][p]
        tf = _distance_map(X, y, b["metrics"][p], b["transformers"][p], b["dmls"][p], dml_fitted)
        sub = b["subtitles"][p] or (f"{k}-NN" if own else type(clf).__name__)
        classes, cols = _one(X, y, clf, pair, sections, fitted and not own, tf, bool(b["transforms"][p]), ax, sub,
                             style, names)
    if title:
        fig.suptitle(title)
    legend(fig, None, classes, cols, style)
    fig.tight_layout(rect=(0, 0, 0.88 if style.legend and not style.legend_on_axis else 1, 1))
    return _finish(fig, path)


def _diagonal(ax, X, codes, feature, cols, diag):
    if diag == "hist":
        ax.hist([X[codes == c, feature] for c in range(len(cols))], bins=12, color=cols, stacked=True, alpha=0.8)
    elif diag is not None:
        raise ValueError(f"diag must be 'hist' or None; got {diag!r}.")
    ax.set_xticks([])
    ax.set_yticks([])


def dml_pairplots(X, y, clf, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", fitted=False,
                  metric=None, transformer=None, dml=None, dml_fitted=False, *, transform=False, title=None,
                  figsize=None, path=None, **style):
    """Class regions of ``clf`` under a distance on every pair of features.

    ``attrs`` (or ``xattrs`` for the columns and ``yattrs`` for the rows; column names of a
    DataFrame or positions) choose the features (default: all); the diagonal holds stacked per-class
    histograms (``diag="hist"``) or is left empty (None). ``transform=False`` draws the regions in
    the original space under the distance; ``transform=True`` draws the transformed data (pyDML's
    pair plots), whose features are then positions. Drawing options as :func:`dml_plot`
    (``resolution`` 60).

    Returns
    -------
    matplotlib.figure.Figure
    """
    style = make_style("dml_pairplots", dict(resolution=60), **style)
    X, y, names = check_data(X, y)
    tf = _distance_map(X, y, metric, transformer, dml, dml_fitted)
    Z = X if tf is None else tf(X)
    model = _fitted(clf, Z, y, fitted)
    if tf is not None and transform:
        X, names, tf = Z, None, None
    d = X.shape[1]
    feats = list(range(d)) if attrs is None else list(resolve_attrs(attrs, names, d, len(attrs)))
    xs = feats if xattrs is None else list(resolve_attrs(xattrs, names, d, len(xattrs), "xattrs"))
    ys = feats if yattrs is None else list(resolve_attrs(yattrs, names, d, len(yattrs), "yattrs"))
    classes, codes = np.unique(y, return_inverse=True)
    cols = colours(style, len(classes))
    base = _predictor(model, classes)
    predict = base if tf is None else (lambda A: base(tf(A)))
    fig, axes = _pyplot().subplots(len(ys), len(xs), figsize=figsize or (2.2 * len(xs), 2.2 * len(ys)), squeeze=False)
    for r, fy in enumerate(ys):
        for c, fx in enumerate(xs):
            ax = axes[r, c]
            if fx == fy:
                _diagonal(ax, X, codes, fx, cols, diag)
            else:
                _panel(ax, X, codes, cols, predict, (fx, fy), sections, style, None)
            if r == len(ys) - 1:
                ax.set_xlabel(str(names[fx] if names is not None else fx), fontsize=8)
            if c == 0:
                ax.set_ylabel(str(names[fy] if names is not None else fy), fontsize=8)
    if title:
        fig.suptitle(title)
    legend(fig, None, classes, cols, style)
    return _finish(fig, path)


def classifier_pairplots(X, y, clf, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean",
                         fitted=False, **kwargs):
    """Class regions of any classifier on every pair of features (see :func:`dml_pairplots`)."""
    return dml_pairplots(X, y, clf, attrs, xattrs, yattrs, diag, sections, fitted, **kwargs)


def knn_pairplots(X, y, k=1, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", knn_clf=None,
                  fitted=False, metric=None, transformer=None, dml=None, dml_fitted=False, **kwargs):
    """k-NN regions under a distance on every pair of features (see :func:`dml_pairplots`); ``fitted``
    applies to ``knn_clf`` only."""
    clf, fitted = (_knn(k), False) if knn_clf is None else (knn_clf, fitted)
    return dml_pairplots(X, y, clf, attrs, xattrs, yattrs, diag, sections, fitted, metric, transformer, dml,
                         dml_fitted, **kwargs)
