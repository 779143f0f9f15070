"""The gallery (examples/plot_*.py): sphinx-gallery's format, bundled data only, and each script runs and draws."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))

#: runs a script as ``python script.py`` would, then fails unless it left a matplotlib figure open
RUNNER = ("import runpy, sys, matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; "
          "runpy.run_path(sys.argv[1], run_name='__main__'); "
          "assert plt.get_fignums(), 'the example drew no figure'; print('figures', len(plt.get_fignums()))")


def test_the_gallery_has_a_header_and_at_least_twelve_examples():
    assert len(SCRIPTS) >= 12
    header = (EXAMPLES / "README.rst").read_text().splitlines()
    assert header[1] == "=" * len(header[0]) and len(header) > 3


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_follows_the_sphinx_gallery_format(script):
    source = script.read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree, clean=False)
    assert doc is not None and source.startswith('"""\n'), "the module docstring opens the file"
    title, underline = doc.strip("\n").splitlines()[:2]
    assert set(underline) == {"="} and len(underline) >= len(title), f"RST title underline of {title!r}"
    assert "# %%" in source, "cells are separated by '# %%'"
    assert "plt.show()" in source or "savefig" in source
    assert "../shared" not in source and "urlopen" not in source and "fetch_" not in source   # bundled data only


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_runs_and_draws_a_figure(script, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", JAXDML_GALLERY_SMALL="1",
               PYTHONPATH=os.pathsep.join([str(EXAMPLES.parent), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert re.search(r"figures [1-9]", proc.stdout)
