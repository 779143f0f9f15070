"""Plots render to files with the Agg backend; matplotlib is imported only when a plot is drawn."""


import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import jaxdml  # noqa: E402
from jaxdml.experiments import Table, bayesian_sign_test  # noqa: E402
from jaxdml.plotting import (  # noqa: E402
    plot_decision_regions,
    plot_dim_curves,
    plot_metric_comparison,
    plot_projection,
    plot_sign_test,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(path):
    data = path.read_bytes()
    return data[:8] == PNG and len(data) > 5000


def test_metric_comparison_and_regions(tmp_path, rng):
    n = 90
    y = np.arange(n) % 3
    X = np.c_[rng.normal(size=n) * 3, rng.normal(size=n) * 0.3 + y]
    L = np.array([[0.1, 0.0], [0.0, 2.0]])  # a "learned" map that discards the noisy axis
    fig = plot_metric_comparison(X, y, L, k=3, resolution=60, path=tmp_path / "cmp.png")
    assert _is_png(tmp_path / "cmp.png") and len(fig.axes) == 3
    lda = jaxdml.LDA(n_components=1).fit(X, y)  # a fitted estimator with a 1-D embedding
    plot_metric_comparison(X, y, lda, resolution=40, path=tmp_path / "cmp1d.png")
    assert _is_png(tmp_path / "cmp1d.png")
    plot_decision_regions(X, y, None, resolution=40, path=tmp_path / "eucl.png")
    assert _is_png(tmp_path / "eucl.png")
    with pytest.raises(ValueError, match="2-D data"):
        plot_decision_regions(np.c_[X, X], y)


def test_digits_projection(tmp_path):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0, y[:300]
    pca = jaxdml.PCA(n_components=2).fit(X)
    plot_projection(X, y, pca, annotate=True, path=tmp_path / "digits.png")
    plot_projection(X, y, pca, path=tmp_path / "digits_dots.png")
    assert _is_png(tmp_path / "digits.png") and _is_png(tmp_path / "digits_dots.png")
    with pytest.raises(ValueError, match="at least 2 output dimensions"):
        plot_projection(X, y, np.ones((1, 64)))


def test_dim_curves_and_sign_test(tmp_path):
    rows = ["1", "2", "5", "max (8)", "classes-1 (1)"]
    test = Table(rows, ["PCA", "LDA"], [[0.6, 0.7], [0.7, np.nan], [0.8, np.nan], [0.82, np.nan], [0.6, 0.7]],
                 summary=False)
    fig = plot_dim_curves(test, test, path=tmp_path / "dim.png")
    assert _is_png(tmp_path / "dim.png")
    line = fig.axes[0].get_lines()[0]
    np.testing.assert_array_equal(line.get_xdata(), [1, 2, 5, 8])  # the duplicate dimension 1 drawn once
    r = bayesian_sign_test([0.9, 0.8, 0.7, 0.75], [0.8, 0.8, 0.6, 0.7], names=("NCA", "Euclidean"), n_samples=5000)
    plot_sign_test(r, path=tmp_path / "simplex.png")
    assert _is_png(tmp_path / "simplex.png")


# ---------------------------------------------------------------- pyDML's plots
def _not_blank(path, min_colours=4):
    """A PNG with visible content: pixel variance and several distinct colours."""
    import matplotlib.image as mpimg

    assert _is_png(path)
    img = mpimg.imread(path)[..., :3]
    rgb = (img.reshape(-1, 3) * 255).round().astype(np.uint32)
    colours = np.unique((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2])  # one integer per colour (a 1-d sort)
    return img.std() > 0.05 and len(colours) >= min_colours


@pytest.fixture(scope="module")
def iris_small():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return X[::3], y[::3]  # 50 rows, 4 features, 3 classes


def test_pydml_single_plots(tmp_path, iris_small):
    from sklearn.svm import SVC

    from jaxdml.plotting import classifier_plot, dml_plot, knn_plot

    X, y = iris_small
    classifier_plot(X, y, SVC(), attrs=(2, 3), resolution=40, path=tmp_path / "clf.png")
    assert _not_blank(tmp_path / "clf.png")
    fig = knn_plot(X, y, 3, dml=jaxdml.LDA(n_components=2), resolution=40, path=tmp_path / "knn.png")
    assert _not_blank(tmp_path / "knn.png") and fig.axes[0].get_title() == "3-NN"
    L = np.diag([1.0, 0.1, 2.0, 2.0])
    knn_plot(X, y, 1, transformer=L, transform=False, sections="zeros", resolution=40, path=tmp_path / "knn_L.png")
    assert _not_blank(tmp_path / "knn_L.png")
    dml_plot(X, y, SVC(), metric=L.T @ L, resolution=40, path=tmp_path / "dml_M.png")
    assert _not_blank(tmp_path / "dml_M.png")
    with pytest.raises(ValueError, match="at most one"):
        dml_plot(X, y, SVC(), metric=np.eye(4), transformer=np.eye(4))
    with pytest.raises(ValueError, match="attrs"):
        classifier_plot(X, y, SVC(), attrs=(1, 1))
    with pytest.raises(ValueError, match="sections"):
        classifier_plot(X, y, SVC(), sections="median")


def test_pydml_multiplot_and_pairplots(tmp_path, iris_small):
    from sklearn.tree import DecisionTreeClassifier

    from jaxdml.plotting import classifier_pairplots, dml_multiplot, dml_pairplots, knn_pairplots

    X, y = iris_small
    lda = jaxdml.LDA(n_components=2).fit(X, y)
    fig = dml_multiplot(X, y, ks=[1, 5], dmls=[None, lda], dml_fitted=True, cross=True, attrs=(2, 3), resolution=30,
                        path=tmp_path / "multi.png")
    assert _not_blank(tmp_path / "multi.png")
    assert [a.get_title() for a in fig.axes] == ["Euclidean, 1-NN", "Euclidean, 5-NN", "LDA, 1-NN", "LDA, 5-NN"]
    dml_multiplot(X, y, ks=[3], transformers=[np.eye(4), np.diag([1.0, 1.0, 5.0, 5.0]), None], resolution=30,
                  path=tmp_path / "multi3.png")
    assert _not_blank(tmp_path / "multi3.png")
    with pytest.raises(ValueError, match="one per plot"):
        dml_multiplot(X, y, ks=[1, 3], dmls=[None, None, None])
    fig = knn_pairplots(X, y, 3, attrs=[0, 2, 3], dml=lda, dml_fitted=True, resolution=25, path=tmp_path / "pairs.png")
    assert _not_blank(tmp_path / "pairs.png") and len(fig.axes) == 9
    classifier_pairplots(X, y, DecisionTreeClassifier(random_state=0), xattrs=[0, 1], yattrs=[2, 3], resolution=25,
                         path=tmp_path / "clf_pairs.png")
    assert _not_blank(tmp_path / "clf_pairs.png")
    dml_pairplots(X, y, DecisionTreeClassifier(random_state=0), attrs=[2, 3], transformer=np.eye(4), diag=None,
                  resolution=25, path=tmp_path / "dml_pairs.png")
    assert _not_blank(tmp_path / "dml_pairs.png")
