"""The notebooks in notebooks/ execute from top to bottom (small data), so they cannot rot.

They run one after the other in one Jupyter kernel, each in a fresh namespace (``%reset -f`` before
its first cell: a name a notebook uses but does not define fails as in a new kernel); the kernel
start and the imports of JAX, scikit-learn and jaxdml, about 4 s per notebook, are paid once."""

import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"


def _run_all(names, tmp_path):
    """Execute the notebooks ``names`` in one kernel; ``{name: the text of its cells' outputs}``."""
    combined = nbformat.v4.new_notebook()
    spans = {}
    for name in names:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        combined.cells.append(nbformat.v4.new_code_cell("%reset -f"))
        start = len(combined.cells)
        combined.cells.extend(c for c in nb.cells if c.cell_type == "code")
        spans[name] = (start, len(combined.cells))
    # the kernel is killed once the last cell has run: a graceful shutdown waits for the kernel's
    # Python to finalise, 1-4 s with JAX loaded, which tests nothing; the compilation caches are
    # written when a program is compiled, not at exit
    client = nbclient.NotebookClient(combined, timeout=240, kernel_name="python3", shutdown_kernel="immediate",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return {name: "".join(o.get("text", "") for c in combined.cells[a:b] for o in c.get("outputs", []))
            for name, (a, b) in spans.items()}


@pytest.fixture
def headless(monkeypatch):
    """Agg backend, CPU, and jaxdml's persistent compilation cache on. The kernel inherits the
    suite's ``JAXDML_CACHE_DIR``: the private folder tests/conftest.py creates fresh for the run
    (never the user's cache), so the notebooks compile on a cold cache, as in CI."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JAX_PLATFORMS", os.environ.get("JAX_PLATFORMS", "cpu"))
    monkeypatch.setenv("JAXDML_COMPILATION_CACHE", "1")


def test_every_notebook_runs_top_to_bottom(tmp_path, headless):
    pytest.importorskip("pandas")  # pyDML's tune (coming_from_pydml) returns DataFrames
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    out = _run_all(names, tmp_path)
    assert set(out) == {"quickstart.ipynb", "reproduce_paper.ipynb", "coming_from_pydml.ipynb",
                        "deep_metric_learning.ipynb"}  # a new notebook gets its assertions here
    quick = out["quickstart.ipynb"]
    assert "M = L^T L: True" in quick and "directional derivative" in quick and "3-fold 3-NN accuracy" in quick
    assert "leave-one-out 3-NN accuracy on wine" in quick
    # runs on the KEEL folds when ../shared/keel exists; a fresh clone (no ../shared) exercises the
    # fallback to scikit-learn's iris and wine instead
    paper = out["reproduce_paper.ipynb"]
    assert "Bayesian sign test on 2 datasets" in paper and "Euclidean" in paper
    assert "KEEL folds from" in paper or "KEEL folder not found" in paper
    # pyDML's documented examples and the tutorial's figures through jaxdml.pydml only
    pydml = out["coming_from_pydml.ipynb"]
    assert "'final_expectance'" in pydml and "M = L^T L: True" in pydml and "kNN.score_orig()" in pydml
    assert "'EUCLIDEAN'" in pydml and "SPLIT 3" in pydml and "rendered 15 figures with the Agg renderer" in pydml
    deep = out["deep_metric_learning.ipynb"]
    assert "MLP, triplet + batch-hard" in deep and "MLP, proxy-anchor" in deep and "NCA (linear)" in deep
    assert "best MLP loss" in deep and "linear L, LMNN + triplet" in deep
