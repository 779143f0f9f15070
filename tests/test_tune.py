"""Tuning helpers: the grid, the folds and the scores against scikit-learn; one compilation for a float grid."""

import jax
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.neighbors import KNeighborsClassifier

import jaxdml
from jaxdml.solvers import trace_count

GRID = {"learning_rate": [0.01, 0.02, 0.05, 0.1, 0.2], "tol": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]}


def _count_backend_compiles():
    """A list that grows by one entry for every XLA backend compilation from now on."""
    seen = []

    def listener(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    return seen


def test_float_grid_compiles_once_and_matches_one_fit_at_a_time(wine_scaled):
    X, y = wine_scaled
    nca = jaxdml.NCA(optimizer="adam", max_iter=20)
    before = trace_count()
    res = jaxdml.tune_knn(nca, X, y, 3, tune_args=GRID, n_folds=5, seed=0, refit=False)
    assert trace_count() - before == 1  # 25 grid points x 5 folds: the solver is traced once
    assert res.vectorised and len(res.results["3-NN"]) == 25 and len(res.detailed["fold"]) == 125
    assert set(res.results) >= {"learning_rate", "tol", "3-NN", "3-NN std", "loss", "n_iter", "converged"}
    # another 5 x 5 grid of other floats runs the same compiled program: no trace, no XLA compilation
    compiles = _count_backend_compiles()
    other = {"learning_rate": [0.015, 0.03, 0.07, 0.15, 0.3], "tol": [3e-2, 3e-3, 3e-4, 3e-5, 3e-6]}
    again = jaxdml.tune_knn(nca, X, y, 3, tune_args=other, n_folds=5, seed=0, refit=False)
    assert trace_count() - before == 1 and again.vectorised and len(compiles) == 0
    # the vectorised grid gives what one fit at a time gives (same folds: the same seed)
    slow = jaxdml.tune_knn(nca, X, y, 3, tune_args={"learning_rate": [0.05], "tol": [1e-2, 1e-4]}, n_folds=5,
                           seed=0, refit=False, vectorize=False)
    assert not slow.vectorised
    rows = [int(np.flatnonzero((res.results["learning_rate"] == 0.05) & (res.results["tol"] == t))[0])
            for t in (1e-2, 1e-4)]
    np.testing.assert_array_equal(res.results["n_iter"][rows], slow.results["n_iter"])
    np.testing.assert_array_equal(res.results["converged"][rows], slow.results["converged"])
    np.testing.assert_allclose(res.results["loss"][rows], slow.results["loss"], rtol=1e-5)
    np.testing.assert_allclose(res.results["3-NN"][rows], slow.results["3-NN"], atol=1e-12)
    # the trajectories batched by jax.vmap (the default on accelerators) give the same fits
    batched = jaxdml.tune_knn(nca, X, y, 3, tune_args={"learning_rate": [0.05], "tol": GRID["tol"]}, n_folds=5,
                              seed=0, refit=False, vectorize="vmap")
    rows = np.flatnonzero(res.results["learning_rate"] == 0.05)
    np.testing.assert_array_equal(res.results["n_iter"][rows], batched.results["n_iter"])
    np.testing.assert_allclose(res.results["loss"][rows], batched.results["loss"], rtol=1e-5)
    i = int(np.argmax(res.results["3-NN"]))
    assert res.best_params == {"learning_rate": res.results["learning_rate"][i], "tol": res.results["tol"][i]}


def test_tune_generic_path_against_sklearn_folds():
    X, y = load_iris(return_X_y=True)
    res = jaxdml.tune(jaxdml.PCA(), X, y, tune_args={"n_components": [1, 2]}, metrics=[1, 5], n_folds=3, n_reps=2,
                      seed=3)
    assert not res.vectorised and list(res.results["n_components"]) == [1, 2]
    folds = list(RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=3).split(X, y))
    for i, nc in enumerate([1, 2]):
        for k in (1, 5):
            accs = []
            for tr, te in folds:
                pca = jaxdml.PCA(n_components=nc).fit(X[tr])
                accs.append(KNeighborsClassifier(k).fit(pca.transform(X[tr]), y[tr]).score(pca.transform(X[te]), y[te]))
            assert res.results[f"{k}-NN"][i] == pytest.approx(np.mean(accs))
            assert res.results[f"{k}-NN std"][i] == pytest.approx(np.std(accs))
    assert res.best_estimator.n_components == res.best_params["n_components"]
    assert res.best_score == max(res.results["1-NN"])
    assert len(res.rows()) == 2 and res.table().count("\n") == 3


def test_metadata_cross_validate_and_errors():
    X, y = load_iris(return_X_y=True)
    out = jaxdml.metadata_cross_validate(jaxdml.LDA(), X, y, metrics=[3, "time", "n_iter"], n_folds=3, seed=0)
    assert out["3-NN"].shape == (3,) and out["mean"]["3-NN"] > 0.9 and out["time"].min() > 0
    with pytest.raises(ValueError, match="not a diagnostic"):
        jaxdml.metadata_cross_validate(jaxdml.PCA(), X, y, metrics=["nonsense"], n_folds=2)
    with pytest.raises(ValueError, match="metric is an int"):
        jaxdml.tune(jaxdml.PCA(), X, y, metrics=[1.5], n_folds=2)
    with pytest.raises(ValueError, match="metric learner"):
        jaxdml.tune(object(), X, y, n_folds=2)
    by_name = jaxdml.tune("lda", X, y, metrics=[3], n_folds=3, seed=0, refit=False)  # a name picks its estimator
    assert by_name.best_estimator is None and by_name.results["3-NN"][0] == pytest.approx(out["mean"]["3-NN"])


# (the default suite keeps L-BFGS, the path with a line search; the Adam trajectory is compared with
# one fit at a time per tolerance by test_float_grid_compiles_once_and_matches_one_fit_at_a_time)
@pytest.mark.parametrize("opt", [pytest.param("adam", marks=pytest.mark.slow), "lbfgs"])
def test_one_trajectory_with_many_tolerances_is_minimize_for_each(rng, x64, opt):
    """The grid's shared trajectory gives each tolerance what ``minimize`` with that tolerance alone
    gives: the same stopping iteration, flag, best loss and parameters, whether it converged early or
    ran out of iterations (then the final update is evaluated once more, as the driver does)."""
    import jax.numpy as jnp

    from jaxdml import losses
    from jaxdml.solvers import make_optimizer, minimize
    from jaxdml.tuning._multitol import multi_tol_runner

    X = rng.normal(size=(40, 5))
    y = np.arange(40) % 3
    X[:, 0] += y
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    L0 = jnp.eye(5)
    optimizer, patience = make_optimizer(opt), (2 if opt == "lbfgs" else 10)
    lr = 0.2 if opt == "adam" else None
    tols = [1e-1, 1e-2, 1e-3, 1e-6, 1e-12]
    max_iter, reg = (150, 0.1) if opt == "adam" else (15, 0.01)
    run = multi_tol_runner(losses.nca, optimizer, None, max_iter, patience, ())
    res = run(L0, prob, {"reg": jnp.asarray(reg)}, jnp.asarray(tols), None if lr is None else jnp.asarray(lr))
    for t, tol in enumerate(tols):
        one = minimize(losses.nca, L0, prob, optimizer=optimizer, max_iter=max_iter, tol=tol, learning_rate=lr,
                       patience=patience, hyper={"reg": reg})
        assert int(res.n_iter[t]) == int(one.n_iter) and bool(res.converged[t]) == bool(one.converged)
        np.testing.assert_allclose(float(res.loss[t]), float(one.loss), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(res.params[t]), np.asarray(one.params), rtol=1e-8, atol=1e-10)
    assert bool(res.converged[0]) and not bool(res.converged[-1])  # both endings are exercised
    assert int(res.n_iter[-1]) == max_iter
