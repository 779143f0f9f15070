"""KEEL .dat / ARFF readers, fold discovery, and the real KEEL folder (skipped when absent)."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from jaxdml.datasets import (
    DataFormatError,
    default_data_dir,
    keel_fold_files,
    list_keel_datasets,
    load_arff,
    load_folds,
    load_keel,
    load_keel_folds,
    sort_labels,
)

KEEL = default_data_dir()
needs_keel = pytest.mark.skipif(KEEL is None or not (KEEL / "10-fold").is_dir(),
                                reason="KEEL data folder (../shared/keel or $JAXDML_KEEL_DIR) not available")

HEADER = """@relation  toy
@attribute Left-weight integer[1,5]
@attribute OD280/OD315 real[-1.5,5.0E-4]
@attribute 1st_coord real[0.0,2.0]
@attribute Class{1.0,-1.0,b}
@inputs Left-weight,OD280/OD315,1st_coord
@outputs Class
@data
"""


def _write(path, text):
    path.write_text(text)
    return path


def test_load_keel_values_labels_and_names(tmp_path):
    p = _write(tmp_path / "toy.dat", HEADER + "1, -1.5, 0.5, 1.0\n5, 5.0E-4, 2.0, -1.0\n3, -3.0E-4, 0.0, b\n")
    X, y, names, head = load_keel(p, return_header=True)
    np.testing.assert_array_equal(X, [[1, -1.5, 0.5], [5, 5e-4, 2.0], [3, -3e-4, 0.0]])
    assert X.dtype == np.float64
    assert y.tolist() == ["1.0", "-1.0", "b"]  # labels are strings, never cast
    assert names == ["Left-weight", "OD280/OD315", "1st_coord"]
    assert head.relation == "toy" and head.classes == ["1.0", "-1.0", "b"] and head.output == "Class"
    assert head.ranges["OD280/OD315"] == (-1.5, 5e-4)


def test_load_keel_output_located_by_outputs_not_by_name(tmp_path):
    # titanic has an *input* attribute called Class; the label is the @outputs attribute
    text = ("@relation t\n@attribute Class real[0.0,1.0]\n@attribute Age real[0.0,1.0]\n"
            "@attribute Survived{-1.0,1.0}\n@inputs Class,Age\n@outputs Survived\n@data\n"
            "1.0, 0.0, -1.0\n0.0, 1.0, 1.0\n")
    X, y, names = load_keel(_write(tmp_path / "t.dat", text))
    assert names == ["Class", "Age"] and y.tolist() == ["-1.0", "1.0"]
    np.testing.assert_array_equal(X, [[1, 0], [0, 1]])


@pytest.mark.parametrize("body, line, fragment", [
    ("1, 2, 0.5, b\n1, 2, b\n", 10, "expected 4 values"),
    ("1, 2, 0.5, b\n1, x2, 0.5, b\n", 10, "'x2' of attribute 'OD280/OD315' is not a number"),
    ("1, ?, 0.5, b\n", 9, "missing value"),
    ("1, 2, 0.5, c\n", 9, "class label 'c' is not among the declared values"),
    ("1, nan, 0.5, b\n", 9, "not finite"),
])
def test_load_keel_errors_name_file_and_line(tmp_path, body, line, fragment):
    p = _write(tmp_path / "bad.dat", HEADER + body)
    with pytest.raises(DataFormatError, match=fr"bad\.dat, line {line}:") as exc:
        load_keel(p)
    assert fragment in str(exc.value)
    assert isinstance(exc.value, ValueError) and exc.value.lineno == line


@pytest.mark.parametrize("text, fragment", [
    ("@relation r\n@attribute a real[0,1\n@attribute C{x}\n@data\n0, x\n", "line 2: cannot parse the attribute"),
    ("@relation r\n@attribute a real[0,1]\n@attribute C{x}\n0, x\n", "line 4: data before the '@data'"),
    ("@relation r\n@attribute a real[0,1]\n@attribute C{x}\n", "no '@data' line"),
    ("@relation r\n@attribute a real[0,1]\n@attribute C{x}\n@data\n", "no data rows"),
    ("@relation r\n@attribute a{u,v}\n@attribute C{x}\n@data\nu, x\n", "nominal"),
    ("@relation r\n@attribute a real[0,1]\n@attribute C{x}\n@outputs D\n@data\n0, x\n", "line 4: output 'D'"),
    ("@relation r\n@attribute a real[0,1]\n@bogus\n@data\n", "line 3: unknown header directive"),
])
def test_load_keel_header_errors(tmp_path, text, fragment):
    with pytest.raises(DataFormatError, match="bad.dat") as exc:
        load_keel(_write(tmp_path / "bad.dat", text))
    assert fragment in str(exc.value)


ARFF = """% a comment
@RELATION Spam-toy

@ATTRIBUTE word_freq_make NUMERIC
@ATTRIBUTE char_freq_; NUMERIC
@attribute 'char freq (' real
@ATTRIBUTE char_freq_$ INTEGER
@ATTRIBUTE is_spam {0,1}

@DATA
0.0, 1.5, 2, 3, 1
% another comment
1e-3, 0, 0, 1, 0"""  # no final newline


def test_load_arff(tmp_path):
    X, y, names, head = load_arff(_write(tmp_path / "s.arff", ARFF), return_header=True)
    np.testing.assert_array_equal(X, [[0, 1.5, 2, 3], [1e-3, 0, 0, 1]])
    assert y.tolist() == ["1", "0"]
    assert names == ["word_freq_make", "char_freq_;", "char freq (", "char_freq_$"]
    assert head.relation == "Spam-toy" and head.classes == ["0", "1"]


@pytest.mark.parametrize("tail, line, fragment", [
    ("\n0.0, 1.5, 2, 3\n", 14, "expected 5 values"),
    ("\n0.0, ?, 2, 3, 1\n", 14, "missing value"),
    ("\n{0 1.0, 4 1}\n", 14, "sparse rows"),
    ("\n0.0, 1.5, 2, 3, 7\n", 14, "class label '7'"),
])
def test_load_arff_errors_name_file_and_line(tmp_path, tail, line, fragment):
    p = _write(tmp_path / "s.arff", ARFF + tail)
    with pytest.raises(DataFormatError, match=fr"s\.arff, line {line}:") as exc:
        load_arff(p)
    assert fragment in str(exc.value)


def test_load_arff_rejects_string_inputs(tmp_path):
    text = "@relation r\n@attribute s string\n@attribute c {a,b}\n@data\nx, a\n"
    with pytest.raises(DataFormatError, match="only numeric inputs"):
        load_arff(_write(tmp_path / "r.arff", text))


def _toy_folds(root, name="toy", n_folds=3, n=30, scheme="dobscv", sub="{n}-fold"):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0, "pos", "neg")
    d = root / sub.format(n=n_folds) / name if sub else root
    d.mkdir(parents=True, exist_ok=True)
    head = ("@relation  toy\n@attribute a real[-5.0,5.0]\n@attribute b real[-5.0,5.0]\n"
            "@attribute Class{pos,neg}\n@inputs a,b\n@outputs Class\n@data\n")
    parts = np.arange(n) % n_folds
    for k in range(n_folds):
        for part, mask in (("tra", parts != k), ("tst", parts == k)):
            rows = "".join(f"{a:.6f}, {b:.6f}, {c}\n" for (a, b), c in zip(X[mask], y[mask]))
            tag = f"{n_folds}dobscv" if scheme == "dobscv" else f"{n_folds}"
            (d / f"{name}-{tag}-{k + 1}{part}.dat").write_text(head + rows)
    return X, y


def test_fold_discovery_in_any_folder(tmp_path):
    _toy_folds(tmp_path, n_folds=3)
    _toy_folds(tmp_path, n_folds=5)
    _toy_folds(tmp_path / "flat", name="plain", n_folds=4, scheme="cv", sub=None)
    files = keel_fold_files(tmp_path, "toy", 3)
    assert [p.name for p in files[0]] == ["toy-3dobscv-1tra.dat", "toy-3dobscv-1tst.dat"]
    assert len(keel_fold_files(tmp_path, "toy", 5)) == 5
    assert len(keel_fold_files(tmp_path / "flat", "plain", 4)) == 4  # plain CV names, files in the folder itself
    assert list_keel_datasets(tmp_path) == {"plain": [4], "toy": [3, 5]}
    f = load_keel_folds(tmp_path, "toy", 3)
    assert f.n_samples == 30 and f.n_features == 2 and f.classes.tolist() == ["neg", "pos"]
    # every sample is tested exactly once
    allX = np.concatenate([fold[2] for fold in f.folds])
    assert allX.shape == (30, 2) and len(np.unique(allX[:, 0])) == 30


def test_fold_discovery_errors(tmp_path):
    _toy_folds(tmp_path, n_folds=3)
    (tmp_path / "3-fold" / "toy" / "toy-3dobscv-2tst.dat").unlink()
    with pytest.raises(FileNotFoundError, match="missing toy-3dobscv-2tst.dat"):
        keel_fold_files(tmp_path, "toy", 3)
    with pytest.raises(FileNotFoundError, match="no 10-fold files for dataset 'nope'"):
        keel_fold_files(tmp_path, "nope", 10)
    with pytest.raises(FileNotFoundError, match="data folder not found"):
        keel_fold_files(tmp_path / "absent", "toy", 3)
    # a KEEL dataset whose fold count is missing is an error, never replaced by another source
    with pytest.raises(FileNotFoundError):
        load_folds("toy", tmp_path, n_folds=10)


def test_load_folds_stratified_fallbacks(tmp_path):
    p = _write(tmp_path / "s.arff", ARFF.replace("1e-3, 0, 0, 1, 0", "\n".join(
        f"{i}, {i % 3}, {i % 5}, {i % 2}, {i % 2}" for i in range(20))))
    f = load_folds("s", tmp_path, n_folds=4, seed=28)
    X, y, _ = load_arff(p)
    expect = list(StratifiedKFold(4, shuffle=True, random_state=28).split(X, y))
    for (Xtr, ytr, Xte, yte), (tr, te) in zip(f.folds, expect):
        np.testing.assert_array_equal(Xte, X[te])
        np.testing.assert_array_equal(ytr, y[tr])
    assert "seed 28" in f.source
    g = load_folds("iris", None, n_folds=5)  # scikit-learn's iris when no KEEL folder is given
    assert g.n_samples == 150 and len(g.folds) == 5 and g.source.startswith("scikit-learn")
    with pytest.raises(FileNotFoundError, match="dataset 'nothing' not found"):
        load_folds("nothing", tmp_path)


def test_sort_labels_natural_order():
    assert sort_labels(["10", "2", "1", "2"]).tolist() == ["1", "2", "10"]
    assert sort_labels(["1.0", "-1.0"]).tolist() == ["-1.0", "1.0"]
    assert sort_labels(["R", "M", "B"]).tolist() == ["B", "M", "R"]


# ----------------------------------------------------------------------------- the real data
@needs_keel
@pytest.mark.parametrize("name, samples, features, classes", [
    ("appendicitis", 106, 7, 2), ("balance", 625, 4, 3), ("banana", 5300, 2, 2), ("titanic", 2201, 3, 2),
    ("movement_libras", 360, 90, 15), ("winequality-red", 1599, 11, 6), ("led7digit", 500, 7, 10),
])
def test_keel_fold_one_matches_readme(name, samples, features, classes):
    tra, tst = keel_fold_files(KEEL, name, 10)[0]
    Xa, ya, na, head = load_keel(tra, return_header=True)
    Xb, yb, nb = load_keel(tst)
    assert len(ya) + len(yb) == samples and na == nb and len(na) == features
    assert len(np.unique(np.concatenate([ya, yb]))) == classes
    assert head.relation == name


@needs_keel
def test_keel_folds_partition_the_dataset():
    f = load_keel_folds(KEEL, "iris", 10)
    rows = lambda X, y: sorted(map(tuple, np.column_stack([X, np.unique(y, return_inverse=True)[1]])))
    full = rows(np.vstack([f.folds[0][0], f.folds[0][2]]), np.concatenate([f.folds[0][1], f.folds[0][3]]))
    tests = rows(np.vstack([fo[2] for fo in f.folds]), np.concatenate([fo[3] for fo in f.folds]))
    assert tests == full  # the test folds are disjoint and cover the dataset
    for Xtr, ytr, Xte, yte in f.folds:
        assert len(ytr) + len(yte) == 150


@needs_keel
def test_spambase_arff_and_its_seeded_folds():
    X, y, names = load_arff(KEEL / "spambase-460.arff")
    assert X.shape == (460, 57) and names[1] == "word_freq_address"
    assert {c: int((y == c).sum()) for c in np.unique(y)} == {"0": 278, "1": 182}
    f = load_folds("spambase-460", KEEL)
    expect = list(StratifiedKFold(10, shuffle=True, random_state=28).split(X, y))
    np.testing.assert_array_equal(f.folds[3][2], X[expect[3][1]])
