"""The command-line main job."""

import numpy as np
import pytest

from jaxdml.cli import main


def test_fit_command_reports_accuracies_and_saves(tmp_path, capsys):
    out = tmp_path / "iris_lmnn.npz"
    rc = main(["fit", "--loss", "lmnn", "--dataset", "iris", "--folds", "3", "--max-iter", "20",
               "--quiet", "--no-cache", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "3-NN accuracy, Euclidean" in text and "3-NN accuracy, lmnn" in text and "fit time" in text
    data = np.load(out)
    np.testing.assert_allclose(data["M"], data["L"].T @ data["L"], atol=1e-10)


@pytest.mark.slow
def test_fit_command_on_csv(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, "a", "b")
    path = tmp_path / "data.csv"
    with open(path, "w") as fh:
        fh.write("f1,f2,f3,label\n")
        for row, lab in zip(X, y):
            fh.write(",".join(f"{v:.5f}" for v in row) + f",{lab}\n")
    assert main(["fit", "--loss", "nca", "--dataset", str(path), "--folds", "3", "--quiet", "--no-cache"]) == 0
    assert "3-NN accuracy, nca" in capsys.readouterr().out


def test_fit_command_bad_input(capsys, tmp_path):
    assert main(["fit", "--loss", "nope", "--dataset", "iris", "--quiet", "--no-cache"]) == 2
    assert "Unknown loss 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,a\n3,x,b\n")
    assert main(["fit", "--dataset", str(bad), "--quiet", "--no-cache"]) == 2
    assert "line 2, column 2" in capsys.readouterr().err
