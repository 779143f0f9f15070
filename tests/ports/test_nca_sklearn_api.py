"""NCA behaves like scikit-learn's NeighborhoodComponentsAnalysis where their APIs meet:
warm starts, the per-step callback, degenerate labels, the shape checks of an initial map and
the convergence warning.

scikit-learn's own ``test_nca.py``, run with ``jaxdml.NCA`` in place of its class, passes except
where the difference is deliberate: ``init="auto"`` at full dimension is the identity here (the
paper's Euclidean start; scikit-learn starts from LDA when n_classes - 1 >= n_features), progress
goes to the ``jaxdml`` logger rather than stdout in scikit-learn's format, the default penalty
``reg=1e-4`` collapses the three-point toy to ~4e-5 rather than 6 decimals (``reg=0`` does, see
test_defaults), and two tests call scikit-learn's private ``_loss_grad_lbfgs``.
"""

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris

import jaxdml
from jaxdml.exceptions import ConvergenceWarning


@pytest.fixture(scope="module")
def iris01():
    X, y = load_iris(return_X_y=True)
    return (X - X.min(0)) / (X.max(0) - X.min(0)), y


def test_warm_start_continues_from_the_previous_map(iris01):
    X, y = iris01
    warm = jaxdml.NCA(warm_start=True, max_iter=30, random_state=0).fit(X, y)
    first = warm.components_.copy()
    warm.set_params(max_iter=1, init="random", n_components=2)  # ignored when warm starting
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.fit(X, y)
        cold = jaxdml.NCA(max_iter=1, random_state=0).fit(X, y)
    assert warm.components_.shape == first.shape
    # one more L-BFGS step from the previous map moves it much less than a fresh one-step fit
    assert np.abs(warm.components_ - first).sum() < 0.5 * np.abs(cold.components_ - first).sum()


def test_warm_start_rejects_a_different_number_of_features(iris01):
    X, y = iris01
    nca = jaxdml.NCA(warm_start=True, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nca.fit(X, y)
    with pytest.raises(ValueError, match=re.escape("The new inputs dimensionality (3) does not match")):
        nca.fit(X[:, :3], y)


def test_callback_gets_the_flattened_map_at_every_step(iris01):
    X, y = iris01
    seen = []
    nca = jaxdml.NCA(max_iter=5, callback=lambda t, i: seen.append((t.copy(), i)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nca.fit(X, y)
    assert [i for _, i in seen] == list(range(nca.n_iter_))  # 0-based, as scikit-learn's
    assert all(t.shape == (16,) for t, _ in seen)
    # step k reports the iterate it starts from: step 0 the initial map (the identity at full dimension)
    np.testing.assert_allclose(seen[0][0].reshape(4, 4), np.eye(4), rtol=0, atol=1e-6)
    assert not np.allclose(seen[-1][0], seen[0][0])


def test_an_exception_in_the_callback_reaches_the_caller(iris01):
    X, y = iris01

    def broken(transformation, n_iter):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        jaxdml.NCA(max_iter=3, callback=broken).fit(X, y)
    # the next fit with a working callback is not affected by the stored error
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        jaxdml.NCA(max_iter=3, callback=lambda t, i: calls.append(i)).fit(X, y)
    assert calls


@pytest.mark.parametrize("case", ["one class", "singletons"])
def test_constant_objective_keeps_the_initial_map(iris01, case):
    X, y = iris01
    if case == "one class":
        X, y = X[y == 0], y[y == 0]
    else:
        X, y = X[[0, 50, 100]], y[[0, 50, 100]]
    with pytest.warns(UserWarning, match="objective is constant"):
        nca = jaxdml.NCA(init="identity").fit(X, y)
    np.testing.assert_array_equal(nca.transform(X), X)
    assert nca.converged_ and nca.n_iter_ == 0
    # the other supervised learners still need two classes
    if case == "one class":
        with pytest.raises(ValueError, match="1 class"):
            jaxdml.LMNN().fit(X, y)


def test_initial_map_shape_errors_name_the_problem(iris01):
    X, y = iris01
    with pytest.raises(ValueError, match=re.escape("input dimensionality (5) of the given linear transformation")):
        jaxdml.NCA(init=np.ones((4, 5))).fit(X, y)
    with pytest.raises(ValueError, match=re.escape("output dimensionality (5) of the given linear transformation "
                                                   "`init` cannot be greater than its input dimensionality (4)")):
        jaxdml.NCA(init=np.ones((5, 4))).fit(X, y)
    with pytest.raises(ValueError, match=re.escape("`n_components` (3) does not match the output dimensionality")):
        jaxdml.NCA(n_components=3, init=np.eye(2, 4)).fit(X, y)
    with pytest.raises(ValueError, match=re.escape("`n_components` (6) cannot be greater than the given data "
                                                   "dimensionality (4)")):
        jaxdml.NCA(n_components=6).fit(X, y)


def test_an_initial_map_fixes_n_components(iris01):
    X, y = iris01
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nca = jaxdml.NCA(init=np.eye(2, 4), max_iter=3).fit(X, y)
    assert nca.components_.shape == (2, 4) and nca.transform(X).shape == (150, 2)


def test_convergence_warning_names_the_estimator(iris01):
    X, y = iris01
    with pytest.warns(ConvergenceWarning, match=re.escape("[NCA] NCA did not converge in max_iter=2")):
        jaxdml.NCA(max_iter=2).fit(X, y)
