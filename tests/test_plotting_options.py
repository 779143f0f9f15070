"""pyDML's plot options in jaxdml.plotting: ``fitted`` applies to the caller's classifiers only, and
``figsize``, ``label_colors``, the legend options, ``xrange``/``yrange``, DataFrame column names,
grids by step or per axis, the 3-D classifier plot (Agg backend)."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import jaxdml  # noqa: E402
from jaxdml.plotting import (classifier_pairplots, classifier_plot, classifier_plot_3d, dml_multiplot,  # noqa: E402
                             dml_plot, knn_plot)
from jaxdml.plotting._pydml3d import boundary_points  # noqa: E402
from jaxdml.plotting._style import make_style, region_grid  # noqa: E402


@pytest.fixture(scope="module")
def iris2():
    X, y = load_iris(return_X_y=True)
    return X[::3, :2], y[::3]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _pixels(fig):
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3]


def test_fitted_applies_to_the_callers_classifiers_only(iris2):
    X, y = iris2
    learned = jaxdml.Transformer(np.array([[1.0, 0.0], [0.5, 3.0]])).fit(X, y)  # any fitted learner
    # the k-NN classifiers built from k are fitted here even with fitted=True (they used to raise NotFittedError)
    fig = dml_multiplot(X, y, ks=[1, 1, 1], fitted=True, dmls=[None, learned, learned],
                        transforms=[False, False, True], resolution=20)
    assert len([a for a in fig.axes if a.axison]) == 3
    knn_plot(X, y, k=1, fitted=True, resolution=20)
    # a classifier the caller passes with fitted=True is used as it is
    with pytest.raises(NotFittedError):
        dml_multiplot(X, y, clfs=[SVC()], fitted=True, resolution=20)
    clf = KNeighborsClassifier(1).fit(X[y != 2], y[y != 2])  # never predicts class 2
    fig = classifier_plot(X, y, clf, fitted=True, resolution=30, plot_points=False, legend=False,
                          label_colors=["red", "lime", "blue"])
    img = _pixels(fig)
    assert not np.any(np.all(img == [153, 153, 255], axis=-1))  # blue at opacity 0.4 on white: class 2 absent
    fig = classifier_plot(X, y, clf, resolution=30, plot_points=False, legend=False,
                          label_colors=["red", "lime", "blue"])  # refitted on all three classes
    assert np.any(np.all(img == [255, 153, 153], axis=-1))
    assert np.any(np.all(_pixels(fig) == [153, 153, 255], axis=-1))


def test_colours_ranges_figsize_and_legend(iris2):
    X, y = iris2
    fig = knn_plot(X, y, 3, figsize=(3, 2.5), xrange=(4.0, 8.0), yrange=(2.0, 4.5), resolution=(30, 20),
                   label_colors=["red", "green", "blue"], legend_on_axis=True, legend_plot_regions=False)
    ax = fig.axes[0]
    assert tuple(fig.get_size_inches()) == (3.0, 2.5)
    assert ax.get_xlim() == (4.0, 8.0) and ax.get_ylim() == (2.0, 4.5)
    handles = ax.get_legend().legend_handles
    assert len(handles) == 3 and not any(isinstance(h, Patch) for h in handles)
    assert [tuple(np.round(h.get_color(), 3)) if not isinstance(h.get_color(), str) else h.get_color()
            for h in handles] == [(1.0, 0.0, 0.0, 1.0), (0.0, 0.502, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)]
    fig = knn_plot(X, y, 3, resolution=20, legend_plot_points=False)
    assert all(isinstance(h, Patch) for h in fig.legends[0].legend_handles)
    with pytest.raises(ValueError, match="label_colors has 2 colours for 3 classes"):
        knn_plot(X, y, 3, label_colors=["red", "blue"])
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        knn_plot(X, y, 3, colour="red")
    with pytest.raises(ValueError, match="region_intensity"):
        knn_plot(X, y, 3, region_intensity=2.0)
    with pytest.raises(ValueError, match="xrange"):
        knn_plot(X, y, 3, xrange=(5.0, 1.0))


def test_grid_by_points_per_axis_or_by_step(iris2):
    X, _ = iris2
    gx, gy, full = region_grid(X, (0, 1), "mean", make_style("t", resolution=(30, 20)))
    assert gx.shape == (20, 30) and full.shape == (600, 2)
    gx, _, _ = region_grid(X, (0, 1), "mean", make_style("t", grid_step=0.5, xrange=(0.0, 2.0), yrange=(0.0, 1.0)))
    np.testing.assert_allclose(gx[0], [0.0, 0.5, 1.0, 1.5])


def test_dataframe_columns_name_the_features():
    pd = pytest.importorskip("pandas")
    X, y = load_iris(return_X_y=True)
    X, y = X[::5], y[::5]
    cols = ["Sepal Length", "Sepal Width", "Petal Length", "Petal Width"]
    df = pd.DataFrame(X, columns=cols)
    by_name = dml_plot(df, y, SVC(), attrs=["Petal Length", "Petal Width"], transform=False, resolution=25, legend=False)
    by_index = dml_plot(X, y, SVC(), attrs=[2, 3], transform=False, resolution=25, legend=False,
                        xlabel="Petal Length", ylabel="Petal Width")
    assert by_name.axes[0].get_xlabel() == "Petal Length"
    np.testing.assert_array_equal(_pixels(by_name), _pixels(by_index))
    fig = classifier_pairplots(df, y, SVC(), xattrs=cols[:2], yattrs=cols[2:], resolution=15)
    assert [a.get_xlabel() for a in fig.axes[2:]] == cols[:2] and fig.axes[0].get_ylabel() == cols[2]
    with pytest.raises(ValueError, match="'Petal' is not a feature"):
        dml_plot(df, y, SVC(), attrs=["Petal", "Petal Width"])


def _brute_boundary(pred, axes, a, b):
    """Midpoints of grid neighbours with classes a and b, loop by loop."""
    out = []
    nx, ny, nz = pred.shape
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                for di, dj, dk in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                    if i + di < nx and j + dj < ny and k + dk < nz and {pred[i, j, k], pred[i + di, j + dj, k + dk]} == {a, b}:
                        out.append(((axes[0][i] + axes[0][i + di]) / 2, (axes[1][j] + axes[1][j + dj]) / 2,
                                    (axes[2][k] + axes[2][k + dk]) / 2))
    return np.array(sorted(out))


def test_boundary_points_and_the_3d_plot():
    rng = np.random.default_rng(0)
    axes = [np.linspace(0, 1, 5), np.linspace(0, 2, 4), np.linspace(-1, 1, 6)]
    pred = rng.integers(0, 3, size=(5, 4, 6))
    for a, b in ((0, 1), (1, 2)):
        got = boundary_points(pred, axes, a, b)
        np.testing.assert_allclose(np.array(sorted(map(tuple, got))), _brute_boundary(pred, axes, a, b))
    X, y = load_iris(return_X_y=True)
    fig = classifier_plot_3d(X[::3], y[::3], SVC(), attrs=[0, 2, 3], resolution=10, elev=20, azim=30,
                             label_colors=["red", "green", "blue"])
    ax = fig.axes[0]
    assert ax.name == "3d" and (ax.elev, ax.azim) == (20, 30)
    assert len(ax.collections) >= 3  # the points and at least two class boundaries
    with pytest.raises(ValueError, match="3 different features"):
        classifier_plot_3d(X, y, SVC(), attrs=[0, 0, 1])
    with pytest.raises(ValueError, match=">= 3 features"):
        classifier_plot_3d(X[:, :2], y, SVC())


def test_3d_plot_region_pairs_labels_and_errors():
    X, y = load_iris(return_X_y=True)
    X, y = X[::3], y[::3]
    clf = SVC().fit(X[:, :3], y)  # fitted on the three features drawn: the plot predicts on the grid
    common = dict(attrs=[0, 1, 2], fitted=True, resolution=6)
    ax = classifier_plot_3d(X[:, :3], y, clf, region_pairs=None, **common).axes[0]
    assert len(ax.collections) == 1  # the points only, no boundary surface
    ax = classifier_plot_3d(X[:, :3], y, clf, region_pairs=[(0, 1)], title="setosa | versicolor",
                            xlabel="sepal length", zlabel="petal length", **common).axes[0]
    assert len(ax.collections) == 2  # the points and the one boundary asked for
    assert ax.get_title() == "setosa | versicolor"
    assert (ax.get_xlabel(), ax.get_zlabel()) == ("sepal length", "petal length")
    with pytest.raises(ValueError, match=r"region_pairs: \(0, 7\) is not a pair of labels"):
        classifier_plot_3d(X[:, :3], y, clf, region_pairs=[(0, 7)], **common)
    with pytest.raises(ValueError, match="not grid_step"):
        classifier_plot_3d(X[:, :3], y, clf, fitted=True, grid_step=0.1)
    with pytest.raises(ValueError, match="resolution must be an int >= 2"):
        classifier_plot_3d(X[:, :3], y, clf, fitted=True, resolution=(5, 1, 5))


def test_3d_surface_falls_back_to_points_when_degenerate():
    from mpl_toolkits.mplot3d.art3d import Path3DCollection

    from jaxdml.plotting._pydml3d import _surface

    ax = plt.figure().add_subplot(111, projection="3d")
    line = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.5], [2.0, 2.0, 1.0], [3.0, 3.0, 1.5]])  # one line in (x, y)
    drawn = _surface(ax, line, (0.5, 0.5, 0.5), 0.4)
    assert isinstance(drawn, Path3DCollection)  # qhull cannot triangulate: the points are drawn instead
    assert len(drawn.get_offsets()) == len(line)
    tri = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 1.0, 1.0], [1.0, 1.0, 0.2]])
    assert not isinstance(_surface(ax, tri, (0.5, 0.5, 0.5), 0.4), Path3DCollection)  # a surface
