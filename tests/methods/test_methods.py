"""The method layer: records, the public registry, a user's own method end to end, validation."""

import numbers

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

import jaxdml
from jaxdml.exceptions import InvalidParameterError
from jaxdml.methods import Interval, Method, _registry


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return MinMaxScaler().fit_transform(X), y


@pytest.fixture
def clean_registry(monkeypatch):
    """Register into a copy of the table, so that a test's methods do not leak into others."""
    monkeypatch.setattr(_registry, "_TABLE", dict(_registry._TABLE))


def _whiten(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, eps):
    """A user's closed form: whitening by the (ridged) covariance, ``L = C^{-1/2}`` (leading rows)."""
    C = np.cov(X, rowvar=False) + eps * np.eye(X.shape[1])
    w, U = np.linalg.eigh(C)
    return dict(L=((U / np.sqrt(w)).T)[::-1][:n_components], info=dict(eigenvalues=w[::-1]))


WHITEN = Method("whiten", "L", _whiten, defaults=dict(eps=1e-3),
                constraints={"eps": [Interval(numbers.Real, 0, None)]}, supervised=False)


def test_methods_lists_every_record_and_available_methods_is_its_names():
    table = jaxdml.methods()
    assert list(table) == jaxdml.available_methods() == sorted(table)
    assert {"nca", "lmnn", "lmnn_metric", "itml", "lsi", "kda", "klmnn"} <= set(table)
    for name, m in table.items():
        assert isinstance(m, Method) and m.name == name and m.learns in ("L", "M", "A")
        if m.estimator is not None:  # each record names its estimator, and the estimator runs that record
            est = getattr(jaxdml, m.estimator)()
            assert est._get_record() is m or (name == "lmnn_metric" and m.estimator == "LMNN")
    # the records carry the gradient defaults (one place)
    nca = table["nca"].loss
    assert (nca.optimizer, nca.learning_rate, nca.max_iter, nca.batch_size, nca.large_n, nca.candidates_above,
            nca.n_candidates) == ("lbfgs", None, 100, 256, 2000, 2000, 1024)
    assert jaxdml.methods.get_method("lmnn").loss is table["lmnn"].loss
    # the maths layer holds pure functions only: the method layer owns LossSpec and the registry
    assert not hasattr(jaxdml.losses, "LossSpec") and not hasattr(jaxdml.losses, "get")
    assert jaxdml.methods.LossSpec is type(table["lmnn"].loss)


def test_user_method_by_name_in_fit_estimator_and_experiment(iris, clean_registry, tmp_path, monkeypatch):
    X, y = iris
    jaxdml.register_method(WHITEN)
    assert "whiten" in jaxdml.methods() and "whiten" in jaxdml.available_methods()
    res = jaxdml.fit(X, loss="whiten", eps=0.0)  # unsupervised: no labels needed
    C = np.cov(X, rowvar=False)
    np.testing.assert_allclose(res.L.T @ res.L, np.linalg.inv(C), rtol=1e-8)  # M = C^{-1}: Mahalanobis
    assert res.method == "whiten" and res.converged
    with pytest.raises(InvalidParameterError, match="'eps' parameter of method 'whiten'"):
        jaxdml.fit(X, y, loss="whiten", eps=-1.0)
    with pytest.raises(ValueError, match=r"Unknown hyper-parameter\(s\) \['epsilon'\]"):
        jaxdml.fit(X, y, loss="whiten", epsilon=1.0)
    with pytest.raises(ValueError, match="already registered"):
        jaxdml.register_method(WHITEN)
    # the estimator machinery: a transformer in a pipeline
    pipe = make_pipeline(jaxdml.MetricLearner("whiten", params={"eps": 0.0}), KNeighborsClassifier(3))
    assert pipe.fit(X, y).score(X, y) > 0.9
    np.testing.assert_allclose(pipe[0].components_, res.L, rtol=1e-10)
    # the experiment runner: a registered method's name adds a column
    from jaxdml.experiments import run_experiment

    # no data folder of the user's: scikit-learn's iris, split in 3 stratified folds
    monkeypatch.setenv("JAXDML_KEEL_DIR", str(tmp_path))
    out = run_experiment("basic", data_dir=None, datasets=["iris"], algorithms=["Euclidean", "whiten"], n_folds=3,
                         progress=False)
    recs = [r for r in out.records if r["algorithm"] == "whiten"]
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs)
    assert all(0.8 < r["test_accuracy"] <= 1.0 for r in recs)
    assert "whiten" in out.table("test").columns


def test_user_gradient_method_matches_builtin(iris, clean_registry):
    """A gradient method registered from a pure loss trains exactly like the built-in one."""
    X, y = iris
    builtin = jaxdml.methods()["nca"]
    jaxdml.register_method(jaxdml.methods.gradient_method("my_nca", builtin.loss, defaults=builtin.defaults))
    a = jaxdml.fit(X, y, loss="my_nca", max_iter=10, random_state=0)
    b = jaxdml.fit(X, y, loss="nca", max_iter=10, random_state=0)
    np.testing.assert_allclose(a.L, b.L, rtol=1e-6)
    assert a.method == "my_nca"


def test_register_method_rejects_bad_records(clean_registry):
    with pytest.raises(TypeError):
        jaxdml.register_method({"name": "x"})
    with pytest.raises(ValueError, match="learns"):
        jaxdml.register_method(WHITEN._replace(name="w2", learns="Q"))


def test_invalid_parameter_error_is_a_value_error(iris):
    X, y = iris
    with pytest.raises(InvalidParameterError, match="'mu' parameter of method 'lmnn'"):
        jaxdml.fit(X, y, loss="lmnn", mu=2.0)
    with pytest.raises(InvalidParameterError, match="'mu' parameter of LMNN"):
        jaxdml.LMNN(mu=2.0).fit(X, y)
    assert issubclass(InvalidParameterError, ValueError)


def test_compilation_and_application_layer_are_lazy():
    import subprocess
    import sys

    code = ("import sys, jaxdml; heavy = [m for m in sys.modules if m.startswith(('jaxdml.experiments', "
            "'jaxdml.plotting', 'jaxdml.cli', 'matplotlib'))]; assert not heavy, heavy; "
            "assert callable(jaxdml.compilation.enable_compilation_cache); "
            "assert 'jaxdml.compilation' in sys.modules; "
            # the application layer, imported, still leaves matplotlib to the first plot
            "import jaxdml.plotting, jaxdml.experiments, jaxdml.cli; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_experiment_imports_plugins_that_register_methods(clean_registry, tmp_path, monkeypatch, capsys):
    """``jaxdml experiment --plugins MODULE --algorithms NAME``: the module registers the method."""
    from jaxdml.cli import main

    (tmp_path / "jaxdml_whiten_plugin.py").write_text(
        "import jaxdml\nfrom tests.methods.test_methods import WHITEN\njaxdml.register_method(WHITEN, replace=True)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("JAXDML_KEEL_DIR", str(data))  # no KEEL iris there: scikit-learn's iris
    main(["experiment", "basic", "--datasets", "iris", "--algorithms", "Euclidean,whiten",
          "--folds", "3", "--out", str(tmp_path / "out"), "--plugins", "jaxdml_whiten_plugin", "--quiet",
          "--no-cache"])
    out = capsys.readouterr().out
    assert "whiten" in out and "Euclidean" in out


# ------------------------------------------------------------------ the deprecated registration API
def test_deprecated_register_solver_warns_and_registers_a_method(iris, clean_registry):
    """``jaxdml.methods.register_solver``/``SolverSpec`` (once ``jaxdml.solvers.*``) still register a
    closed-form method that ``jaxdml.fit`` runs by name, with a DeprecationWarning naming the new API."""
    from jaxdml.methods import _compat

    assert jaxdml.methods.SolverSpec is _compat.SolverSpec
    assert jaxdml.methods.register_solver is _compat.register_solver
    X, _ = iris
    spec = jaxdml.methods.SolverSpec(_whiten, supervised=False, constraints=dict(WHITEN.constraints))
    with pytest.warns(DeprecationWarning, match=r"register_solver is deprecated; use jaxdml.register_method"):
        jaxdml.methods.register_solver("old_whiten", spec)
    rec = jaxdml.methods()["old_whiten"]
    assert (rec.learns, rec.supervised, rec.loss, rec.settings) == ("L", False, None, frozenset())
    assert rec.constraints == WHITEN.constraints
    res = jaxdml.fit(X, loss="old_whiten", eps=0.0)
    np.testing.assert_allclose(res.L.T @ res.L, np.linalg.inv(np.cov(X, rowvar=False)), rtol=1e-8)
    with pytest.raises(InvalidParameterError, match="'eps' parameter of method 'old_whiten'"):
        jaxdml.fit(X, loss="old_whiten", eps=-1.0)
    # the table of solvers: the methods that are not gradient losses
    table = _compat.solvers_table()
    assert "old_whiten" in table and "pca" in table and "nca" not in table
    assert all(m.loss is None for m in table.values())

    # a solve step taking **kwargs accepts any hyper-parameter (no constraints); the jaxdml.fit settings
    # it names are handed to it
    seen = []

    def _takes_any(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, init="auto", **kw):
        seen.append(init)
        return _whiten(X, codes, n_classes, n_components=n_components, random_state=random_state,
                       max_iter=max_iter, tol=tol, verbose=verbose, eps=kw.get("eps", 1e-3))

    with pytest.warns(DeprecationWarning):
        jaxdml.methods.register_solver("old_any", jaxdml.methods.SolverSpec(_takes_any, supervised=False))
    rec = jaxdml.methods()["old_any"]
    assert rec.constraints is None and rec.settings == frozenset({"init"})
    np.testing.assert_allclose(jaxdml.fit(X, loss="old_any", eps=0.0, init="pca").L, res.L, rtol=1e-10)
    assert seen == ["pca"]


def _towards_2i(L, problem):
    """A loss with a known minimiser: ``L = 2 I`` (the squared Frobenius distance to it)."""
    import jax.numpy as jnp

    return jnp.sum((L - 2.0 * jnp.eye(*L.shape)) ** 2)


def test_deprecated_loss_table_forwards_to_the_method_records(iris, clean_registry):
    """``register_loss``/``loss_specs``/``get_loss`` (once ``jaxdml.losses.register/REGISTRY/get``)
    read and write the gradient methods' records."""
    from jaxdml.methods import _compat
    from jaxdml.methods.core._record import GRADIENT_SETTINGS

    nca = jaxdml.methods()["nca"]
    specs = _compat.loss_specs()
    assert specs["nca"] is nca.loss and specs["lmnn_metric"] is jaxdml.methods()["lmnn_metric"].loss
    assert set(specs) == {n for n, m in jaxdml.methods().items() if m.loss is not None}
    assert "pca" not in specs
    assert _compat.get_loss("lmnn") is jaxdml.methods()["lmnn"].loss
    with pytest.raises(ValueError, match=r"Unknown loss 'pca'\. Valid gradient losses: \[.*'nca'"):
        _compat.get_loss("pca")  # a closed form has no loss spec
    spec = jaxdml.methods.LossSpec(_towards_2i, "L", max_iter=20)
    with pytest.warns(DeprecationWarning, match="register_loss is deprecated; use jaxdml.register_method"):
        _compat.register_loss("old_loss", spec)
    assert _compat.get_loss("old_loss") is spec and _compat.loss_specs()["old_loss"] is spec
    rec = jaxdml.methods()["old_loss"]
    assert (rec.learns, rec.loss, rec.settings) == ("L", spec, GRADIENT_SETTINGS)
    # jaxdml.fit trains it by name, to the loss's minimiser
    X, y = iris
    res = jaxdml.fit(X[::5], y[::5], loss="old_loss")
    np.testing.assert_allclose(res.L, 2.0 * np.eye(4), atol=1e-4)
    # a built-in name stays the built-in record; a bad parametrisation is refused
    with pytest.warns(DeprecationWarning):
        _compat.register_loss("nca", spec)
    assert jaxdml.methods()["nca"] is nca
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="param must be 'L' or 'M'; got 'Q'"):
        _compat.register_loss("bad", spec._replace(param="Q"))
    assert "bad" not in jaxdml.methods()


def test_batchable_is_declared_on_the_record_of_plain_gradient_methods():
    """The tuning grid batches a method when its record says so: every record built by ``gradient_method``
    (NCA behind its one-class guard as well), no closed form and no method with a solve step of its own."""
    from jaxdml.tuning._batched import _eligible

    records = jaxdml.methods()
    assert records["nca"].batchable and records["lmnn"].batchable and records["mcml"].batchable
    for name in ("klmnn", "mlkr", "lsml", "lodml", "kda", "itml", "ncmc"):
        assert not records[name].batchable, name
    assert _eligible(jaxdml.NCA(), [{"reg": 0.1}], ["loss"], {})
    assert _eligible(jaxdml.LMNN(), [{"mu": 0.3}], ["loss"], {})
    assert not _eligible(jaxdml.MLKR(), [{"tol": 0.1}], ["loss"], {})


def test_the_settings_table_is_checked_once_by_run_and_names_the_caller():
    """``run`` checks a setting against the one table; the estimator's own check names the estimator."""
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="jaxdml.fit"):
        jaxdml.fit(X, y, loss="nca", learning_rate=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        jaxdml.NCA(learning_rate=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="n_neighbors=5 must be smaller than n_samples=5"):
        jaxdml.fit(X[::30], y[::30], loss="lmnn", n_neighbors=5)


def test_a_measured_loss_on_the_record_warns_at_its_size_only():
    """``Method.measured_loss``: ``run`` warns from ``rows`` training rows on, naming the method and what was
    measured; below it, or without the field, nothing."""
    import warnings as _w

    from jaxdml.methods.core._record import MeasuredLoss

    X, y = load_iris(return_X_y=True)
    record = jaxdml.methods()["lda"]
    noted = record._replace(measured_loss=MeasuredLoss(150, "Measured: a test, -1.00 points."))
    with pytest.warns(UserWarning, match=r"lda: on 150 training rows .* Measured: a test, -1.00 points"):
        jaxdml.methods.run(noted, X, y)
    with _w.catch_warnings():
        _w.simplefilter("error")
        jaxdml.methods.run(noted, X[:149], y[:149])
        jaxdml.methods.run(record, X, y)


def test_every_measured_loss_is_stated_in_the_estimators_docstring():
    """A record that warns at a size says so in its estimator's docstring, with the same numbers and threshold."""
    noted = {name: r for name, r in jaxdml.methods().items() if r.measured_loss is not None}
    assert {"kda", "ncmml", "kllda"} <= set(noted)
    for name, record in noted.items():
        doc = " ".join(getattr(jaxdml, record.estimator).__doc__.split())
        assert "round 16" in doc, name
        assert f"{record.measured_loss.rows:,}".replace(",", " ") + " rows or more warns" in doc, name
        for figure in record.measured_loss.text.split("rows): ")[1].replace(";", ",").split(", "):
            assert figure.split(") ")[-1].rstrip(".") in doc, (name, figure)
