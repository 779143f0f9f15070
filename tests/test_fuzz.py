"""Seeded fuzzing: every method's fit, then the newer surface (tuple inputs and preprocessors,
``jaxdml.load``, the tuning helpers, the command line, the generic estimator, fitted metrics).

The invariant: a clear error (``ValueError``/``TypeError``, or scikit-learn's ``NotFittedError``,
raised by jaxdml's or scikit-learn's validation, not from inside JAX or NumPy, with a message that
names the parameter, field, option or file at fault) or a finite, correct result: a metric whose
``M`` is positive semidefinite with honest flags (``converged=False`` comes with a warning), and
where a reference exists, the reference's result.

The probes are seeded, so every run makes the same ones; ``JAXDML_FUZZ_CASES=N`` makes each test
draw ``N`` of them instead of its small default (e.g. ``JAXDML_FUZZ_CASES=300 pytest
tests/test_fuzz.py``).
"""

import os
import sys
import warnings
import zlib

import numpy as np
import pytest

import jaxdml
from jaxdml.exceptions import ConvergenceWarning

METHODS = jaxdml.available_methods()
SCALES = (1e-30, 1e-9, 1e-3, 1.0, 1e3, 1e9, 1e30)
#: probes per test (0: each test's own small default)
CASES = int(os.environ.get("JAXDML_FUZZ_CASES", "0") or 0)


def _cases(default: int) -> int:
    return CASES or default


def _case(rng):
    """One random input: (X, y, kwargs)."""
    n = int(rng.choice([6, 20, 31]))
    d = int(rng.choice([1, 3, 5]))
    n_classes = int(rng.choice([1, 2, 3]))
    X = rng.normal(size=(n, d)) * float(rng.choice(SCALES)) + float(rng.choice([0.0, 5.0]))
    if rng.random() < 0.15:
        X[:, rng.integers(d)] = 0.0  # a constant column
    dtype = rng.choice(["float64", "float32", "int"])
    if dtype == "int" and np.abs(X).max() < 1e15:
        X = np.round(X).astype(np.int64)
    else:
        X = X.astype("float32" if dtype == "float32" else "float64")
    codes = np.arange(n) % n_classes
    kind = rng.choice(["int", "str", "float", "bool", "continuous"])
    y = {"int": codes, "str": np.array(["a", "b", "c"])[codes], "float": codes.astype(float),
         "bool": codes.astype(bool), "continuous": rng.random(n)}[kind]
    kw = dict(max_iter=int(rng.choice([1, 3, 8])))
    if rng.random() < 0.3:
        kw["n_components"] = int(rng.integers(0, d + 2))
    if rng.random() < 0.2:
        kw["tol"] = float(rng.choice([0.0, 1e-12, 1e-3, -1.0]))
    return X, y, kw


def _check_result(m, caught, method):
    L, M = np.asarray(m.L), np.asarray(m.M)
    assert np.all(np.isfinite(L)) and np.all(np.isfinite(M)), f"{method}: non-finite metric"
    w = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert w[0] >= -1e-6 * max(abs(w[-1]), 1e-30), f"{method}: M is not PSD (eigenvalues {w[:3]})"
    if not m.converged:
        assert any(issubclass(c.category, (ConvergenceWarning, RuntimeWarning)) for c in caught), \
            f"{method}: converged=False without a warning"


@pytest.mark.parametrize("method", METHODS)
def test_clear_error_or_finite_psd_metric_with_honest_flags(method):
    _probe_fit(method, _cases(3), seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_clear_error_or_finite_psd_metric_with_honest_flags_more_probes(method):
    """Other probes than the default suite's (each probe compiles its method for a new shape)."""
    _probe_fit(method, _cases(8), seed=1)


def _probe_fit(method, n, seed):
    """``n`` random inputs to ``jaxdml.fit(loss=method)``: each gives a clear error or a finite PSD
    metric whose ``converged=False`` comes with a warning."""
    rng = np.random.default_rng([zlib.crc32(method.encode()), seed])  # the same cases in every run
    outcomes = {"error": 0, "result": 0}
    for _ in range(n):
        X, y, kw = _case(rng)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                m = jaxdml.fit(X, y, loss=method, random_state=0, **kw)
            except (ValueError, TypeError) as exc:
                # a clear error: raised by jaxdml or scikit-learn validation, saying something
                tb = exc.__traceback__
                while tb.tb_next is not None:
                    tb = tb.tb_next
                origin = tb.tb_frame.f_code.co_filename
                assert "/jax/" not in origin and "/jaxlib/" not in origin, f"{method}: error from inside JAX: {exc}"
                assert len(str(exc)) > 15, f"{method}: unhelpful message {exc!r}"
                others = [m for m in METHODS if m != method and f"method {m!r}" in str(exc)]
                assert not others, f"{method}: the message names another method: {exc}"
                outcomes["error"] += 1
                continue
        _check_result(m, caught, method)
        outcomes["result"] += 1
    assert sum(outcomes.values()) == n


# =========================================================================== the newer surface
_INSIDE = tuple(os.sep + p + os.sep for p in ("jax", "jaxlib", "numpy"))


def _assert_clear(exc, names=(), what="", allowed=(ValueError, TypeError)):
    """``exc`` is a clear error: an ``allowed`` type (``NotFittedError`` is a ``ValueError``),
    raised at jaxdml's or scikit-learn's edge rather than inside JAX or NumPy, whose message says
    something and names one of ``names``."""
    assert isinstance(exc, allowed), f"{what}: {type(exc).__name__}: {exc}"
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    origin = tb.tb_frame.f_code.co_filename
    assert not any(p in origin for p in _INSIDE), f"{what}: raised inside {origin}: {exc}"
    msg = str(exc)
    assert len(msg) > 15, f"{what}: unhelpful message {msg!r}"
    assert not names or any(n in msg for n in names), f"{what}: {msg!r} names none of {names}"


def _outcome(call, names=(), what="", allowed=(ValueError, TypeError)):
    """``("error", exc, warnings)`` after checking that the error is clear, or ``("result", value, warnings)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return "result", call(), caught
        except Exception as exc:  # noqa: BLE001 - any other type fails the check below
            _assert_clear(exc, names, what, allowed)
            return "error", exc, caught


def _honest(est, caught, what):
    assert np.all(np.isfinite(est.components_)), f"{what}: non-finite map"
    M = est.get_mahalanobis_matrix()
    w = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert w[0] >= -1e-6 * max(abs(w[-1]), 1e-30), f"{what}: M is not PSD"
    if not est.converged_:
        assert any(issubclass(c.category, (ConvergenceWarning, RuntimeWarning)) for c in caught), \
            f"{what}: converged=False without a warning"


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(7)
    y = np.arange(30) % 3
    return rng.normal(size=(30, 3)) + y[:, None], y


# --------------------------------------------------------------------------- tuples and preprocessors
_TUPLE_LEARNERS = {
    2: (lambda **kw: jaxdml.ITML(max_iter=10, random_state=0, **kw), lambda **kw: jaxdml.SDML(max_iter=10, **kw)),
    3: (lambda **kw: jaxdml.SCML(max_iter=20, output_iter=10, random_state=0, **kw),),
    4: (lambda **kw: jaxdml.LSML(max_iter=5, **kw),),
}
#: defect -> (the arities it applies to, the form it needs, what the error must name)
_TUPLE_DEFECTS = {
    "none": ((2, 3, 4), None, ()),
    "float-whole": ((2, 3, 4), "indices", ()),
    "float-fraction": ((2, 3, 4), "indices", ("index tuples",)),
    "bool": ((2, 3, 4), "indices", ("index tuples",)),
    "str": ((2, 3, 4), "indices", ("index tuples",)),
    "out-of-range": ((2, 3, 4), "array", ("must lie in",)),
    "negative": ((2, 3, 4), "array", ("must lie in",)),
    "arity": ((2, 3, 4), None, ("tuples of",)),
    "nan": ((2, 3, 4), "formed", ("NaN",)),
    "empty": ((2, 3, 4), None, ("0 tuples",)),
    "one-d": ((2, 3, 4), None, ("2D", "2-D", "shape (")),
    "y-str": ((2,), None, ("pair labels",)),
    "y-01": ((2,), None, ()),  # 1/0 flags: accepted, the fit of the +1/-1 labels
    "y-bool": ((2,), None, ()),  # booleans: accepted, likewise
    "y-nan": ((2,), None, ("pair labels",)),
    "y-2": ((2,), None, ("pair labels",)),
    "y-mixed": ((2,), None, ("pair labels", "mix the two conventions")),
    "y-length": ((2,), None, ("one label per pair",)),
    "y-none": ((2,), None, ("pairs need labels",)),
    "y-given": ((3, 4), None, ("y must be None",)),
    "pre-1d": ((2, 3, 4), "array", ("preprocessor",)),
    "pre-nan": ((2, 3, 4), "indices", ("NaN",)),
    "pre-raises": ((2, 3, 4), "callable", ("preprocessor failed",)),
    "pre-shape": ((2, 3, 4), "callable", ("one row per index",)),
    "pre-str": ((2, 3, 4), "indices", ("'preprocessor' parameter",)),
}


def _tuple_probe(rng, X):
    """One probe: ``(arity, learner factory, tuples, y, preprocessor, index tuples, defect, names)``."""
    defect = str(rng.choice(list(_TUPLE_DEFECTS)))
    arities, form, names = _TUPLE_DEFECTS[defect]
    arity = int(rng.choice(arities))
    make = _TUPLE_LEARNERS[arity][int(rng.integers(len(_TUPLE_LEARNERS[arity])))]
    form = form or str(rng.choice(["formed", "array", "callable"]))
    form = str(rng.choice(["array", "callable"])) if form == "indices" else form
    idx = np.stack([rng.choice(len(X), arity, replace=False) for _ in range(int(rng.choice([12, 20])))])
    y = None
    if arity == 2:
        y = np.where(rng.random(len(idx)) < 0.5, 1, -1)
        y[:2] = (1, -1)
    rows = X.copy()
    pre = {"formed": None, "array": rows, "callable": lambda i: rows[i]}[form]
    data = rows[idx] if form == "formed" else idx
    if defect == "float-whole":
        data = idx.astype(float)
    elif defect == "float-fraction":
        data = idx + 0.5
    elif defect in ("bool", "str"):
        data = idx.astype(defect)
    elif defect in ("out-of-range", "negative"):
        data = idx.copy()
        data[int(rng.integers(len(idx))), int(rng.integers(arity))] = -1 if defect == "negative" else len(X) + 3
    elif defect == "arity":
        data = data[:, :-1] if rng.random() < 0.5 else np.concatenate([data, data[:, :1]], axis=1)
    elif defect == "nan":
        data[int(rng.integers(len(idx))), int(rng.integers(arity)), 0] = np.nan
    elif defect == "empty":
        data, y = data[:0], None if y is None else y[:0]
    elif defect == "one-d":
        data = data[:, 0] if form != "formed" else data[0, 0]
    elif defect.startswith("y-") and defect != "y-given":
        y = {"y-str": y.astype(str), "y-01": (y > 0).astype(int), "y-bool": y > 0, "y-length": y[:-1],
             "y-none": None, "y-nan": np.where(np.arange(len(y)) == 3, np.nan, y.astype(float)),
             "y-2": np.where(y > 0, 2, 0), "y-mixed": np.where(np.arange(len(y)) == 3, 0, y)}[defect]
    elif defect == "y-given":
        y = np.ones(len(idx))
    elif defect == "pre-1d":
        pre = rows[:, 0]
    elif defect == "pre-nan":
        rows[idx[0, 0], 0] = np.nan
    elif defect == "pre-raises":
        pre = lambda i: 1 / 0  # noqa: E731
    elif defect == "pre-shape":
        pre = lambda i: rows[i][:, :, None]  # noqa: E731
    elif defect == "pre-str":
        pre = "rows.csv"
    return arity, make, data, y, pre, idx, defect, names


def test_tuples_and_preprocessors_give_clear_errors_or_the_formed_fit(points):
    """Tuple inputs of every kind with one defect each (index dtype and range, arity, NaN, labels,
    the preprocessor): a clear error naming it, or (no defect, float indices holding whole numbers,
    pair labels given as 1/0 or booleans) a finite PSD metric equal to the fit on the same tuples formed
    from the rows with +1/-1 labels."""
    X, _ = points
    rng = np.random.default_rng(24)
    for i in range(_cases(24)):
        arity, make, data, y, pre, idx, defect, names = _tuple_probe(rng, X)
        what = f"probe {i}: {defect}, arity {arity}"
        kind, est, caught = _outcome(lambda: make(preprocessor=pre).fit(data, y), names, what)
        if defect not in ("none", "float-whole", "y-01", "y-bool"):
            assert kind == "error", f"{what}: accepted"
            continue
        assert kind == "result", f"{what}: {est}"
        _honest(est, caught, what)
        formed = make().fit(X[idx], None if y is None else np.where(np.asarray(y) > 0, 1, -1))
        np.testing.assert_array_equal(est.components_, formed.components_, err_msg=what)
        score = est.score(data, y) if arity == 2 else est.score(data)
        assert 0.0 <= score <= 1.0, what
        assert set(np.unique(est.predict(data))) <= {-1, 1}, what


# --------------------------------------------------------------------------- jaxdml.load
@pytest.fixture(scope="module")
def saved(tmp_path_factory, points):
    """A linear metric with an input scaling and a kernel metric, saved."""
    X, y = points
    folder = tmp_path_factory.mktemp("metrics")
    lin = jaxdml.fit(X, y, loss="lda")
    lin.input_scaling = (np.full(3, 0.5), np.array([1.0, 2.0, 0.5]))
    ker = jaxdml.fit(X, y, loss="kda", kernel="rbf", gamma=0.3)
    return {"linear": (lin, lin.save(folder / "linear")), "kernel": (ker, ker.save(folder / "kernel"))}


def _transform_from(fields, X):
    """What a metric file's arrays say ``transform(X)`` is (NumPy; rbf kernels)."""
    if "input_scale" in fields:
        X = X * fields["input_scale"] + fields["input_offset"]
    if str(fields["kind"]) == "kernel":
        gamma = __import__("json").loads(str(fields["kernel_params"]))["gamma"]
        d2 = ((X[:, None, :] - fields["X_fit"][None]) ** 2).sum(-1)
        return np.exp(-gamma * d2) @ fields["L"].T
    return X @ fields["L"].T


_REPLACEMENTS = (np.nan, np.array([np.nan, 1.0]), np.zeros((2, 2, 2)), "x", np.int64(-3), np.zeros(0), np.inf,
                 np.array(["a", "b"]), np.float64(0.5), "same-shape")


def _damage(rng, fields, raw, target):
    """Write a damaged copy of a metric file to ``target``; return (defect, fields it may still hold)."""
    defect = str(rng.choice(["truncate", "flip", "empty", "npy", "text", "folder", "missing", "drop", "replace",
                             "pickled", "extra"]))
    out = dict(fields)
    if defect == "truncate":
        target.write_bytes(raw[: int(rng.integers(0, len(raw)))])
    elif defect == "flip":
        b = bytearray(raw)
        for pos in rng.integers(0, len(b), int(rng.integers(1, 4))):
            b[pos] ^= int(rng.integers(1, 256))
        target.write_bytes(bytes(b))
    elif defect in ("empty", "text", "npy", "folder"):
        {"empty": lambda: target.write_bytes(b""), "text": lambda: target.write_text("L,M\n1,2\n"),
         "npy": lambda: np.save(open(target, "wb"), fields["L"]), "folder": target.mkdir}[defect]()
    elif defect in ("drop", "replace", "pickled", "extra"):
        name = str(rng.choice(sorted(fields)))
        if defect == "drop":
            del out[name]
        elif defect == "replace":
            new = _REPLACEMENTS[int(rng.integers(len(_REPLACEMENTS)))]
            shape = np.shape(fields[name])
            out[name] = rng.normal(size=shape) if isinstance(new, str) and new == "same-shape" else new
        elif defect == "pickled":
            out[name] = np.array([{"a": 1}], dtype=object)
        else:
            out["comment"] = np.asarray("an extra field")
        np.savez(open(target, "wb"), **out)
        defect = f"{defect} {name}"
    return defect, out


def test_load_damaged_files_gives_clear_errors_or_what_the_file_says(saved, points, tmp_path):
    """Metric files cut short, with flipped bytes, of another kind, with a field dropped, replaced
    (NaN, wrong shape or type) or pickled: a ValueError naming the file (and, for a field, a field),
    or a metric whose transform is the one the file's arrays define."""
    X, _ = points
    rng = np.random.default_rng(25)
    originals = {k: (m, dict(np.load(p)), open(p, "rb").read(), p) for k, (m, p) in saved.items()}
    for i in range(_cases(30)):
        kind = str(rng.choice(sorted(originals)))
        metric, fields, raw, _ = originals[kind]
        target = tmp_path / f"probe{i}.npz"
        defect, written = _damage(rng, fields, raw, target)
        what = f"probe {i}: {kind}, {defect}"
        names = [str(target)]
        if defect.split()[0] in ("drop", "replace"):
            names = [f"'{f}'" for f in fields] + ["format"]
        allowed = (ValueError, TypeError) + ((FileNotFoundError,) if defect == "missing" else ())
        out, loaded, _ = _outcome(lambda: jaxdml.load(target), names, what, allowed)
        if out == "error":
            assert str(target) in str(loaded), f"{what}: the message does not name the file: {loaded}"
            continue
        assert defect.split()[0] in ("flip", "drop", "replace", "extra"), f"{what}: loaded"
        Z = loaded.transform(X)
        assert np.all(np.isfinite(Z)), what
        if defect.startswith("flip"):  # a byte of the archive's bookkeeping: the same metric
            np.testing.assert_array_equal(Z, metric.transform(X), err_msg=what)
        else:
            np.testing.assert_allclose(Z, _transform_from(written, X), rtol=1e-6, atol=1e-9, err_msg=what)


def test_fitted_metric_input_fuzz(saved):
    """transform / pairwise_distances / pair_distance of a (loaded) metric on bad X: a clear error
    naming X, or the NumPy reference."""
    from scipy.spatial.distance import cdist

    metric = jaxdml.load(saved["linear"][1])
    rng = np.random.default_rng(26)
    for i in range(_cases(30)):
        n = int(rng.choice([0, 1, 5]))
        X = rng.normal(size=(n, 3))
        defect = str(rng.choice(["none", "nan", "inf", "str", "complex", "columns", "one-d", "three-d", "list",
                                 "int", "bool", "float32", "none-entry"]))
        bad = {"nan": np.nan, "inf": -np.inf}.get(defect)
        if bad is not None and n:
            X[int(rng.integers(n)), int(rng.integers(3))] = bad
        Xb = {"str": lambda: X.astype(str), "complex": lambda: X + 1j, "columns": lambda: X[:, :2],
              "one-d": X.ravel, "three-d": lambda: X[None], "list": X.tolist, "int": lambda: np.round(X).astype(int),
              "bool": lambda: X > 0, "float32": lambda: X.astype(np.float32),
              "none-entry": lambda: np.array([[None] * 3] * max(n, 1))}.get(defect, lambda: X)()
        names = ("X ", "X:", "X must", "X has", "X contains")
        for call in ("transform", "pairwise_distances", "pair_distance"):
            fn = {"transform": lambda: metric.transform(Xb),
                  "pairwise_distances": lambda: metric.pairwise_distances(Xb),
                  "pair_distance": lambda: metric.pair_distance(Xb, Xb)}[call]
            what = f"probe {i}: {defect} ({n} rows), {call}"
            out, value, _ = _outcome(fn, names, what)
            expect_error = defect in ("complex", "columns", "one-d", "three-d", "none-entry") or (
                defect in ("nan", "inf") and n > 0) or (defect == "list" and n == 0)  # [] is 1-D
            if defect != "str":  # numbers written as text convert (as jaxdml.fit reads them): either is fine
                assert (out == "error") == expect_error, f"{what}: {out} {value}"
            if out == "result":
                Xf = np.asarray(Xb, dtype=np.float64).reshape(-1, 3) * np.array([1.0, 2.0, 0.5]) + 0.5
                Z = Xf @ metric.L.T
                ref = {"transform": Z, "pairwise_distances": cdist(Z, Z) if n else np.zeros((0, 0)),
                       "pair_distance": np.zeros(len(Z))}[call]
                tol = 1e-5 if defect in ("float32", "bool") else 1e-9  # float32 arithmetic
                np.testing.assert_allclose(value, ref, rtol=tol, atol=tol * 10, err_msg=what)


# --------------------------------------------------------------------------- tuning helpers
#: argument -> (bad values, what the error must name); each probe spoils one argument
_TUNE_DEFECTS = {
    "metrics": (["3-NN", "loss", [], [0], [3.7], ["nope"], [3, 3], None, [True], ["loss"]], ("metric",)),
    "n_neighbors": ([3.7, 0, True, "3", -1], ("n_neighbors",)),
    "tune_args": (["k", {"n_components": 3}, {"n_components": []}, {"bogus": [1]}, {"n_components": "ab"},
                   ["n_components"], {"n_components": [0]}, {"n_components": [1.5]}], ("tune_args", "n_components")),
    "dml_params": ([{"bogus": 1}, "x", {"n_components": -1}], ("dml_params", "n_components")),
    "n_folds": ([1, 2.5, True, 0, 1000], ("n_folds", "n_splits")),
    "n_reps": ([0, 1.5, "2"], ("n_reps",)),
    "seed": ([-1, "x", 1.5], ("seed",)),
    "refit": (["yes", None, 2], ("refit",)),
    "vectorize": (["x", True, 1.0], ("vectorize",)),
    "knn_args": ([{"foo": 1}, {"n_neighbors": 3}, {"weights": "nope"}], ("foo", "n_neighbors", "weights")),
    "y": (["continuous", "short", "nan"], ("y", "target", "class", "samples")),
    "X": (["nan", "1-d"], ("NaN", "2D", "X")),
    "dml": (["nope", 3, "lfda-loss"], ("nope", "dml", "estimator", "loss")),
}


def _tune_reference(X, y, n_components, k, n_folds, n_reps, seed):
    """Mean k-NN accuracy of PCA(n_components) + k-NN over scikit-learn's repeated stratified folds."""
    from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    cv = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=n_reps, random_state=seed)
    pipe = make_pipeline(jaxdml.PCA(n_components), KNeighborsClassifier(k))
    return float(np.mean(cross_val_score(pipe, X, y, cv=cv)))


def _tune_call(helper, args):
    a = dict(args)
    X, y, dml, knn = a.pop("X"), a.pop("y"), a.pop("dml"), a.pop("knn_args")
    if helper == "metadata_cross_validate":
        return jaxdml.metadata_cross_validate(dml, X, y, metrics=a["metrics"], n_folds=a["n_folds"],
                                              n_reps=a["n_reps"], seed=a["seed"], **knn)
    if helper == "tune_knn":
        return jaxdml.tune_knn(dml, X, y, a["n_neighbors"], a["dml_params"], a["tune_args"], a["n_folds"], a["n_reps"],
                               a["seed"], metrics=a["metrics"], refit=a["refit"], vectorize=a["vectorize"], **knn)
    return jaxdml.tune(dml, X, y, a["dml_params"], a["tune_args"], a["metrics"], a["n_folds"], a["n_reps"], a["seed"],
                       refit=a["refit"], vectorize=a["vectorize"], **knn)


def test_tuning_helpers_give_clear_errors_or_scikit_learns_cross_validation(points):
    """tune, tune_knn and metadata_cross_validate with one argument spoilt: a clear error naming it;
    unspoilt, the means equal scikit-learn's cross_val_score of the same pipeline on the same folds."""
    X0, y0 = points
    rng = np.random.default_rng(27)
    for i in range(_cases(16)):
        helper = str(rng.choice(["tune", "tune_knn", "metadata_cross_validate"]))
        k, n_folds, seed = int(rng.choice([1, 3])), int(rng.choice([2, 3])), int(rng.integers(100))
        args = dict(X=X0, y=y0, dml=jaxdml.PCA(), dml_params=None, tune_args={"n_components": [1, 2]},
                    metrics=[k, "n_iter"] if helper != "tune_knn" else ("n_iter",), n_neighbors=k, n_folds=n_folds,
                    n_reps=1, seed=seed, refit=bool(rng.random() < 0.5), vectorize="auto", knn_args={})
        usable = [d for d in _TUNE_DEFECTS if helper != "metadata_cross_validate" or d not in
                  ("n_neighbors", "tune_args", "dml_params", "refit", "vectorize")]
        defect = str(rng.choice(["none"] + usable + usable)) if rng.random() < 0.9 else "none"
        names = ()
        if defect != "none":
            values, names = _TUNE_DEFECTS[defect]
            bad = values[int(rng.integers(len(values)))]
            if helper == "tune_knn" and (bad == ["loss"] or bad == "lfda-loss"):
                # tune_knn has a loss column only for learners with one: not a defect there
                bad = ["nope"] if defect == "metrics" else "nope"
            if defect == "n_neighbors" and helper != "tune_knn":
                defect, bad, names = "metrics", [bad, "n_iter"], ("metric",)
            if defect == "y":
                bad = {"continuous": rng.random(30), "short": y0[:-1], "nan": np.where(y0 == 1, np.nan, y0)}[bad]
            elif defect == "X":
                bad = np.where(np.arange(90).reshape(30, 3) == 4, np.nan, X0) if bad == "nan" else X0[:, 0]
            elif defect == "dml" and bad == "lfda-loss":
                args["metrics"], bad = ["loss"], jaxdml.LFDA()
            args[defect] = bad
        what = f"probe {i}: {helper}, {defect}={args.get(defect)!r:.60}"
        out, res, _ = _outcome(lambda: _tune_call(helper, args), names, what)
        if defect != "none":
            assert out == "error", f"{what}: accepted"
            continue
        assert out == "result", f"{what}: {res}"
        if helper == "metadata_cross_validate":
            ref = _tune_reference(X0, y0, None, k, n_folds, 1, seed)
            assert res["mean"][f"{k}-NN"] == pytest.approx(ref, abs=1e-12), what
            continue
        for j, nc in enumerate(res.results["n_components"]):
            ref = _tune_reference(X0, y0, int(nc), k, n_folds, 1, seed)
            assert res.results[f"{k}-NN"][j] == pytest.approx(ref, abs=1e-12), what
        assert res.best_score == pytest.approx(np.max(res.results[f"{k}-NN"])), what
        assert (res.best_estimator is not None) == args["refit"], what


# --------------------------------------------------------------------------- the command line
def _cli_files(tmp):
    """Files and folders the CLI probes point options at."""
    (tmp / "folder").mkdir(exist_ok=True)
    (tmp / "empty.csv").write_text("")
    (tmp / "binary.csv").write_bytes(b"\x00\xff\xfe\x01" * 8)
    (tmp / "letters.csv").write_text("1,2,a\n3,x,b\n")
    (tmp / "plain.txt").write_text("not a table\n")
    (tmp / "broken_plugin.py").write_text("raise RuntimeError('a broken plugin')\n")
    return {"folder": str(tmp / "folder"), "missing": str(tmp / "nothing" / "here.csv"),
            "empty": str(tmp / "empty.csv"), "binary": str(tmp / "binary.csv"), "letters": str(tmp / "letters.csv"),
            "file": str(tmp / "plain.txt"), "under-file": str(tmp / "plain.txt" / "out")}


def _cli_probe(rng, files, tmp):
    """``(argv, defect)``: one command with at most one defect (experiment and compare always have one,
    so that no probe runs a whole experiment)."""
    command = str(rng.choice(["fit", "fit", "experiment", "compare"]))
    pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
    if command == "fit":
        argv = ["fit", "--dataset", "iris", "--loss", "pca", "--folds", "2", "--quiet"]
        defects = [("--dataset", pick(["folder", "missing", "empty", "binary", "letters", "nope"])),
                   ("--folds", pick(["1", "x", "-2", "1000"])), ("--k", pick(["0", "1000", "x"])),
                   ("--n-components", pick(["0", "99"])), ("--max-iter", pick(["0", "-1"])),
                   ("--param", pick(["x", "=3", "bogus=1"])), ("--loss", pick(["nope", "pca:x", "nca:1,nope:2"])),
                   ("--out", pick(["missing", "under-file"])), ("--seed", pick(["-1", "x"])),
                   ("--verbose", "-1")]
        if rng.random() < 0.25:
            return argv, None
    elif command == "experiment":
        argv = ["experiment", str(pick(["basic", "dim"])), "--out", str(tmp / "results"), "--quiet",
                "--datasets", "iris", "--algorithms", "Euclidean"]
        defects = [("--plugins", pick(["no_such_module_xyz", "broken_plugin"])), ("--cache-dir", "file"),
                   ("--out", "file"), ("--data", pick(["file", "missing"])), ("--k", pick(["x", "0"])),
                   ("--dims", "x"), ("--datasets", "nope"), ("--algorithms", "nope"), ("--folds", "1")]
    else:
        argv = ["compare", files["file"], "NCA", "Euclidean"]
        defects = [("results", pick(["folder", "missing", "binary", "file"])), ("--samples", "0"),
                   ("--seed", "-1")]
    option, value = defects[int(rng.integers(len(defects)))]
    value = files.get(value, value)
    if option == "results":
        argv[1] = value
    elif option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    if argv[1] == "dim" and option == "--k":
        argv[1] = "basic"
    return argv, f"{option} {value}"


def test_cli_gives_one_line_errors_and_status_2(tmp_path, capsys, monkeypatch):
    """The ``jaxdml`` command with one bad option (a folder for a file, a missing module, numbers out
    of range, unknown names): exit status 2 with one line 'jaxdml: error: ...' (or argparse's usage
    error), never a traceback; without a defect, status 0 and the accuracies."""
    from jaxdml.cli import main

    monkeypatch.syspath_prepend(str(tmp_path))
    files = _cli_files(tmp_path)
    rng = np.random.default_rng(28)
    out = str(tmp_path / "results")
    reported = [(["fit", "--dataset", files["folder"], "--quiet"], "--dataset folder"),  # issue 24's cases
                (["experiment", "basic", "--plugins", "no_such_module_xyz", "--out", out], "--plugins"),
                (["experiment", "basic", "--cache-dir", files["file"], "--out", out], "--cache-dir file")]
    probes = reported + [_cli_probe(rng, files, tmp_path) for _ in range(_cases(12))]
    for i, (argv, defect) in enumerate(probes):
        what = f"probe {i}: {' '.join(argv)}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse: usage and the option at fault
                rc = exc.code
                err = capsys.readouterr().err
                assert rc == 2 and "error: argument" in err, f"{what}: {err}"
                continue
        out, err = capsys.readouterr()
        assert "Traceback" not in err, what
        if defect is None:
            assert rc == 0 and "accuracy" in out, f"{what}: {err}"
            continue
        # a note (no KEEL folder on a fresh clone: only the bundled data sets) is not an error line
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith("jaxdml: note: ")]
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("jaxdml: error: "), f"{what}: rc={rc} {err!r}"
        assert len(lines[0]) > 30, f"{what}: {lines[0]!r}"
    sys.modules.pop("broken_plugin", None)


# --------------------------------------------------------------------------- estimators and jaxdml.fit
_POOL = (-1, 0, -0.5, 0.5, 2, 2.5, 1e300, np.nan, np.inf, "nope", "auto", True, None, [1.0, 2.0], np.int64(3),
         np.eye(2))


def _rejects(call, name):
    """Whether ``call`` (which cannot get past the data: X is None) failed on parameter ``name``."""
    out, exc, _ = _outcome(call, what=f"{name}")
    assert out == "error", f"{name}: a fit on X=None succeeded"
    msg = str(exc)
    return f"'{name}'" in msg or f"{name}=" in msg


def test_estimators_and_fit_accept_the_same_values():
    """For every estimator and every method hyper-parameter or fit setting it shares with its
    record, a value from a pool of odd ones is refused by the estimator exactly when
    ``jaxdml.fit`` refuses it (both checked on X=None, so that no fit runs)."""
    import inspect

    from sklearn.base import clone

    from jaxdml.methods.core._record import SETTINGS

    rng = np.random.default_rng(29)
    n_checked = 0
    for cls_name in jaxdml.estimators.__all__:
        cls = getattr(jaxdml.estimators, cls_name)
        if not inspect.isclass(cls) or getattr(cls, "_record", None) is None:
            continue
        est = cls()
        record = est._get_record()
        params = est.get_params(deep=False)
        shared = [k for k in params if k in (record.constraints or {}) or (k in SETTINGS and k in record.settings)]
        for name in shared:
            values = _POOL if CASES else [_POOL[j] for j in rng.choice(len(_POOL), 4, replace=False)]
            for value in values:
                by_est = _rejects(lambda: clone(est).set_params(**{name: value}).fit(None, None), name)
                by_fit = _rejects(lambda: jaxdml.fit(None, None, loss=record.name, **{name: value}), name)
                assert by_est == by_fit, f"{cls_name}({name}={value!r}): estimator {by_est}, jaxdml.fit {by_fit}"
                n_checked += 1
    assert n_checked > 100


_CLOSED_FORMS = ("euclidean", "pca", "lda", "lfda", "rca", "covariance", "anmm", "dmlmj", "llda")


def test_metric_learner_any_method(points):
    """jaxdml.MetricLearner (the generic estimator) on non-kernel methods: bad params give a clear
    error naming them; a closed form's transform equals jaxdml.fit's."""
    X, y = points
    rng = np.random.default_rng(30)
    linear = [name for name, rec in jaxdml.methods.methods().items() if rec.learns != "A"]
    for i in range(_cases(12)):
        defect = str(rng.choice(["none", "unknown", "params", "n_components", "random_state", "method", "value"]))
        method = str(rng.choice(_CLOSED_FORMS if defect in ("none", "value") else linear))
        record = jaxdml.methods.methods()[method]
        kw, names, params = {}, (), None
        if defect == "unknown":
            params, names = {"not_a_parameter": 1}, ("not_a_parameter",)
        elif defect == "params":
            params, names = "mu=0.5", ("params",)
        elif defect in ("n_components", "random_state"):
            kw, names = {defect: {"n_components": 0, "random_state": "seed"}[defect]}, (defect,)
        elif defect == "method":
            method, names = "no_such_method", ("no_such_method",)
        elif defect == "value" and record.constraints:
            key = str(rng.choice(sorted(record.constraints)))
            params, names = {key: _POOL[int(rng.integers(len(_POOL)))]}, (key,)
        what = f"probe {i}: {method}, {defect}, params={params!r}, {kw}"
        kw = {"random_state": 0, **kw}
        out, est, caught = _outcome(lambda: jaxdml.MetricLearner(method, params=params, **kw).fit(X, y), names, what)
        if defect not in ("none", "value"):
            assert out == "error", f"{what}: accepted"
            continue
        if out == "result":  # a value the method takes: the estimator gives jaxdml.fit's metric
            _honest(est, caught, what)
            ref = jaxdml.fit(X, y, loss=method, random_state=0, **(params or {}))
            np.testing.assert_allclose(est.transform(X), ref.transform(X), rtol=1e-10, atol=1e-12, err_msg=what)


def test_index_tuples_given_by_keyword(points):
    """``fit(X, pairs=, similar=)``, ``fit(X, triplets=)``, ``fit(X, quadruplets=)`` with one defect
    (index dtype, range or shape; similarity flags; labels given as well): a clear error naming the
    argument, or a finite PSD metric with honest flags."""
    X, y = points
    rng = np.random.default_rng(31)
    learners = {"pairs": lambda: jaxdml.ITML(max_iter=10, random_state=0),
                "triplets": lambda: jaxdml.SCML(max_iter=20, output_iter=10, random_state=0),
                "quadruplets": lambda: jaxdml.LSML(max_iter=5)}
    arity = {"pairs": 2, "triplets": 3, "quadruplets": 4}
    for i in range(_cases(16)):
        kind = str(rng.choice(sorted(learners)))
        idx = np.stack([rng.choice(len(X), arity[kind], replace=False) for _ in range(12)])
        similar = np.r_[1, 0, rng.integers(0, 2, 10)]
        defect = str(rng.choice(["none", "float-fraction", "bool", "str", "out-of-range", "shape", "labels-too"]
                                + (["similar-str", "similar-2", "similar-nan", "similar-length"] if kind == "pairs"
                                   else [])))
        labels, names = None, (kind,)
        tuples = {"float-fraction": idx + 0.5, "bool": idx.astype(bool), "str": idx.astype(str),
                  "out-of-range": np.where(idx == idx[0, 0], len(X) + 2, idx), "shape": idx[:, :-1]}.get(defect, idx)
        if defect.startswith("similar-"):
            similar = {"similar-str": similar.astype(str), "similar-2": similar * 2,
                       "similar-nan": np.where(similar == 1, np.nan, 0.0), "similar-length": similar[:-1]}[defect]
            names = ("similar",)
        if defect == "labels-too":
            labels, names = y, ("either labels y or",)
        kw = {kind: tuples, **({"similar": similar} if kind == "pairs" else {})}
        what = f"probe {i}: {kind}, {defect}"
        out, est, caught = _outcome(lambda: learners[kind]().fit(X, labels, **kw), names, what)
        if defect != "none":
            assert out == "error", f"{what}: accepted"
            continue
        assert out == "result", f"{what}: {est}"
        _honest(est, caught, what)
