"""``benchmarks/gpu_check.sh``: the one-command GPU check, run here with ``--cpu-smoke`` (its own
plumbing at tiny sizes on the CPU) so that the script cannot rot while no GPU is at hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def _run(*args, out, timeout):
    env = dict(os.environ, PYTHON=sys.executable, JAX_PLATFORMS="cpu")
    env.pop("OUT", None)
    return subprocess.run(["bash", str(SCRIPT), *args, "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_an_unknown_argument_is_refused_by_name(tmp_path):
    proc = _run("--tiny", out=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert "unknown argument --tiny" in proc.stderr


@pytest.mark.slow
def test_cpu_smoke_runs_every_step_and_writes_its_summary(tmp_path):
    # a guard against a hang, not a time target: the smoke takes ~20-50 s on a 2-core machine
    proc = _run("--cpu-smoke", out=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((tmp_path / "gpu_check.json").read_text())
    assert "backend cpu" in summary["device"]
    # step 3: the GPU-relevant selection of the suite still exists and imports
    assert summary["tests"]["exit_status"] == 0
    assert summary["tests"]["tests collected"] > 0
    # step 4: the scale matrix fitted every planned case in its own process and scored it
    assert summary["matrix_exit_status"] == 0
    rows = summary["matrix"]["results"]
    assert sorted((r["method"], r["n"]) for r in rows) == [("itml", 300), ("kda", 300), ("lmnn", 400), ("nca", 400)]
    for r in rows:
        assert r["status"] == "ok", r
        assert 0.0 < r["accuracy"] <= 1.0 and 0.0 < r["euclidean"] <= 1.0
        assert r["fit_s"] > 0 and r["peak_rss_mib"] > 0
    # step 5: the Markdown table lists the same cases
    table = (tmp_path / "scale_matrix.md").read_text()
    assert "| data | N | method |" in table
    assert sum(line.startswith("| synth-d8-c3 |") for line in table.splitlines()) == len(rows)
