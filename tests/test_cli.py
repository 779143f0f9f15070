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


def test_csv_loader_reads_headers_delimiters_and_label_types(tmp_path):
    from jaxdml.datasets import load_csv, load_dataset

    path = tmp_path / "d.csv"
    path.write_text("f1;f2;class\n0.5;1;a\n\n2;-3e-1;b\n")  # a header, ';' and a blank line
    X, y = load_dataset(str(path))
    np.testing.assert_array_equal(X, [[0.5, 1.0], [2.0, -0.3]])
    assert y.tolist() == ["a", "b"]
    path.write_text("1,0.5,2\n0,1.5,3\n")  # no header, whole-number labels in the first column
    X, y = load_csv(str(path), target=0)
    np.testing.assert_array_equal(X, [[0.5, 2.0], [1.5, 3.0]])
    assert y.dtype == np.int64 and y.tolist() == [1, 0]
    X, y = load_dataset("iris")
    assert X.shape == (150, 4) and set(y) == {0, 1, 2}


@pytest.mark.parametrize("content, error, match", [
    (None, ValueError, "Unknown dataset 'nope'"),
    ("", ValueError, "the file is empty"),
    ("a,b\n", ValueError, "header line but no data rows"),
    ("1\n2\n", ValueError, "at least two columns"),
    ("1,2,a\n3,b\n", ValueError, "line 2: expected 3 columns, found 2"),
    (b"\xff\xfe\x00\x81,1\n", ValueError, "not a readable text CSV file"),
    ("folder", ValueError, "is a folder"),
    ("missing", FileNotFoundError, "CSV file not found"),
])
def test_csv_loader_names_the_problem(tmp_path, content, error, match):
    from jaxdml.datasets import load_dataset

    path = tmp_path / "d.csv"
    if content is None:
        path = "nope"
    elif content == "folder":
        path = tmp_path / "dir.csv"
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content != "missing":
        path.write_text(content)
    with pytest.raises(error, match=match):
        load_dataset(str(path))
