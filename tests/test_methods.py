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
        "import jaxdml\nfrom tests.test_methods import WHITEN\njaxdml.register_method(WHITEN, replace=True)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("JAXDML_KEEL_DIR", str(data))  # no KEEL iris there: scikit-learn's iris
    main(["experiment", "basic", "--datasets", "iris", "--algorithms", "Euclidean,whiten",
          "--folds", "3", "--out", str(tmp_path / "out"), "--plugins", "jaxdml_whiten_plugin", "--quiet",
          "--no-cache"])
    out = capsys.readouterr().out
    assert "whiten" in out and "Euclidean" in out
