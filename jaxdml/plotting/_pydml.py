"""pyDML's plots: class regions of a classifier, under a learned distance, on one or every pair of features.

* :func:`classifier_plot` -- the regions of any classifier on two features;
* :func:`dml_plot` -- the same after a distance: a metric matrix ``M``, a linear map ``L`` or a metric
  learner (fitted here unless ``dml_fitted``); ``transform=True`` draws the transformed data and the
  regions in the transformed space, ``transform=False`` the regions in the original space;
* :func:`knn_plot` -- :func:`dml_plot` with a k-NN classifier;
* :func:`dml_multiplot` -- a grid of such plots (several learners, several k, or learners x k);
* :func:`classifier_pairplots`, :func:`dml_pairplots`, :func:`knn_pairplots` -- the regions on every
  pair of features (a scatter-plot matrix; per-class histograms on the diagonal).

With more than two features the regions are a *section* of the feature space: the features not drawn
are held at their mean (``sections="mean"``) or at zero (``sections="zeros"``). Every function returns
the matplotlib ``Figure``; with ``path`` it saves it and closes it.
"""

from __future__ import annotations

import numpy as np

from ._common import _finish, _pyplot

__all__ = ["classifier_plot", "dml_plot", "knn_plot", "dml_multiplot", "classifier_pairplots", "dml_pairplots",
           "knn_pairplots"]


def _knn(k):
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(n_neighbors=int(k))


def _fitted(est, X, y, fitted: bool):
    if fitted:
        return est
    from sklearn.base import clone

    return clone(est).fit(X, y)


def _distance_map(X, y, metric=None, transformer=None, dml=None, dml_fitted=False):
    """``X -> Z`` for the distance given as a PSD ``metric``, a linear ``transformer`` or a ``dml``."""
    given = [a is not None for a in (metric, transformer, dml)]
    if sum(given) > 1:
        raise ValueError("give at most one of metric, transformer and dml.")
    if dml is not None:
        learner = _fitted(dml, X, y, dml_fitted)
        return lambda A: np.asarray(learner.transform(np.asarray(A, dtype=np.float64)), dtype=np.float64)
    if metric is not None:
        from ..linalg import components_from_metric

        M = np.asarray(metric, dtype=np.float64)
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(f"metric must be a square (PSD) matrix; got shape {M.shape}.")
        transformer = components_from_metric(M)
    if transformer is not None:
        L = np.asarray(transformer, dtype=np.float64)
        if L.ndim != 2 or L.shape[1] != X.shape[1]:
            raise ValueError(f"transformer must have shape (n_components, {X.shape[1]}); got {L.shape}.")
        return lambda A: np.asarray(A, dtype=np.float64) @ L.T
    return lambda A: np.asarray(A, dtype=np.float64)


def _check(X, y, attrs):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] < 2:
        raise ValueError(f"the plots need data of shape (n_samples, >= 2 features); got {X.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
    attrs = (0, 1) if attrs is None else tuple(int(a) for a in attrs)
    if len(attrs) != 2 or not all(0 <= a < X.shape[1] for a in attrs) or attrs[0] == attrs[1]:
        raise ValueError(f"attrs must be two different feature indices below {X.shape[1]}; got {attrs}.")
    return X, y, attrs


def _section(X, attrs, sections, resolution, margin=0.08):
    """A grid over features ``attrs``; the other features at their mean (or zero)."""
    if sections not in ("mean", "zeros"):
        raise ValueError(f"sections must be 'mean' or 'zeros'; got {sections!r}.")
    i, j = attrs
    lo, hi = X[:, [i, j]].min(0), X[:, [i, j]].max(0)
    pad = (hi - lo) * margin + 1e-9
    gx, gy = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution),
                         np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution))
    base = X.mean(0) if sections == "mean" else np.zeros(X.shape[1])
    full = np.repeat(base[None, :], gx.size, axis=0)
    full[:, i], full[:, j] = gx.ravel(), gy.ravel()
    return gx, gy, full


def _colours(cmap, n):
    """One colour per class: the qualitative map's own colours (tab10), or ``n`` samples of the map."""
    cm = _pyplot().get_cmap(cmap)
    return [cm(c % cm.N) if cm.N <= 20 else cm(c / max(n - 1, 1)) for c in range(n)]


def _panel(ax, X, codes, n_classes, predict, attrs, *, sections, resolution, cmap, region_intensity, plot_points,
           plot_regions):
    """Regions of ``predict`` (rows -> class codes) on a section, and the points, on ``ax``."""
    from matplotlib.colors import ListedColormap

    i, j = attrs
    kw = dict(cmap=ListedColormap(_colours(cmap, n_classes)), vmin=-0.5, vmax=n_classes - 0.5)
    if plot_regions:
        gx, gy, full = _section(X, attrs, sections, resolution)
        ax.contourf(gx, gy, predict(full).reshape(gx.shape), levels=np.arange(n_classes + 1) - 0.5,
                    alpha=region_intensity, **kw)
    if plot_points:
        ax.scatter(X[:, i], X[:, j], c=codes, s=12, edgecolors="k", linewidths=0.3, **kw)
    ax.set_xticks([])
    ax.set_yticks([])


def _predictor(clf, classes):
    return lambda A: np.searchsorted(classes, clf.predict(A))


def _legend(fig, classes, cmap):
    plt = _pyplot()
    n = len(classes)
    handles = [plt.Line2D([], [], marker="o", ls="", color=col, label=str(v))
               for col, v in zip(_colours(cmap, n), classes)]
    if n <= 12:
        fig.legend(handles=handles, loc="center right", fontsize=8)


def _one(X, y, clf, attrs, sections, fitted, tf, transform, ax, title, resolution, cmap, region_intensity,
         plot_points, plot_regions):
    """One region plot: ``clf`` on ``tf(X)``; drawn in the transformed space or in the original one."""
    classes, codes = np.unique(y, return_inverse=True)
    Z = tf(X)
    if transform and Z.shape[1] < 2:
        raise ValueError("transform=True needs a map to at least 2 dimensions; use transform=False.")
    model = _fitted(clf, Z, y, fitted)
    space, predict = (Z, _predictor(model, classes)) if transform else (X, lambda A: _predictor(model, classes)(tf(A)))
    _panel(ax, space, codes, len(classes), predict, attrs, sections=sections, resolution=resolution, cmap=cmap,
           region_intensity=region_intensity, plot_points=plot_points, plot_regions=plot_regions)
    if title:
        ax.set_title(title, fontsize=9)
    return classes


def _axes(ax, figsize):
    plt = _pyplot()
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def dml_plot(X, y, clf, attrs=None, sections="mean", fitted=False, metric=None, transformer=None, dml=None,
             dml_fitted=False, transform=True, *, ax=None, title=None, resolution=120, cmap="tab10",
             region_intensity=0.4, plot_points=True, plot_regions=True, legend=True, path=None):
    """Class regions of ``clf`` under a distance on two features.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
    clf : classifier
        Cloned and fitted on the (transformed) data unless ``fitted``.
    attrs : pair of int, optional
        The two features drawn (default: the first two; of the transformed data when ``transform``).
    sections : {"mean", "zeros"}
        The value of the features not drawn.
    metric : (d, d) PSD matrix, optional
    transformer : (p, d) linear map, optional
    dml : metric learner, optional
        Fitted on ``(X, y)`` here unless ``dml_fitted``. At most one of metric, transformer, dml.
    transform : bool, default=True
        Draw the transformed data ``L x`` and the regions there; False: the regions in the original
        space under the learned distance.
    ax, title, resolution, cmap, region_intensity, plot_points, plot_regions, legend, path
        Drawing options (``region_intensity`` is the regions' opacity).

    Returns
    -------
    matplotlib.figure.Figure
    """
    X, y, attrs = _check(X, y, attrs)
    tf = _distance_map(X, y, metric, transformer, dml, dml_fitted)
    fig, ax = _axes(ax, (4.8, 4.2))
    classes = _one(X, y, clf, attrs, sections, fitted, tf, transform, ax, title, resolution, cmap, region_intensity,
                   plot_points, plot_regions)
    if legend:
        _legend(fig, classes, cmap)
    return _finish(fig, path)


def classifier_plot(X, y, clf, attrs=None, sections="mean", fitted=False, **kwargs):
    """Class regions of any classifier on two features (see :func:`dml_plot` for the options)."""
    return dml_plot(X, y, clf, attrs, sections, fitted, transform=False, **kwargs)


def knn_plot(X, y, k=1, attrs=None, sections="mean", knn_clf=None, fitted=False, metric=None, transformer=None,
             dml=None, dml_fitted=False, transform=True, **kwargs):
    """k-NN regions under a distance on two features (:func:`dml_plot` with ``KNeighborsClassifier(k)``)."""
    clf = _knn(k) if knn_clf is None else knn_clf
    kwargs.setdefault("title", f"{k}-NN" if knn_clf is None else None)
    return dml_plot(X, y, clf, attrs, sections, fitted, metric, transformer, dml, dml_fitted, transform, **kwargs)


def _broadcast(n, **lists):
    out = {}
    for name, v in lists.items():
        v = [None] if v is None else list(v)
        if len(v) not in (1, n):
            raise ValueError(f"{name} has {len(v)} entries; give 1 or {n} (one per plot).")
        out[name] = v * n if len(v) == 1 else v
    return out


def dml_multiplot(X, y, nrow=None, ncol=None, ks=None, clfs=None, attrs=None, sections="mean", fitted=False,
                  metrics=None, transformers=None, dmls=None, dml_fitted=False, transforms=None, title=None,
                  subtitles=None, *, cross=False, resolution=80, cmap="tab10", region_intensity=0.4, path=None):
    """A grid of region plots, one per (classifier or k, distance).

    Each list (``ks`` -- k-NN classifiers, ``clfs``, ``metrics``, ``transformers``, ``dmls``,
    ``transforms``, ``subtitles``) holds one entry per plot, or one entry for all. ``cross=True``
    draws every distance of ``dmls`` (rows; None: Euclidean) with every k of ``ks`` (columns):
    the grid of learners x k. ``transforms`` defaults to False (regions in the original space).
    """
    X, y, attrs = _check(X, y, attrs)
    if cross:
        dl, kl = list(dmls or [None]), list(ks or [1])
        dmls, ks = [d for d in dl for _ in kl], [k for _ in dl for k in kl]
        nrow, ncol = len(dl), len(kl)
        if subtitles is None:
            subtitles = [f"{'Euclidean' if d is None else type(d).__name__}, {k}-NN" for d in dl for k in kl]
    n = max(len(v) for v in (ks, clfs, metrics, transformers, dmls, transforms, subtitles) if v is not None) \
        if any(v is not None for v in (ks, clfs, metrics, transformers, dmls, transforms, subtitles)) else 1
    b = _broadcast(n, ks=ks, clfs=clfs, metrics=metrics, transformers=transformers, dmls=dmls,
                   transforms=transforms or [False], subtitles=subtitles)
    if nrow is None or ncol is None:
        ncol = ncol or int(np.ceil(np.sqrt(n)))
        nrow = nrow or int(np.ceil(n / ncol))
    plt = _pyplot()
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 3 * nrow), squeeze=False)
    classes = None
    for p, ax in enumerate(axes.ravel()):
        if p >= n:
            ax.axis("off")
            continue
        clf = b["clfs"][p] if b["clfs"][p] is not None else _knn(b["ks"][p] or 1)
        tf = _distance_map(X, y, b["metrics"][p], b["transformers"][p], b["dmls"][p], dml_fitted)
        sub = b["subtitles"][p] or (f"{b['ks'][p]}-NN" if b["ks"][p] is not None else type(clf).__name__)
        classes = _one(X, y, clf, attrs, sections, fitted, tf, bool(b["transforms"][p]), ax, sub, resolution, cmap,
                       region_intensity, True, True)
    if title:
        fig.suptitle(title)
    _legend(fig, classes, cmap)
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    return _finish(fig, path)


def dml_pairplots(X, y, clf, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", fitted=False,
                  metric=None, transformer=None, dml=None, dml_fitted=False, *, title=None, resolution=60,
                  cmap="tab10", region_intensity=0.4, path=None):
    """Class regions of ``clf`` under a distance on every pair of features (regions in the original space).

    ``attrs`` (or ``xattrs`` for the columns and ``yattrs`` for the rows) choose the features (default:
    all); the diagonal holds per-class histograms (``diag="hist"``) or is left empty (None).
    """
    X = np.asarray(X, dtype=np.float64)
    X, y, _ = _check(X, y, None)
    feats = list(range(X.shape[1])) if attrs is None else [int(a) for a in attrs]
    xs, ys = list(xattrs) if xattrs is not None else feats, list(yattrs) if yattrs is not None else feats
    classes, codes = np.unique(y, return_inverse=True)
    tf = _distance_map(X, y, metric, transformer, dml, dml_fitted)
    model = _fitted(clf, tf(X), y, fitted)
    predict = lambda A: _predictor(model, classes)(tf(A))  # noqa: E731
    plt = _pyplot()
    fig, axes = plt.subplots(len(ys), len(xs), figsize=(2.2 * len(xs), 2.2 * len(ys)), squeeze=False)
    colours = _colours(cmap, len(classes))
    for r, fy in enumerate(ys):
        for c, fx in enumerate(xs):
            ax = axes[r, c]
            if fx == fy:
                if diag == "hist":
                    for code in range(len(classes)):
                        ax.hist(X[codes == code, fx], bins=12, alpha=0.6, color=colours[code])
                ax.set_xticks([])
                ax.set_yticks([])
            else:
                _panel(ax, X, codes, len(classes), predict, (fx, fy), sections=sections, resolution=resolution,
                       cmap=cmap, region_intensity=region_intensity, plot_points=True, plot_regions=True)
            if r == len(ys) - 1:
                ax.set_xlabel(str(fx), fontsize=8)
            if c == 0:
                ax.set_ylabel(str(fy), fontsize=8)
    if title:
        fig.suptitle(title)
    _legend(fig, classes, cmap)
    return _finish(fig, path)


def classifier_pairplots(X, y, clf, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean",
                         fitted=False, **kwargs):
    """Class regions of any classifier on every pair of features (see :func:`dml_pairplots`)."""
    return dml_pairplots(X, y, clf, attrs, xattrs, yattrs, diag, sections, fitted, **kwargs)


def knn_pairplots(X, y, k=1, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", knn_clf=None,
                  fitted=False, metric=None, transformer=None, dml=None, dml_fitted=False, **kwargs):
    """k-NN regions under a distance on every pair of features (see :func:`dml_pairplots`)."""
    clf = _knn(k) if knn_clf is None else knn_clf
    return dml_pairplots(X, y, clf, attrs, xattrs, yattrs, diag, sections, fitted, metric, transformer, dml,
                         dml_fitted, **kwargs)
