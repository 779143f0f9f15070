"""The notebooks in notebooks/ execute from top to bottom (small data), so they cannot rot."""

import os
import pathlib
import time

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"


def _run(name, tmp_path):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # the kernel is killed once the last cell has run: a graceful shutdown waits for the kernel's
    # Python to finalise, 1-4 s per notebook with JAX loaded, which test nothing; the compilation
    # caches are written when a program is compiled, not at exit
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3", shutdown_kernel="immediate",
                                     resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    return outputs, time.perf_counter() - t0


@pytest.fixture
def headless(monkeypatch):
    """Agg backend, CPU, and jaxdml's persistent compilation cache on. The kernels inherit the
    suite's ``JAXDML_CACHE_DIR``: the private folder tests/conftest.py creates fresh for the run
    (never the user's cache), so the notebooks compile on a cold cache, as in CI; a program one
    notebook (or test) compiled is loaded, not compiled again, by the later ones."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JAX_PLATFORMS", os.environ.get("JAX_PLATFORMS", "cpu"))
    monkeypatch.setenv("JAXDML_COMPILATION_CACHE", "1")


def test_quickstart_notebook(tmp_path, headless):
    out, seconds = _run("quickstart.ipynb", tmp_path)
    assert "M = L^T L: True" in out and "directional derivative" in out and "3-fold 3-NN accuracy" in out
    assert "leave-one-out 3-NN accuracy on wine" in out


def test_reproduce_paper_notebook(tmp_path, headless):
    # runs on the KEEL folds when ../shared/keel exists; a fresh clone (no ../shared) exercises the
    # fallback to scikit-learn's iris and wine instead
    out, seconds = _run("reproduce_paper.ipynb", tmp_path)
    assert "Bayesian sign test on 2 datasets" in out
    assert "KEEL folds from" in out or "KEEL folder not found" in out
    assert "Euclidean" in out


def test_coming_from_pydml_notebook(tmp_path, headless):
    # pyDML's documented examples and the tutorial's figures through jaxdml.pydml only
    pytest.importorskip("pandas")  # pyDML's tune returns DataFrames
    out, seconds = _run("coming_from_pydml.ipynb", tmp_path)
    assert "'final_expectance'" in out and "M = L^T L: True" in out and "kNN.score_orig()" in out
    assert "'EUCLIDEAN'" in out and "SPLIT 3" in out and "rendered 15 figures with the Agg renderer" in out


def test_deep_metric_learning_notebook(tmp_path, headless):
    out, seconds = _run("deep_metric_learning.ipynb", tmp_path)
    assert "MLP, triplet + batch-hard" in out and "MLP, proxy-anchor" in out and "NCA (linear)" in out
    assert "best MLP loss" in out and "linear L, LMNN + triplet" in out
