"""Experiment infrastructure: configs, k-NN scoring, rankings, tables, cache/resume, sign test, CLI,
and the harness exactness against the published Euclidean 3-NN accuracies (skipped without data)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.special import betainc
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import MinMaxScaler

import jaxdml
from jaxdml.cli import main
from jaxdml.datasets import default_data_dir, load_folds
from jaxdml.experiments import (
    EXPERIMENTS,
    Table,
    bayesian_sign_test,
    compare_columns,
    knn_predict,
    rank_scores,
    resolve_dimensions,
    run_experiment,
    select_algorithms,
)
from jaxdml.experiments import _runner
from jaxdml.experiments._config import DIM_TABLE_NAMES, DIMENSIONS

KEEL = default_data_dir()
needs_keel = pytest.mark.skipif(KEEL is None or not (KEEL / "10-fold").is_dir(),
                                reason="KEEL data folder (../shared/keel or $JAXDML_KEEL_DIR) not available")


# ----------------------------------------------------------------------------- configuration
def test_exact_headers_and_neighbour_rules():
    basic = EXPERIMENTS["basic"].algorithms(5)
    assert ",".join(a.label for a in basic) == "Euclidean,LDA,ITML,DMLMJ,NCA,LMNN,LSI,DML_eig,MCML,LDML"
    by = {a.label: a for a in basic}
    assert all(a.classifier == ("knn", 5) for a in basic)
    assert by["LMNN"].params["n_neighbors"] == 5 and by["DMLMJ"].params["n_neighbors"] == 5
    ncm = EXPERIMENTS["ncm"].algorithms(3)
    assert ",".join(a.label for a in ncm) == ("Euclidean + NCM,NCMML,Euclidean + NCM (2 ctrd),NCMC (2 ctrd),"
                                             "Euclidean + NCM (3 ctrd),NCMC (3 ctrd)")
    for a in ncm:
        if a.method == "ncmc":
            assert a.params["centroids_num"] == a.classifier[1]
    kern = EXPERIMENTS["kernel"].algorithms(7)
    # the published layout: a EUCLIDEAN column, then "<method> [<kernel>]"
    assert len(kern) == 26 and kern[0].label == "EUCLIDEAN" and kern[1].label == "KPCA [Linear]"
    assert kern[-1].label == "KLMNN [Laplacian]"
    assert {a.params["kernel"] for a in kern[1:]} == {"linear", "poly", "rbf", "laplacian"}
    kanmm = [a for a in kern if a.label.startswith("KANMM")][0]
    assert kanmm.params["n_friends"] == kanmm.params["n_enemies"] == 7
    dim = EXPERIMENTS["dim"].algorithms(3)
    assert [a.label for a in dim] == ["PCA", "LDA", "ANMM", "DMLMJ", "NCA", "LMNN"]
    assert EXPERIMENTS["dim"].datasets == ("sonar", "movement_libras", "spambase-460")


PAPER = Path(__file__).resolve().parents[1].parent / "shared" / "paper-results"


@pytest.mark.skipif(not PAPER.is_dir(), reason="../shared/paper-results is not here")
def test_tables_have_the_published_layout():
    """Column headers, file stems and dimension rows are those of the published tables."""
    import csv

    def header(name):
        with open(PAPER / name, newline="") as fh:
            return next(csv.reader(fh))

    for exp, k, published in (("basic", 3, "basic-3nn-test.csv"), ("basic", 7, "basic-7nn-test.csv"),
                              ("ncm", 3, "ncm-test.csv"), ("kernel", 3, "ker-3nn-test.csv")):
        e = EXPERIMENTS[exp]
        assert f"{e.stem(k)}-test.csv" == published
        assert [""] + [a.label for a in e.algorithms(k)] == header(published)
    e = EXPERIMENTS["dim"]
    for ds in e.datasets:
        shown = DIM_TABLE_NAMES.get(ds, ds)
        published = f"{e.stem(3)}-{shown}-test.csv"
        assert header(published) == [""] + [a.label for a in e.algorithms(3)]
        with open(PAPER / published, newline="") as fh:
            rows = [line.split(",")[0] for line in fh.read().splitlines()[1:]]
        labels = [r for r, _ in resolve_dimensions(DIMENSIONS, n_features=100, n_classes=20)]
        assert rows == labels


def test_select_algorithms_and_dimensions():
    kern = EXPERIMENTS["kernel"].algorithms(3)
    assert [a.label for a in select_algorithms(kern, "kda,KPCA [RBF]")] == [
        "KPCA [RBF]", "KDA [Linear]", "KDA [Poly-2]", "KDA [Poly-3]", "KDA [RBF]", "KDA [Laplacian]"]
    with pytest.raises(ValueError, match="Unknown algorithm"):
        select_algorithms(kern, ["NCA"])
    dims = resolve_dimensions([1, 2, 50, 70, "max", "classes-1"], n_features=60, n_classes=2)
    assert dims == [("1", 1), ("2", 2), ("50", 50), ("Dim. máxima", 60), ("N. Clases - 1", 1)]


# ----------------------------------------------------------------------------- k-NN scoring
def test_knn_matches_scikit_learn_without_ties(rng):
    Xtr, Xte = rng.normal(size=(80, 5)), rng.normal(size=(30, 5))
    ytr = rng.integers(0, 4, size=80)
    ref = KNeighborsClassifier(5, algorithm="brute").fit(Xtr, ytr)
    np.testing.assert_array_equal(knn_predict(Xtr, ytr, Xte, 5, 4), ref.predict(Xte))
    # leave-one-out: the 5 nearest *other* training samples
    nn = ref.kneighbors(Xtr, 6, return_distance=False)[:, 1:]
    loo = np.array([np.bincount(ytr[row], minlength=4).argmax() for row in nn])
    np.testing.assert_array_equal(knn_predict(Xtr, ytr, Xtr, 5, 4, leave_one_out=True), loo)


def test_knn_tie_rules():
    Xtr = np.array([[1.0], [-1.0], [2.0], [-2.0], [3.0]])
    codes = np.array([1, 0, 0, 1, 2])
    # distances 1, 1, 2, 2, 3 from 0: equal distances -> the earlier training sample first
    assert knn_predict(Xtr, codes, [[0.0]], 1, 3)[0] == 1
    # k=3 takes samples 0, 1, 2 (not 3, tied with 2 but later): votes 0:2, 1:1
    assert knn_predict(Xtr, codes, [[0.0]], 3, 3)[0] == 0
    # a 1-1 vote between codes 1 and 0 goes to the smaller code
    assert knn_predict(Xtr, codes, [[0.0]], 2, 3)[0] == 0
    # leave-one-out excludes by index, so a duplicate still votes
    D = np.array([[0.0], [0.0], [5.0]])
    assert knn_predict(D, np.array([1, 1, 0]), D, 1, 2, leave_one_out=True).tolist() == [1, 1, 1]


# ----------------------------------------------------------------------------- tables
def test_rank_scores_ties_and_missing():
    V = np.array([[0.9, 0.8, 0.9, np.nan], [0.5, 0.6, 0.7, 0.8], [np.nan, 0.1, np.nan, 0.2]])
    R = rank_scores(V)
    np.testing.assert_allclose(R, [[1.5, 3, 1.5, 4], [4, 3, 2, 1], [3.5, 2, 3.5, 1]])
    np.testing.assert_allclose(R.sum(1), 10)  # every dataset hands out ranks 1..m


def test_table_csv_markdown_latex_roundtrip(tmp_path):
    t = Table(["iris", "wine"], ["Euclidean", "DML_eig", "NCA"], [[0.9533333333, np.nan, 0.96], [0.96, 0.97, 0.97]])
    text = t.to_csv(tmp_path / "t.csv")
    lines = text.splitlines()
    assert lines[0] == ",Euclidean,DML_eig,NCA"
    assert lines[1] == "iris,0.95333333,,0.96000000"
    assert lines[3].startswith("AVG SCORE,0.95666667,0.97000000,0.96500000")
    assert lines[4] == "AVG RANKING,2.50000000,2.25000000,1.25000000"  # iris: 2, 3 (missing), 1
    assert all(len(c.split(".")[1]) >= 6 for c in lines[1].split(",")[1:] if c)
    back = Table.from_csv(tmp_path / "t.csv")
    assert back.rows == ["iris", "wine"] and back.columns == t.columns
    np.testing.assert_allclose(back.values, t.values, atol=1e-8)
    md = t.to_markdown()
    assert "|  | Euclidean | DML_eig | NCA |" in md and "| **AVG RANKING** |" in md and "**0.970000**" in md
    tex = t.to_latex()
    assert "DML\\_eig" in tex and "\\begin{tabular}{lrrr}" in tex and "AVG SCORE" in tex


# ----------------------------------------------------------------------------- Bayesian sign test
def test_sign_test_posterior_is_exact():
    a = np.array([0.90, 0.80, 0.85, 0.70, 0.60, 0.75])
    b = np.array([0.80, 0.80, 0.70, 0.71, 0.60, 0.70])  # diffs .1 0 .15 -.01 0 .05 -> 3 first, 3 rope
    r = bayesian_sign_test(a, b, n_samples=200000, random_state=1)
    assert r.counts == (3, 3, 0)
    np.testing.assert_array_equal(r.alpha, [3, 4, 0])  # prior mass s=1 at z0=0 is in the rope
    assert r.p_second == 0.0  # no observation and no prior mass: probability exactly 0
    # with theta_second = 0, P(first) = P(Beta(3, 4) > 1/2) = 1 - I_{1/2}(3, 4)
    assert abs(r.p_first - (1 - betainc(3, 4, 0.5))) < 0.005
    assert abs(r.p_first + r.p_rope - 1) < 1e-12
    # a pseudo-observation outside the rope moves the prior mass
    np.testing.assert_array_equal(bayesian_sign_test(a, b, prior_place=-0.5, n_samples=10).alpha, [3, 3, 1])
    with pytest.raises(ValueError, match="same length"):
        bayesian_sign_test([0.1, 0.2], [0.1])


def test_sign_test_agrees_with_baycomp():
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(3)
    b = rng.uniform(0.6, 0.9, size=20)
    a = b + rng.choice([-0.05, 0.0, 0.03], size=20, p=[0.3, 0.3, 0.4])  # every region observed
    ours = bayesian_sign_test(a, b, n_samples=100000, random_state=0)
    # baycomp: diff = y - x, "left" = x better; its prior=1 sits on the rope (+1e-4 everywhere)
    ref = baycomp.SignTest.probs(a, b, rope=0.01, prior=1, nsamples=100000, random_state=0)
    np.testing.assert_allclose(ours.probabilities, ref, atol=0.01)


def test_compare_columns_drops_missing():
    t = Table(["d1", "d2", "d3"], ["NCA", "Euclidean"], [[0.9, 0.8], [np.nan, 0.7], [0.8, 0.7]])
    r = compare_columns(t, "nca", "EUCLIDEAN", n_samples=100)
    assert r.names == ("NCA", "Euclidean") and sum(r.counts) == 2


# ----------------------------------------------------------------------------- runner
def _toy_keel(root, n=61, n_folds=3, name="toy"):
    """A small 3-class KEEL dataset with DOB-SCV-style file names (uneven fold sizes)."""
    rng = np.random.default_rng(0)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 3)) * [1.0, 5.0, 0.2] + np.c_[y * 2.5, np.zeros(n), y * 0.2] + [0, 0, 10]
    labels = np.array(["c1", "c2", "c10"])[y]
    d = root / f"{n_folds}-fold" / name
    d.mkdir(parents=True)
    head = (f"@relation  {name}\n@attribute a real[-9.0,9.0]\n@attribute b real[-30.0,30.0]\n"
            "@attribute c real[0.0,20.0]\n@attribute Class{c1,c2,c10}\n@inputs a,b,c\n@outputs Class\n@data\n")
    parts = rng.permutation(n) % n_folds
    for k in range(n_folds):
        for part, m in (("tra", parts != k), ("tst", parts == k)):
            rows = "".join(f"{a:.5f}, {b:.5f}, {c:.5f}, {lab}\n" for (a, b, c), lab in zip(X[m], labels[m]))
            (d / f"{name}-{n_folds}dobscv-{k + 1}{part}.dat").write_text(head + rows)
    return root


def test_runner_scales_per_training_fold_and_scores(tmp_path):
    root = _toy_keel(tmp_path / "data")
    res = run_experiment("basic", data_dir=root, datasets=["toy"], k=3, algorithms=["Euclidean", "LDA"],
                         n_folds=3, out_dir=tmp_path / "out", progress=False)
    folds = load_folds("toy", root, n_folds=3)
    assert folds.classes.tolist() == ["c1", "c10", "c2"]  # not all numeric: string order
    expect = []
    for Xtr, ytr, Xte, yte in folds.folds:  # independent reference: scikit-learn, scaler on the training fold
        sc = MinMaxScaler().fit(Xtr)
        expect.append(KNeighborsClassifier(3, algorithm="brute").fit(sc.transform(Xtr), ytr)
                      .score(sc.transform(Xte), yte))
    t = res.table("test")
    assert t.columns == ["Euclidean", "LDA"] and t.rows == ["toy"]
    assert abs(t.values[0, 0] - np.mean(expect)) < 1e-12 and 0.4 < np.mean(expect) < 0.95
    assert 0.4 < t.values[0, 1] <= 1.0
    recs = [r for r in res.records if r["algorithm"] == "LDA"]
    assert len(recs) == 3 and all(r["status"] == "ok" and r["n_components_out"] == 2 for r in recs)
    assert {r["pad_to"] for r in recs} == {max(len(f[1]) for f in folds.folds)}
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["basic-3nn-folds.json", "basic-3nn-test.csv", "basic-3nn-test.md", "basic-3nn-test.tex",
                     "basic-3nn-train.csv", "basic-3nn-train.md", "basic-3nn-train.tex", "cache"]
    raw = json.loads((tmp_path / "out" / "basic-3nn-folds.json").read_text())
    assert len(raw) == 6 and {"train_accuracy", "test_accuracy", "fit_time", "status"} <= set(raw[0])


def test_runner_records_failures_caches_and_resumes(tmp_path, monkeypatch):
    root = _toy_keel(tmp_path / "data")
    calls = []
    real = _runner.fit_transform

    def flaky(alg, X, codes, **kw):
        calls.append(alg.label)
        if alg.label == "LDA":
            raise FloatingPointError("diverged")
        if alg.label == "ITML":
            raise ValueError("Unknown loss 'itml'. Valid names: [...]")
        return real(alg, X, codes, **kw)

    monkeypatch.setattr(_runner, "fit_transform", flaky)
    kw = dict(data_dir=root, datasets=["toy"], k=3, algorithms=["Euclidean", "LDA", "ITML"], n_folds=3,
              out_dir=tmp_path / "out", progress=False)
    res = run_experiment("basic", **kw)
    status = {(r["algorithm"], r["fold"]): r["status"] for r in res.records}
    assert status[("LDA", 2)] == "failed" and status[("ITML", 1)] == "unavailable" and status[("Euclidean", 3)] == "ok"
    assert "FloatingPointError: diverged" in [r for r in res.records if r["algorithm"] == "LDA"][0]["error"]
    csv = (tmp_path / "out" / "basic-3nn-test.csv").read_text().splitlines()
    assert csv[0] == ",Euclidean,LDA,ITML" and re.fullmatch(r"toy,0\.\d{8},,", csv[1])
    assert csv[-1].startswith("AVG RANKING,1.00000000,2.50000000,2.50000000")

    # second run: successes and genuine failures come from the cache, unavailable methods are retried
    calls.clear()
    res2 = run_experiment("basic", **kw)
    assert calls == ["ITML"] * 3
    np.testing.assert_array_equal(res2.table("test").values, res.table("test").values)
    calls.clear()
    run_experiment("basic", **kw, retry_failed=True)
    assert sorted(set(calls)) == ["ITML", "LDA"]
    # a change of the algorithms' code makes every cached cell stale
    monkeypatch.setattr(_runner, "code_hash", lambda: "changed")
    calls.clear()
    run_experiment("basic", **kw)
    assert len(calls) == 9

    # an interrupted run resumes without redoing finished folds
    def interrupt(alg, X, codes, **kw2):
        calls.append(alg.label)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(alg, X, codes, **kw2)

    monkeypatch.setattr(_runner, "fit_transform", interrupt)
    calls.clear()
    kw5 = {**kw, "k": 5, "algorithms": ["Euclidean"]}
    with pytest.raises(KeyboardInterrupt):
        run_experiment("basic", **kw5)
    calls.clear()
    monkeypatch.setattr(_runner, "fit_transform", flaky)
    run_experiment("basic", **kw5)
    assert calls == ["Euclidean"] * 2  # fold 1 was finished before the interruption


def test_result_cache_reuses_only_whole_valid_current_records(tmp_path):
    """The per-fold JSON records: NumPy values stored as JSON values; a record is reused only when it
    is readable, has the runner's schema and the current fingerprint; a record that cannot be written
    leaves the previous one and no temporary file."""
    from jaxdml.experiments._cache import ResultCache, data_hash, fingerprint

    cache = ResultCache(tmp_path)
    fp = fingerprint({"algorithm": "NCA", "k": 3})
    assert fp != fingerprint({"algorithm": "NCA", "k": 5})
    rec = dict(experiment="basic", dataset="iris", algorithm="NCA", cache_key="NCA@d=2", fold=2, n_folds=3,
               fingerprint=fp, status="ok", train_accuracy=np.float32(0.9375), test_accuracy=np.float64(0.875),
               n_iter=np.int64(12), converged=np.bool_(True), L=np.eye(2), where=Path("a") / "b")
    cache.store(rec)
    path = cache.path("basic", "iris", "NCA@d=2", 2)
    assert path == tmp_path / "basic" / "iris" / "NCA@d=2" / "fold-02.json"
    got = cache.load("basic", "iris", "NCA@d=2", 2, fp)
    assert got == {**rec, "train_accuracy": 0.9375, "n_iter": 12, "converged": True, "L": [[1.0, 0.0], [0.0, 1.0]],
                   "where": str(Path("a") / "b")}
    assert type(got["n_iter"]) is int and got["converged"] is True
    assert cache.load("basic", "iris", "NCA@d=2", 2, fingerprint({})) is None  # stale
    assert cache.load("basic", "iris", "NCA@d=2", 3, fp) is None  # never computed
    # names become safe file names (no folder escapes)
    parts = cache.path("my exp", "a/b", "NCA + LDA", 1).relative_to(tmp_path).parts
    assert parts == ("my_exp", "a_b", "NCA_+_LDA", "fold-01.json")
    # damaged or hand-edited records are recomputed
    base = json.loads(path.read_text())
    bad = [[1, 2], {**base, "fold": True}, {**base, "fold": 0}, {**base, "fold": 4}, {**base, "status": "done"},
           {**base, "experiment": 3}, {**base, "test_accuracy": 1.5}, {**base, "test_accuracy": float("nan")},
           {**base, "train_accuracy": True}, {k: v for k, v in base.items() if k != "test_accuracy"}]
    for b in bad:
        path.write_text(json.dumps(b))
        assert cache.load("basic", "iris", "NCA@d=2", 2, fp) is None, b
    path.write_text(json.dumps(base)[:-10])
    assert cache.load("basic", "iris", "NCA@d=2", 2, fp) is None
    failed = {k: v for k, v in base.items() if not k.endswith("accuracy")}
    path.write_text(json.dumps({**failed, "status": "failed"}))  # a failure has no accuracies
    assert cache.load("basic", "iris", "NCA@d=2", 2, fp)["status"] == "failed"
    # a folder in the record's place is replaced; a record that cannot be written changes nothing
    path.unlink()
    (path / "junk").mkdir(parents=True)
    cache.store(rec)
    assert cache.load("basic", "iris", "NCA@d=2", 2, fp) == got
    circular = dict(rec, n_iter=np.int64(13))
    circular["self"] = circular
    with pytest.raises(ValueError, match="Circular reference"):
        cache.store(circular)
    assert cache.load("basic", "iris", "NCA@d=2", 2, fp) == got
    assert sorted(p.name for p in path.parent.iterdir()) == ["fold-02.json"]
    # no folder: nothing stored, nothing loaded
    none = ResultCache(None)
    none.store(rec)
    assert none.path("basic", "iris", "NCA", 2) is None and none.load("basic", "iris", "NCA", 2, fp) is None
    # the data hash: values, shapes and dtypes, string labels included, not the memory layout
    X = np.arange(6.0).reshape(3, 2)
    y = np.array(["a", "b", "a"])
    h = data_hash(X, y)
    assert h == data_hash(np.asfortranarray(X), y.copy())
    assert len({h, data_hash(X, np.array(["a", "b", "b"])), data_hash(X.reshape(2, 3), y),
                data_hash(X.astype(np.float32), y), data_hash(X, np.array([b"a", b"b", b"a"]))}) == 5


def test_runner_passes_pad_to_and_does_not_recompile_across_folds(tmp_path, monkeypatch):
    from jaxdml.solvers._driver import trace_count

    root = _toy_keel(tmp_path / "data", n=50)
    seen = []
    real_fit = jaxdml.fit

    def spy(X, y, **kw):
        seen.append((len(X), kw.get("pad_to"), kw.get("loss")))
        # fitted on the training fold only, min-max scaled on it
        np.testing.assert_allclose([X.min(0), X.max(0)], [np.zeros(3), np.ones(3)], atol=1e-12)
        return real_fit(X, y, **{**kw, "max_iter": 5})

    monkeypatch.setattr(jaxdml, "fit", spy)
    before = trace_count()
    run_experiment("basic", data_dir=root, datasets=["toy"], k=3, algorithms=["NCA"], n_folds=3, progress=False)
    assert [s[0] for s in seen] == [33, 33, 34] and {s[1] for s in seen} == {34} and seen[0][2] == "nca"
    assert trace_count() - before <= 1  # three folds of two sizes, one executable


def test_cli_experiment_and_compare(tmp_path, capsys, monkeypatch):
    root = _toy_keel(tmp_path / "data")
    # identity fits keep this fast: the test is about the command line and the files it writes
    monkeypatch.setattr(_runner, "fit_transform", lambda alg, X, codes, **kw: ((lambda Z: Z), {}))
    out = tmp_path / "out"
    rc = main(["experiment", "basic", "--data", str(root), "--datasets", "toy", "--k", "3", "--out", str(out),
               "--folds", "3", "--quiet", "--no-cache"])
    assert rc == 0
    head = (out / "basic-3nn-test.csv").read_text().splitlines()[0]
    assert head == ",Euclidean,LDA,ITML,DMLMJ,NCA,LMNN,LSI,DML_eig,MCML,LDML"
    assert (out / "basic-3nn-train.csv").exists() and (out / "basic-3nn-test.tex").exists()
    assert "| toy |" in capsys.readouterr().out
    rc = main(["experiment", "ncm", "--data", str(root), "--datasets", "toy", "--out", str(out), "--folds", "3",
               "--quiet", "--no-cache", "--algorithms", "Euclidean + NCM,NCMML"])
    assert rc == 0
    assert (out / "ncm-test.csv").read_text().splitlines()[0] == ",Euclidean + NCM,NCMML"

    csv = tmp_path / "res.csv"
    Table([f"d{i}" for i in range(8)], ["Euclidean", "NCA"],
          np.c_[np.linspace(0.6, 0.9, 8), np.linspace(0.6, 0.9, 8) + [0.05, 0.03, 0.02, 0, 0.04, 0.06, 0.02, -0.02]]
          ).to_csv(csv)
    assert main(["compare", str(csv), "NCA", "Euclidean"]) == 0
    text = capsys.readouterr().out
    p = [float(v) for v in re.findall(r"= (\d\.\d{4})", text)]
    assert len(p) == 3 and abs(sum(p) - 1) < 2e-4 and p[0] > 0.9
    png = tmp_path / "res-NCA-vs-Euclidean.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["compare", str(csv), "NCA", "Euclidean", "--out", str(tmp_path / "figs") + "/"]) == 0
    assert (tmp_path / "figs" / "res-NCA-vs-Euclidean.png").exists()
    assert main(["compare", str(csv), "NCA", "LMNN"]) == 2
    assert "No column 'LMNN'" in capsys.readouterr().err
    assert main(["experiment", "basic", "--data", str(tmp_path / "nope"), "--quiet", "--no-cache"]) == 2


def test_cli_dim_experiment_tables_and_curves(tmp_path, capsys):
    root = _toy_keel(tmp_path / "data")
    out = tmp_path / "out"
    rc = main(["experiment", "dim", "--data", str(root), "--datasets", "toy", "--out", str(out), "--folds", "3",
               "--dims", "1,2,max,classes-1", "--algorithms", "PCA,LDA", "--quiet", "--no-cache"])
    assert rc == 0 and "(3 not applicable)" in capsys.readouterr().out
    t = Table.from_csv(out / "dim-3nn-toy-test.csv")
    assert t.rows == ["1", "2", "Dim. máxima", "N. Clases - 1"] and t.columns == ["PCA", "LDA"]  # the published labels
    np.testing.assert_array_equal(t.values[1], t.values[3])  # the same fits serve "2" and "N. Clases - 1"
    assert np.isnan(t.values[2, 1]) and not np.isnan(t.values[:, 0]).any()  # LDA cannot learn 3 dims here
    raw = json.loads((out / "dim-3nn-folds.json").read_text())
    assert {r["n_components_out"] for r in raw if r["status"] == "ok" and r["n_components"] == 2} == {2}
    assert (out / "dim-3nn-toy.png").read_bytes()[:4] == b"\x89PNG"


def test_dim_duplicate_rows_fit_once_without_cache(tmp_path, monkeypatch):
    root = _toy_keel(tmp_path / "data")
    calls = []
    monkeypatch.setattr(_runner, "fit_transform", lambda alg, X, codes, **kw: calls.append(kw) or ((lambda Z: Z), {}))
    res = run_experiment("dim", data_dir=root, datasets=["toy"], n_folds=3, algorithms=["PCA"], dims=[2, "classes-1"],
                         progress=False)
    assert [c["n_components"] for c in calls] == [2, 2, 2] and {c["pad_to"] for c in calls} == {41}
    assert res.table("test", "toy").rows == ["2", "N. Clases - 1"]


# ----------------------------------------------------------------------------- the published numbers
PUBLISHED_EXACT = dict(appendicitis=0.83394, bupa=0.65462, cleveland=0.54683, iris=0.95333, sonar=0.83701,
                       wine=0.96067, pima=0.73966, wdbc=0.97168)


@needs_keel
def test_harness_reproduces_published_euclidean_3nn():
    res = run_experiment("basic", data_dir=KEEL, datasets=list(PUBLISHED_EXACT), k=3, algorithms=["Euclidean"],
                         progress=False)
    got = dict(zip(res.table("test").rows, res.table("test").values[:, 0]))
    for name, published in PUBLISHED_EXACT.items():
        assert round(got[name], 5) == published, (name, got[name], published)  # published: 5 decimals
