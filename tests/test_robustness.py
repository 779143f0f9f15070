"""Failure classes found by hostile input: each must give a clear error or a correct result."""

import jax
import numpy as np
import pytest

import jaxdml


@pytest.mark.parametrize("loss", ["nca", "lmnn"])
@pytest.mark.parametrize("n_candidates", [None, 64])
def test_minibatch_fit_in_float64_mode(loss, n_candidates):
    rng = np.random.default_rng(0)
    X, y = rng.random((300, 4)), rng.integers(0, 3, 300)
    with jax.enable_x64(True):
        m = jaxdml.fit(X, y, loss=loss, batch_size=64, max_iter=8, optimizer="adam", learning_rate=1e-2,
                       n_candidates=n_candidates)
    assert m.n_iter == 8 and np.all(np.isfinite(m.L))
    assert not m.converged  # 8 steps of a stochastic method: the budget, not the test, ended it


@pytest.mark.parametrize("name", ["NCA", "LMNN", "MLKR", "NCMC", "MCML", "ITML"])
def test_a_translation_of_the_data_learns_the_same_metric(wine_scaled, name):
    """Distances do not change when every row moves by the same vector, so neither may the learned
    metric. Wine min-max scaled and the same rows 1000 units away: the fits centre their rows (in
    float64) before the float32 problem is formed, and the two metrics agree to float32 round-off
    (without the centring, float32 rows at 1000 keep 3 of the 7 digits of their differences and
    the metrics differed by 40-95 %)."""
    X, y = wine_scaled
    kw = {"random_state": 0} if name in ("MLKR", "NCMC", "ITML") else {}
    Ma, Mb = (getattr(jaxdml, name)(**kw).fit(Z, y).metric() for Z in (X, X + 1e3))
    np.testing.assert_allclose(Mb, Ma, rtol=0, atol=1e-5 * np.abs(Ma).max())


def test_ncmc_classifier_predict_agrees_with_predict_proba():
    # multimodal classes where the summed-probability rule and the nearest-centroid rule differ
    rng = np.random.default_rng(0)
    centres = np.array([[3, 0], [-3, 0], [0, 3], [0, -3], [0.2, 0.2]], dtype=float)
    lab = np.array([0, 0, 1, 1, 0])
    idx = rng.integers(0, 5, 500)
    X, y = centres[idx] + rng.normal(size=(500, 2)) * 0.8, lab[idx]
    clf = jaxdml.NCMCClassifier(3, random_state=0).fit(X, y)
    Xt = rng.normal(size=(400, 2)) * 3
    proba = clf.predict_proba(Xt)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[proba.argmax(1)])


def test_itml_non_psd_prior_raises_non_psd_error():
    from jaxdml.exceptions import NonPSDError

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), np.arange(40) % 2
    with pytest.raises(NonPSDError, match="positive definite"):
        jaxdml.fit(X, y, loss="itml", prior=np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(NonPSDError):
        jaxdml.ITML(prior=np.diag([1.0, 0.0, 1.0])).fit(X, y)


# --------------------------------------------------------------------------- experiment data integrity
def _toy(tmp_path):
    from tests.test_experiments import _toy_keel

    return _toy_keel(tmp_path / "data")


def _edit(path, fn):
    head, rows = path.read_text().split("@data\n")
    path.write_text(head + "@data\n" + "".join(fn(rows.splitlines(keepends=True))))


@pytest.mark.parametrize("damage", ["cut", "deleted", "duplicated", "test-dup"])
def test_damaged_keel_folds_are_rejected(tmp_path, damage):
    from jaxdml.datasets import load_folds
    from jaxdml.datasets._keel import DataFormatError

    root = _toy(tmp_path)
    d = root / "3-fold" / "toy"
    if damage == "cut":
        _edit(d / "toy-3dobscv-2tra.dat", lambda r: r[: len(r) // 2])
    elif damage == "deleted":
        _edit(d / "toy-3dobscv-3tst.dat", lambda r: r[1:])
    elif damage == "duplicated":
        _edit(d / "toy-3dobscv-1tra.dat", lambda r: r + r[:1])
    else:  # a test row moved to another fold's test part, and removed from its training part
        tst1 = (d / "toy-3dobscv-1tst.dat").read_text().split("@data\n")[1].splitlines(keepends=True)
        _edit(d / "toy-3dobscv-2tst.dat", lambda r: r + tst1[:1])
        _edit(d / "toy-3dobscv-2tra.dat", lambda r: [x for x in r if x != tst1[0]])
    with pytest.raises(DataFormatError, match="toy"):
        load_folds("toy", root, n_folds=3)


def test_explicit_data_folder_never_falls_back_to_bundled_data(tmp_path):
    from jaxdml.datasets import load_folds

    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="only when no data folder is given"):
        load_folds("iris", tmp_path / "empty")
    assert load_folds("iris", None, n_folds=3).source == "scikit-learn; stratified 3-fold, shuffled with seed 28"


@pytest.mark.parametrize("edit", ["nan", "status", "missing", "directory", "range"])
def test_hand_edited_cache_records_are_recomputed(tmp_path, edit):
    import json
    import shutil

    from jaxdml.experiments import run_experiment

    root = _toy(tmp_path)
    kw = dict(data_dir=root, datasets=["toy"], k=3, algorithms=["Euclidean"], n_folds=3, progress=False)
    first = run_experiment("basic", out_dir=tmp_path / "out", **kw)
    rec_path = next((tmp_path / "out" / "cache").rglob("fold-02.json"))
    rec = json.loads(rec_path.read_text())
    if edit == "nan":
        rec["test_accuracy"] = float("nan")
    elif edit == "status":
        rec["status"] = "great"
    elif edit == "missing":
        del rec["fold"]
    elif edit == "range":
        rec["test_accuracy"] = 7.0
    if edit == "directory":
        rec_path.unlink()
        rec_path.mkdir()
        (rec_path / "junk").write_text("x")
    else:
        rec_path.write_text(json.dumps(rec))
    again = run_experiment("basic", out_dir=tmp_path / "out", **kw)
    assert all(r["status"] == "ok" for r in again.records)
    np.testing.assert_array_equal(again.table("test").values, first.table("test").values)
    assert json.loads(rec_path.read_text())["status"] == "ok"
    shutil.rmtree(tmp_path / "out")


@pytest.mark.parametrize("loss", ["kda", "kanmm", "kdmlmj"])
def test_callable_kernels_must_be_mercer(loss):
    from jaxdml.exceptions import NonPSDError

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), np.arange(40) % 2
    with pytest.raises(NonPSDError, match="not positive semidefinite"):
        jaxdml.fit(X, y, loss=loss, kernel=lambda A, B: -(A @ B.T))
    with pytest.raises(ValueError, match="not symmetric"):
        jaxdml.fit(X, y, loss=loss, kernel=lambda A, B: A @ B.T + A[:, :1] * 3.0)
    m = jaxdml.fit(X, y, loss=loss, kernel=lambda A, B: (A @ B.T + 1.0) ** 2)  # a Mercer kernel works
    assert np.all(np.isfinite(m.transform(X)))


# mcml, ldml and ncmml read random_state through the gradient solver's code that nca exercises
@pytest.mark.parametrize("loss", ["nca", "lmnn", "itml", *(pytest.param(m, marks=pytest.mark.slow)
                                                          for m in ("mcml", "ldml", "ncmml"))])
def test_random_state_forms(loss):
    rng = np.random.default_rng(0)
    X, y = rng.random((60, 3)), np.arange(60) % 3
    a = jaxdml.fit(X, y, loss=loss, max_iter=5, random_state=np.random.RandomState(1))
    b = jaxdml.fit(X, y, loss=loss, max_iter=5, random_state=np.random.default_rng(1))
    c = jaxdml.fit(X, y, loss=loss, max_iter=5, random_state=1)
    assert all(np.all(np.isfinite(m.L)) for m in (a, b, c))
    with pytest.raises(ValueError, match="random_state"):
        jaxdml.fit(X, y, loss=loss, max_iter=5, random_state="seed")


# --------------------------------------------------------------------------- bad input: clear errors
@pytest.fixture
def iris01():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import minmax_scale

    X, y = load_iris(return_X_y=True)
    return minmax_scale(X), y


@pytest.mark.parametrize("loss", ["lda", "pca", "nca", "lmnn", "itml", "lsi", "kdmlmj", "dmlmj"])
@pytest.mark.parametrize("scale", [0.0, 1e-30, 1e30, 1e300])
def test_degenerate_or_extreme_scales_are_named(iris01, loss, scale):
    X, y = iris01
    match = "no variation" if scale == 0.0 else "span"
    with pytest.raises(ValueError, match=match):
        jaxdml.fit(X * scale, y, loss=loss)


def test_one_sample_per_class_lda_is_finite(iris01):
    X, y = iris01
    m = jaxdml.fit(X[[0, 60, 120]], y[[0, 60, 120]], loss="lda")
    assert np.all(np.isfinite(m.L)) and m.L.shape == (2, 4) and np.linalg.matrix_rank(m.L) == 2


@pytest.mark.parametrize("y_bad,match", [
    (np.array([1, "a"] * 75, dtype=object), "mixes strings and numbers"),
    (np.array([None, 1] * 75, dtype=object), "None"),
    ("continuous", "continuous"),
])
def test_bad_labels_are_named(iris01, y_bad, match):
    X, _ = iris01
    if isinstance(y_bad, str):
        y_bad = np.random.default_rng(0).random(150)
    for loss in ("nca", "lda", "itml"):
        with pytest.raises(ValueError, match=match):
            jaxdml.fit(X, y_bad, loss=loss)
    with pytest.raises(ValueError, match=match):
        jaxdml.NCA().fit(X, y_bad)


@pytest.mark.parametrize("kw,match", [
    (dict(devices="gpu"), "devices"), (dict(devices=[]), "devices"), (dict(devices=[3]), "devices"),
    (dict(projection="foo"), "projection"), (dict(pad_to="foo"), "pad_to"), (dict(pad_to=0), "pad_to"),
    (dict(init=np.zeros((4, 4))), "all zeros"), (dict(loss={"lmnn": -1.0}), "positive"),
    (dict(loss={"lmnn": 0.0, "nca": 1.0}), "positive"), (dict(loss="lda", regg=0.1), "regg"),
    (dict(loss="ncmc", centroid_num=3), "centroid_num"), (dict(loss={"lmnn": 1.0}, mue=0.3), "mue"),
])
def test_bad_settings_are_named(iris01, kw, match):
    X, y = iris01
    kw = {"loss": "nca", **kw}
    with pytest.raises(ValueError, match=match):
        jaxdml.fit(X, y, **kw)


# --------------------------------------------------------------------------- command line
@pytest.mark.parametrize("argv,match", [
    (["fit", "--loss", "ldml", "--dataset", "iris", "--param", "b=inf", "--quiet"], "finite"),
    (["experiment", "dim", "--datasets", "iris", "--dims", "0,-1,99", "--algorithms", "PCA"], "positive integers"),
    (["experiment", "dim", "--datasets", "iris", "--dims", "99", "--algorithms", "PCA"], "none of the dimensions"),
    (["experiment", "basic", "--datasets", "iris", "--k", "500", "--algorithms", "Euclidean"], "k=500"),
])
def test_cli_rejects_bad_arguments(tmp_path, capsys, argv, match):
    from jaxdml.cli import main

    if argv[0] == "experiment":
        argv = argv + ["--out", str(tmp_path / "out")]
    assert main(argv + ["--no-cache"]) == 2
    assert match in capsys.readouterr().err


def test_cli_header_only_csv_and_file_as_out_folder(tmp_path, capsys):
    from jaxdml.cli import main

    csv = tmp_path / "h.csv"
    csv.write_text("a,b,label\n")
    assert main(["fit", "--loss", "nca", "--dataset", str(csv), "--quiet", "--no-cache"]) == 2
    assert "no data rows" in capsys.readouterr().err
    assert main(["experiment", "basic", "--datasets", "iris", "--algorithms", "Euclidean", "--out", str(csv),
                 "--no-cache"]) == 2
    assert "not a folder" in capsys.readouterr().err


# --------------------------------------------------------------------------- conventions
def test_warnings_point_at_the_callers_line(iris01):
    import warnings as _w

    X, y = iris01
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        jaxdml.fit(X, y, loss="nca", max_iter=1)
        jaxdml.NCA(max_iter=1).fit(X, y)
        jaxdml.ITML(max_iter=1).fit(X, y)
    from jaxdml.exceptions import ConvergenceWarning

    ours = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(ours) == 3 and {w.filename for w in ours} == {__file__}


@pytest.mark.parametrize("est", [jaxdml.NCA(max_iter=3), jaxdml.LDA(), jaxdml.KDA(), jaxdml.ITML(max_iter=3)])
def test_feature_names_out_and_pandas_output(iris01, est):
    import warnings as _w

    X, y = iris01
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        est.fit(X, y)
    names = est.get_feature_names_out()
    prefix = type(est).__name__.lower()
    assert list(names) == [f"{prefix}{i}" for i in range(est.transform(X).shape[1])]


# --------------------------------------------------------------------------- observability
# ldml logs through the gradient solver's progress code that nca exercises
@pytest.mark.parametrize("loss", ["nca", "lmnn", "itml", "lsi", "dml_eig", pytest.param("ldml", marks=pytest.mark.slow)])
def test_verbose_progress_goes_to_the_jaxdml_logger(iris01, loss, caplog):
    import logging

    X, y = iris01
    with caplog.at_level(logging.INFO, logger="jaxdml"):
        jaxdml.fit(X, y, loss=loss, max_iter=12, verbose=2)
    lines = [r.getMessage() for r in caplog.records if r.name == "jaxdml"]
    assert any("iter" in l and "loss" in l for l in lines), lines
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="jaxdml"):
        jaxdml.fit(X, y, loss=loss, max_iter=12)
    assert not [r for r in caplog.records if r.name == "jaxdml"]  # quiet unless asked


@pytest.mark.parametrize("kw", [dict(), dict(optimizer="adam", learning_rate=1e-2, batch_size=64)])
def test_callback_sees_every_step(iris01, kw):
    X, y = iris01
    seen = []
    m = jaxdml.fit(X, y, loss="nca", max_iter=6, callback=lambda L, it, loss: seen.append((it, loss, L.shape)), **kw)
    assert [s[0] for s in seen] == list(range(len(seen))) and len(seen) >= min(m.n_iter, 6)
    assert all(np.isfinite(s[1]) and s[2] == (4, 4) for s in seen)
    with pytest.raises(ValueError, match="callback"):
        jaxdml.fit(X, y, loss="lda", callback=print)


# --------------------------------------------------------------------------- the newer surface (tuples, files, tuning)
def test_verbose_output_follows_stderr_after_the_first_verbose_fit(iris01):
    import contextlib
    import io

    X, y = iris01
    for _ in range(2):  # the first fit's stream is closed before the second fit
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            jaxdml.fit(X, y, loss="itml", max_iter=5, verbose=1)
        text = buf.getvalue()
        buf.close()
        assert "iter" in text and "Logging error" not in text


def test_a_bad_hyper_parameter_is_refused_by_estimator_and_fit(iris01):
    X, y = iris01
    with pytest.raises(ValueError, match="'reg' parameter of NCA"):
        jaxdml.NCA(reg=-1.0).fit(X, y)  # diverged to -8.5e12 and reported converged_=True
    with pytest.raises(ValueError, match="'reg' parameter of method 'nca'"):
        jaxdml.fit(X, y, loss="nca", reg=-1.0)
    with pytest.raises(ValueError, match="'basis' parameter of SCML_Supervised"):
        jaxdml.SCML_Supervised(basis="nope").fit(X, y)  # a string was "array-like"


def test_shared_solve_steps_name_the_method_called(iris01):
    X, y = iris01
    pairs = np.stack([X[:20], X[20:40]], axis=1)
    with pytest.raises(ValueError, match="method 'mmc' needs both similar and dissimilar") as err:
        jaxdml.MMC().fit(pairs, np.ones(20))
    assert "lsi" not in str(err.value).lower()
    for cls in (jaxdml.SDML, jaxdml.LSML):
        with pytest.raises(ValueError, match=f"{cls.__name__} prior must be a finite \\(4, 4\\) matrix"):
            cls(prior=np.eye(3)).fit(X, y)


def test_scml_keeps_a_computed_iterate_not_the_zero_start():
    """metric-learn's 60-feature SCML test, smaller: no iterate beats w = 0 on the training
    objective, and the zero start was returned (all-zero weights, a zero metric)."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import pairwise_distances
    from sklearn.preprocessing import StandardScaler

    from jaxdml.exceptions import ConvergenceWarning

    def separation(Z, labels):  # metric-learn's class_separation: within / between mean distances
        return np.mean([pairwise_distances(Z[labels == c]).mean() / pairwise_distances(Z[labels == c],
                                                                                        Z[labels != c]).mean()
                        for c in np.unique(labels)])

    X, y = make_classification(60, 30, n_informative=30, n_redundant=0, n_repeated=0, n_classes=3, random_state=42)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(ConvergenceWarning):
        scml = jaxdml.SCML_Supervised(random_state=42, n_basis=100, max_iter=1000, output_iter=100).fit(X, y)
    assert np.sum(scml.weights_ > 0) > 10 and not scml.converged_
    assert separation(scml.transform(X), y) < separation(X, y)
    with pytest.raises(ValueError, match="output_iter=2 must be at most max_iter=1"):
        jaxdml.SCML(max_iter=1, output_iter=2).fit(X, y)  # metric-learn refuses it too


def test_supervised_names_read_negative_labels_as_unlabelled(iris01):
    X, y = iris01
    partial = np.where(np.arange(150) < 100, -1, y)
    rca = jaxdml.RCA_Supervised(random_state=0).fit(X, partial)
    ref = jaxdml.RCA_Supervised(random_state=0).fit(X[100:], y[100:])  # the labelled rows alone
    np.testing.assert_allclose(rca.components_, ref.components_, rtol=1e-12)
    assert list(rca.classes_) == [2] and rca.n_features_in_ == 4
    assert -1 in jaxdml.RCA(random_state=0).fit(X, partial).classes_  # the class itself: -1 is a class
    with pytest.raises(ValueError, match="only 1 of 150 samples are labelled"):
        jaxdml.ITML_Supervised().fit(X, np.r_[0, -np.ones(149, int)])
