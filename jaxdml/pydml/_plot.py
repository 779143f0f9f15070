"""pyDML's plotting functions (``dml.dml_plot``) with pyDML's signatures, over :mod:`jaxdml.plotting`.

The drawing options translate one to one (``grid_split`` is jaxdml's ``resolution``, ``grid_step``
its ``grid_step``, ``label_legend`` its ``legend``); ``title`` is the figure's title and ``subtitle``
the panel's; ``f``/``ax`` draw into given axes (both must be given, as in pyDML); of ``**fig_kw``,
``figsize`` is used and other figure options warn once. As in pyDML, the pair plots with a distance
draw the transformed data, and a classifier passed with ``fitted=True`` must be fitted on the data it
sees (the transformed data when ``transform=True``).
"""

from __future__ import annotations

from .. import plotting as _p
from ._base import note

__all__ = ["classifier_plot", "dml_plot", "knn_plot", "dml_multiplot", "classifier_pairplots", "dml_pairplots",
           "knn_pairplots", "classifier_plot_3d"]

_STYLE = ("xrange", "yrange", "xlabel", "ylabel", "legend_loc", "cmap", "label_colors", "plot_points", "plot_regions",
          "region_intensity", "legend_plot_points", "legend_plot_regions", "legend_on_axis")


def _options(o: dict, owner: str) -> dict:
    """jaxdml's keyword arguments for the drawing options of a pyDML call (its ``locals()``)."""
    kw = {k: o[k] for k in _STYLE if k in o}
    kw["legend"] = bool(o["label_legend"])
    if o["grid_split"]:
        kw["resolution"] = tuple(int(v) for v in o["grid_split"])
    else:
        kw["grid_step"] = tuple(float(v) for v in o["grid_step"])
    fig_kw = dict(o.get("fig_kw") or {})
    kw["figsize"] = fig_kw.pop("figsize", None)
    if fig_kw:
        note(owner, "fig_kw", f"figure options {sorted(fig_kw)} other than figsize are ignored.")
    if o.get("f") is not None and o.get("ax") is not None:
        kw["ax"] = o["ax"]
    return kw


def _titled(fig, title):
    if title is not None:
        fig.suptitle(title)
    return fig


def classifier_plot(X, y, clf, attrs=None, sections="mean", fitted=False, f=None, ax=None, title=None, subtitle=None,
                    xrange=None, yrange=None, xlabel=None, ylabel=None, grid_split=[400, 400], grid_step=[0.1, 0.1],
                    label_legend=True, legend_loc="lower right", cmap=None, label_colors=None, plot_points=True,
                    plot_regions=True, region_intensity=0.4, legend_plot_points=True, legend_plot_regions=True,
                    legend_on_axis=True, **fig_kw):
    """The class regions of a classifier on two features (:func:`jaxdml.plotting.classifier_plot`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "classifier_plot")
    return _titled(_p.classifier_plot(X, y, clf, attrs, sections, fitted, title=subtitle, **kw), title)


def dml_plot(X, y, clf, attrs=None, sections="mean", fitted=False, metric=None, transformer=None, dml=None,
             dml_fitted=False, transform=True, f=None, ax=None, title=None, subtitle=None, xrange=None, yrange=None,
             xlabel=None, ylabel=None, grid_split=[400, 400], grid_step=[0.1, 0.1], label_legend=True,
             legend_loc="lower right", cmap=None, label_colors=None, plot_points=True, plot_regions=True,
             region_intensity=0.4, legend_plot_points=True, legend_plot_regions=True, legend_on_axis=True, **fig_kw):
    """The class regions of a classifier under a distance (a metric, a linear map or a learner)
    (:func:`jaxdml.plotting.dml_plot`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "dml_plot")
    fig = _p.dml_plot(X, y, clf, attrs, sections, fitted, metric, transformer, dml, dml_fitted, transform,
                      title=subtitle, **kw)
    return _titled(fig, title)


def knn_plot(X, y, k=1, attrs=None, sections="mean", knn_clf=None, fitted=False, metric=None, transformer=None,
             dml=None, dml_fitted=False, transform=True, f=None, ax=None, title=None, subtitle=None, xrange=None,
             yrange=None, xlabel=None, ylabel=None, grid_split=[400, 400], grid_step=[0.1, 0.1], label_legend=True,
             legend_loc="lower right", cmap=None, label_colors=None, plot_points=True, plot_regions=True,
             region_intensity=0.4, legend_plot_points=True, legend_plot_regions=True, legend_on_axis=True, **fig_kw):
    """The regions of k-NN (or ``knn_clf``; ``fitted`` applies to it only) under a distance
    (:func:`jaxdml.plotting.knn_plot`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "knn_plot")
    fig = _p.knn_plot(X, y, k, attrs, sections, knn_clf, fitted, metric, transformer, dml, dml_fitted, transform,
                      title=subtitle, **kw)
    return _titled(fig, title)


def dml_multiplot(X, y, nrow=None, ncol=None, ks=None, clfs=None, attrs=None, sections="mean", fitted=False,
                  metrics=None, transformers=None, dmls=None, dml_fitted=False, transforms=None, title=None,
                  subtitles=None, xlabels=None, ylabels=None, grid_split=[400, 400], grid_step=[0.1, 0.1],
                  label_legend=True, legend_loc="center right", cmap=None, label_colors=None, plot_points=True,
                  plot_regions=True, region_intensity=0.4, legend_plot_points=True, legend_plot_regions=True,
                  legend_on_axis=False, **fig_kw):
    """Several region plots in one figure, one per entry of the lists (:func:`jaxdml.plotting.dml_multiplot`);
    without ``nrow``/``ncol`` two columns, as in pyDML.

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "dml_multiplot")
    lists = [v for v in (ks, clfs, metrics, transformers, dmls, transforms) if v is not None]
    n = len(lists[0]) if lists else 1
    if nrow is None or ncol is None:
        ncol, nrow = 2, (n + 1) // 2
    fig = _p.dml_multiplot(X, y, nrow, ncol, ks, clfs, attrs, sections, fitted, metrics, transformers, dmls,
                           dml_fitted, transforms, title, subtitles, **kw)
    panels = [a for a in fig.axes if a.axison][:n]
    for i, ax in enumerate(panels):
        if subtitles is None:
            ax.set_title("")
        if xlabels is not None:
            ax.set_xlabel(xlabels[i])
        if ylabels is not None:
            ax.set_ylabel(ylabels[i])
    return fig


def classifier_pairplots(X, y, clf, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", fitted=False,
                         title=None, grid_split=[400, 400], grid_step=[0.1, 0.1], label_legend=True,
                         legend_loc="center right", cmap=None, label_colors=None, plot_points=True, plot_regions=True,
                         region_intensity=0.4, legend_plot_points=True, legend_plot_regions=True,
                         legend_on_axis=False, **fig_kw):
    """The regions of a classifier on every pair of features (:func:`jaxdml.plotting.classifier_pairplots`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "classifier_pairplots")
    return _p.classifier_pairplots(X, y, clf, attrs, xattrs, yattrs, diag, sections, fitted, title=title, **kw)


def dml_pairplots(X, y, clf, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", fitted=False,
                  metric=None, transformer=None, dml=None, dml_fitted=False, title=None, grid_split=[400, 400],
                  grid_step=[0.1, 0.1], label_legend=True, legend_loc="center right", cmap=None, label_colors=None,
                  plot_points=True, plot_regions=True, region_intensity=0.4, legend_plot_points=True,
                  legend_plot_regions=True, legend_on_axis=False, **fig_kw):
    """The regions of a classifier on every pair of features of the data transformed by a distance
    (:func:`jaxdml.plotting.dml_pairplots` with ``transform=True``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "dml_pairplots")
    return _p.dml_pairplots(X, y, clf, attrs, xattrs, yattrs, diag, sections, fitted, metric, transformer, dml,
                            dml_fitted, transform=True, title=title, **kw)


def knn_pairplots(X, y, k=1, attrs=None, xattrs=None, yattrs=None, diag="hist", sections="mean", knn_clf=None,
                  fitted=False, metric=None, transformer=None, dml=None, dml_fitted=False, title=None,
                  grid_split=[400, 400], grid_step=[0.1, 0.1], label_legend=True, legend_loc="center right", cmap=None,
                  label_colors=None, plot_points=True, plot_regions=True, region_intensity=0.4,
                  legend_plot_points=True, legend_plot_regions=True, legend_on_axis=False, **fig_kw):
    """The regions of k-NN on every pair of features of the data transformed by a distance
    (:func:`jaxdml.plotting.knn_pairplots` with ``transform=True``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    kw = _options(dict(locals()), "knn_pairplots")
    return _p.knn_pairplots(X, y, k, attrs, xattrs, yattrs, diag, sections, knn_clf, fitted, metric, transformer,
                            dml, dml_fitted, transform=True, title=title, **kw)


def classifier_plot_3d(X, y, clf, attrs=None, sections="mean", fitted=False, f=None, ax=None, elev=0.0, azim=0.0,
                       title=None, subtitle=None, xrange=None, yrange=None, zrange=None, xlabel=None, ylabel=None,
                       zlabel=None, grid_split=[40, 40, 40], grid_step=[0.1, 0.1, 0.1], label_legend=True,
                       legend_loc="lower right", cmap=None, label_colors=None, plot_points=True, plot_regions="all",
                       region_intensity=0.4, legend_plot_points=True, legend_plot_regions=True, legend_on_axis=True,
                       **fig_kw):
    """The boundaries between the class regions of a classifier on three features
    (:func:`jaxdml.plotting.classifier_plot_3d`); ``plot_regions`` is "all", None or a list of label pairs.

    Returns
    -------
    matplotlib.figure.Figure
    """
    o = dict(locals())
    if not grid_split:
        note("classifier_plot_3d", "grid_step", "a grid step has no counterpart in 3-D; 40 points per axis are used.")
        o["grid_split"] = [40, 40, 40]
    kw = _options({**o, "plot_regions": plot_regions is not None}, "classifier_plot_3d")
    fig = _p.classifier_plot_3d(X, y, clf, attrs, sections, fitted, elev=elev, azim=azim, title=subtitle,
                                region_pairs=plot_regions, zrange=zrange, zlabel=zlabel, **kw)
    return _titled(fig, title)
