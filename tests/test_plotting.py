"""Plots render to files with the Agg backend; matplotlib is imported only when a plot is drawn."""

import subprocess
import sys

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


def test_importing_does_not_import_matplotlib():
    code = ("import sys, jaxdml, jaxdml.plotting, jaxdml.experiments, jaxdml.cli; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


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
