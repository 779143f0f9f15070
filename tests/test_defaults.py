"""Defaults: the fixed tuning/confirmation split of the protocol, and NCA's honest convergence."""

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import jaxdml

ROOT = Path(__file__).resolve().parents[1]
SPLIT = ROOT / "benchmarks" / "defaults_split.json"
KEEL = ROOT.parent / "shared" / "keel"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_defaults", ROOT / "benchmarks" / "bench_defaults.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------- the split
def test_split_halves_are_disjoint_and_reproducible():
    split = json.loads(SPLIT.read_text())
    tuning, confirmation = set(split["tuning"]), set(split["confirmation"])
    assert tuning and confirmation and not tuning & confirmation
    assert len(tuning) + len(confirmation) == len(split["tuning"]) + len(split["confirmation"])  # no repeats
    assert tuning | confirmation == set(split["n_samples"])
    # the file is what its documented rule produces (seeded permutation within size strata) ...
    again = _bench().make_split(split["n_samples"], split["seed"], split["small_max_samples"])
    assert again == {"tuning": split["tuning"], "confirmation": split["confirmation"]}
    # ... and each half holds about half of each stratum
    for small in (True, False):
        stratum = {n for n, s in split["n_samples"].items() if (s <= split["small_max_samples"]) == small}
        assert abs(len(stratum & tuning) - len(stratum & confirmation)) <= 1


@pytest.mark.skipif(not KEEL.is_dir(), reason="the shared KEEL folder ../shared/keel is absent")
def test_split_covers_exactly_the_shared_keel_data_sets():
    from jaxdml.datasets import list_keel_datasets

    split = json.loads(SPLIT.read_text())
    shared = set(list_keel_datasets(KEEL))
    assert len(shared) == 25
    assert set(split["tuning"]) | set(split["confirmation"]) == shared


@pytest.mark.skipif(not KEEL.is_dir(), reason="the shared KEEL folder ../shared/keel is absent")
def test_full_tier_summarises_a_run_of_the_whole_folds_only(tmp_path):
    """``--tier full --sizes full`` (a reference run on whole folds only, as scikit-learn's NCA is
    run): the summary has no subset column and the gain check has nothing to compare."""
    out = tmp_path / "full.json"
    _bench().main(["--tier", "full", "--sizes", "full", "--datasets", "banana", "--folds", "1", "--methods",
                   "Euclidean", "--k", "3", "--data", str(KEEL), "--cache", str(tmp_path / "cache"), "--out", str(out)])
    payload = json.loads(out.read_text())
    assert payload["per_size"]["subset"] == {}
    row, = payload["summary"]
    assert row["method"] == "Euclidean" and row["subset"] is None and 0.8 < row["full"] < 1.0
    assert payload["gain_check"] == []


@pytest.mark.skipif(not KEEL.is_dir(), reason="the shared KEEL folder ../shared/keel is absent")
def test_full_tier_reuses_its_cached_folds_per_training_size(tmp_path):
    """A second run with the same settings fits nothing (each fold's record is read back), and a
    fold's 2000-row subset and its whole training rows are separate records."""
    argv = ["--tier", "full", "--datasets", "banana", "--folds", "1", "--methods", "Euclidean", "--k", "3",
            "--data", str(KEEL), "--cache", str(tmp_path / "cache")]
    first = _bench()
    first.main(argv + ["--out", str(tmp_path / "a.json")])

    def no_fit(*args, **kwargs):
        raise AssertionError("a cached fold was fitted again")

    second = _bench()
    second._fit_score = no_fit
    second.main(argv + ["--out", str(tmp_path / "b.json")])
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["per_size"] == b["per_size"]
    subset, full = (a["per_size"][size]["Euclidean"]["banana"]["3"] for size in ("subset", "full"))
    assert subset is not None and full is not None and subset != full  # 2000 rows vs 4 770


def test_labels_selects_every_registered_method_that_learns_from_labels():
    """``--methods labels``: Euclidean first, then every registered method that reads the labels
    (class labels, pairs built from them, ordinal targets) and nothing that ignores them; the basic
    experiment's methods under its column labels, so their cached folds are shared."""
    bench = _bench()
    names = bench.label_methods()
    assert names[0] == "Euclidean" and len(names) == len(set(names))
    ignore_labels = {n for n, r in jaxdml.methods().items() if not (r.labels or r.supervised)}
    assert ignore_labels >= {"euclidean", "pca", "covariance"}
    from jaxdml.experiments import get_experiment

    columns = {a.method: a.label for a in get_experiment("basic").algorithms(3)}
    expected = {columns.get(n, n) for n in jaxdml.methods() if n not in ignore_labels}
    assert set(names[1:]) == expected
    assert {"DML_eig", "kda", "lodml", "mlkr", "ncmml"} <= set(names)
    units = bench.method_units("labels", ["NCA:reg=0.0"])
    assert [u[0] for u in units] == names + ["NCA"] and units[-1][1] == {"reg": 0.0}


def test_a_registered_method_outside_the_basic_columns_is_fitted_with_its_estimator():
    bench = _bench()
    alg = bench.jaxdml_algorithm("kda", 5, {})
    assert (alg.method, alg.estimator, alg.params, alg.classifier) == ("kda", "KDA", {}, ("knn", 5))
    assert bench.jaxdml_algorithm("lfda", 3, {"k": 4}).params == {"k": 4}
    assert bench.jaxdml_algorithm("dml_eig", 3, {}).label == "DML_eig"  # the basic column, any case
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        bench.jaxdml_algorithm("nope", 3, {})


@pytest.mark.skipif(not KEEL.is_dir(), reason="the shared KEEL folder ../shared/keel is absent")
def test_full_tier_gain_check_covers_a_method_outside_the_basic_columns(tmp_path):
    out = tmp_path / "full.json"
    _bench().main(["--tier", "full", "--sizes", "subset", "--datasets", "banana", "--folds", "1", "--methods",
                   "lfda", "--k", "3", "--data", str(KEEL), "--cache", str(tmp_path / "cache"), "--out", str(out)])
    payload = json.loads(out.read_text())
    acc = payload["per_size"]["subset"]["lfda"]["banana"]["3"]
    eucl = payload["per_size"]["subset"]["Euclidean"]["banana"]["3"]
    assert 0.5 < acc <= 1.0 and 0.5 < eucl <= 1.0  # two balanced-ish classes: above chance
    # a run of the subsets only still summarises them (the whole-fold column empty, nothing to check)
    assert [(r["method"], r["subset"], r["full"]) for r in payload["summary"]] == [
        ("Euclidean", eucl, None), ("lfda", acc, None)]
    assert payload["gain_check"] == []


# --------------------------------------------------------------------------- NCA converges honestly
def _collapse_problem():
    """scikit-learn's NCA toy problem: two points of class 0 and, at their midpoint, one of class 1.

    With ``u = x_0 - x_1`` and ``d = ||L u||^2`` (so ``||L(x_0 - x_2)||^2 = d / 4``), each class-0
    point picks its partner with probability ``1 / (1 + exp(3d/4))`` and the class-1 point has no
    partner, so jaxdml's loss (minus the mean probability of a correct pick) is
    ``f(L) = -(2/3) / (1 + exp(3d/4))``: minimal, ``-1/3``, exactly when the points collapse
    (``L u = 0``).
    """
    rng = np.random.RandomState(42)
    two = rng.randn(2, 5)
    X = np.vstack([two, two.mean(axis=0)[None]])
    return X, np.array([0, 0, 1]), two[0] - two[1]


def _gap(L, u):
    """``f(L) - f*`` in float64, from the closed form above."""
    d = float(np.sum((np.asarray(L, np.float64) @ u) ** 2))
    return (2.0 / 3.0) * (0.5 - 1.0 / (1.0 + np.exp(0.75 * d)))


def test_nca_unpenalised_reaches_the_collapse_optimum():
    X, y, u = _collapse_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        nca = jaxdml.NCA(reg=0, random_state=42).fit(X, y)
    assert nca.converged_
    Xt = nca.transform(X)
    # scikit-learn's own assertion on this problem: the three points coincide (6 decimals)
    np.testing.assert_array_almost_equal(Xt - Xt[2], 0.0, decimal=6)
    assert _gap(nca.components_, u) <= 1e-10


def test_nca_default_penalty_keeps_the_rank_on_the_collapse_toy():
    """The default penalty is ``reg (tr M~ - log det M~)`` (``logdet`` follows ``reg``, 1e-4 here): its
    log-determinant forbids the exact collapse ``L u = 0``. Near it ``f = -1/3 + d/8 + O(d^2)`` and the
    term along ``u`` is ``-reg log(d) + const``, so the optimum is at ``d = 8 reg`` and the NCA term is
    ``reg`` above its own optimum; the other directions keep unit length (range units)."""
    X, y, u = _collapse_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        nca = jaxdml.NCA(random_state=42).fit(X, y)
    # "auto" is the penalty 1e-4 on this (small, full-batch) path, and logdet follows it
    assert nca.converged_ and nca.reg == "auto" and nca.logdet == "auto"
    np.testing.assert_array_equal(nca.components_,
                                  jaxdml.NCA(reg=1e-4, logdet=1e-4, random_state=42).fit(X, y).components_)
    assert _gap(nca.components_, u) == pytest.approx(1e-4, rel=0.05)
    sv = np.linalg.svd(nca.components_, compute_uv=False)
    assert 0 < sv[-1] < 0.05 and np.all(sv[:-1] > 0.5)  # one direction nearly collapsed, never to 0
    Xt = nca.transform(X)
    assert np.abs(Xt - Xt[2]).max() <= 2e-2 * np.abs(X - X[2]).max()


@pytest.mark.parametrize("kw", [dict(), dict(optimizer="adam", max_iter=100), dict(optimizer="adam", max_iter=45),
                                dict(optimizer="sgd", learning_rate=0.1, max_iter=300)])
def test_nca_reports_convergence_only_at_the_optimum(kw):
    """``converged_`` means the stopping test held: the loss is then within ``tol`` (relative to
    ``max(|f*|, 1) = 1``) of the optimum ``-1/3`` -- whatever the optimizer."""
    X, y, u = _collapse_problem()
    tol = 1e-5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the Frobenius penalty alone (logdet=0): its optimum is the collapse, f* = -1/3
        nca = jaxdml.NCA(tol=tol, logdet=0.0, random_state=42, **kw).fit(X, y)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert warned == (not nca.converged_)
    if nca.converged_:
        assert _gap(nca.components_, u) <= tol, kw


def test_nca_budget_of_one_step_is_not_convergence():
    X, y, _ = _collapse_problem()
    with pytest.warns(ConvergenceWarning):
        nca = jaxdml.NCA(max_iter=1, random_state=42).fit(X, y)
    assert not nca.converged_ and nca.n_iter_ == 1


def test_nca_auto_penalty_follows_the_path():
    """``reg="auto"``: the penalty 1e-4 on the full-batch path and whenever the user picks the
    optimizer, 0 on the large-data minibatch path (more than ``NCA_LARGE_N`` samples, the default
    optimizer); an explicit ``reg`` always wins. Each fit equals the one with that ``reg`` given."""
    from jaxdml.methods.gradient._nca import NCA_LARGE_N, NCA_REG

    rng = np.random.default_rng(0)
    n = NCA_LARGE_N + 48
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)

    def L(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return jaxdml.NCA(max_iter=3, random_state=0, **kw).fit(X, y).components_

    np.testing.assert_array_equal(L(), L(reg=0.0))  # the minibatch path: no penalty
    assert not np.array_equal(L(), L(reg=NCA_REG))
    np.testing.assert_array_equal(L(optimizer="lbfgs"), L(optimizer="lbfgs", reg=NCA_REG))
    small = slice(0, NCA_LARGE_N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = jaxdml.fit(X[small], y[small], loss="nca", max_iter=3).L
        b = jaxdml.fit(X[small], y[small], loss="nca", max_iter=3, reg=NCA_REG).L
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="reg"):
        jaxdml.NCA(reg="none").fit(X[:50], y[:50])


def test_nca_without_penalty_stays_finite_on_unscaled_data():
    """``reg=0`` turns the log-determinant term off in the program itself: on unscaled wine, Adam steps of 0.1
    take the map to a numerically lower rank where the float32 ``log det`` is ``-inf``; a term weighted by a
    traced 0 made the loss ``0 * -inf`` (NaN) after 5 steps. The unpenalised fit is the paper's objective."""
    from sklearn.datasets import load_wine

    from jaxdml.losses import nca

    X, y = load_wine(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "became non-finite" warning, no other warning
        res = jaxdml.fit(X, y, loss="nca", reg=0, optimizer="adam", learning_rate=0.1, max_iter=300, random_state=0)
    assert res.converged and res.n_iter > 5 and np.isfinite(res.loss) and np.all(np.isfinite(res.L))
    problem = jaxdml.make_problem(X, y)
    # the plain NCA term went down from the Euclidean start (float32 values of unscaled wine: compared, not equated)
    assert float(nca(res.L, problem)) < float(nca(np.eye(X.shape[1]), problem)) - 0.05
    assert float(nca(res.L, problem, logdet=None)) == float(nca(res.L, problem, logdet=0.0))  # both leave it out


# --------------------------------------------------------------------------- round 16: the real full-size tier
def _large():
    spec = importlib.util.spec_from_file_location("_large", ROOT / "benchmarks" / "_large.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("b,c", [(0, 0), (5, 1), (1, 5), (20, 12), (823, 691), (4181, 557)])
def test_round16_sign_test_is_the_exact_binomial_tail(b, c):
    """P(B >= b), B ~ Bin(b + c, 1/2): scipy's exact binomial test, one-sided (1 without discordant rows)."""
    from scipy.stats import binomtest

    p = _large().sign_test_p(b, c)
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5, alternative="greater").pvalue
    np.testing.assert_allclose(p, expected, rtol=1e-9, atol=1e-300)


def test_round16_gain_check_flags_a_gain_turned_into_a_significant_loss():
    """Above Euclidean on the subsets and significantly below on all rows: "loss"; below on the subsets: no
    check; a mean all-rows gain below -0.3 points where the subsets beat fails the method too."""
    def run(method, ds, n, acc, eucl, b=0, c=0):
        return dict(method=method, dataset=f"large-{ds}", n=n, status="ok", accuracy=acc, euclidean=eucl,
                    fit_s=1.0, peak_rss_mib=100.0, per_split=[dict(b=b, c=c)])

    results = [run("a", "x", 2000, 0.80, 0.79), run("a", "x", "full", 0.85, 0.86, b=60, c=30),
               run("b", "x", 2000, 0.78, 0.79), run("b", "x", "full", 0.80, 0.86, b=90, c=10),
               run("c", "x", 2000, 0.80, 0.79), run("c", "x", "full", 0.855, 0.86, b=12, c=8),
               run("c", "y", 2000, 0.80, 0.79), run("c", "y", "full", 0.854, 0.86, b=11, c=8)]
    rows, verdicts = _large().gain_check(results)
    checks = {(r["method"], r["dataset"]): r["check"] for r in rows}
    assert checks == {("a", "x"): "loss", ("b", "x"): "-", ("c", "x"): "ok", ("c", "y"): "ok"}
    assert not verdicts["a"]["ok"] and verdicts["b"]["ok"]
    assert not verdicts["c"]["ok"] and verdicts["c"]["significant_losses"] == []  # mean -0.55 points
    # a method that reads the labels as grades or targets is reported, not judged
    rows, verdicts = _large().gain_check(results, outside=frozenset({"a"}))
    assert {(r["method"], r["dataset"]): r["check"] for r in rows}[("a", "x")] == "n/a"
    assert verdicts["a"]["ok"] is None and verdicts["b"]["ok"] and not verdicts["c"]["ok"]


def test_round16_splits_follow_the_written_rule():
    """Split 0 is the shipped one; split s draws a stratified split of the same test size with seed s."""
    y = np.repeat([0, 1, 2], [50, 30, 20])
    shipped = (np.arange(90), np.arange(90, 100))
    large = _large()
    assert large.split_rows(y, shipped, 0) is shipped
    tr, te = large.split_rows(y, shipped, 1)
    assert len(te) == 10 and len(tr) == 90 and not set(tr) & set(te)
    np.testing.assert_array_equal(np.bincount(y[te]), [5, 3, 2])  # stratified
    tr2, te2 = large.split_rows(y, shipped, 1)
    np.testing.assert_array_equal(te, te2)
    assert not np.array_equal(np.sort(te), np.sort(large.split_rows(y, shipped, 2)[1]))
