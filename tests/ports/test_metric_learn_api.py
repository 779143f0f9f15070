"""metric-learn's API beyond its class names: the preprocessor of learners on points, LMNN's
parameters, ``score_pairs``, the tuple learners as scikit-learn classifiers, ``prior="random"``,
MMC's ``init`` and diagonal form, SCML's warning on too few bases. Each is checked from its
definition (the same fit as on the points themselves, the paper's objective, an independent
optimiser), not against stored numbers."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import is_classifier
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.model_selection import StratifiedKFold, cross_val_score

import jaxdml
from jaxdml.solvers import x64_call
from jaxdml.solvers._mmc_diagonal import mmc_diagonal_objective, mmc_diagonal_solve


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


# --------------------------------------------------------------------------- preprocessor on points
POINT_LEARNERS = [
    (jaxdml.NCA, dict(max_iter=15)),
    (jaxdml.LMNN, dict(max_iter=15)),
    (jaxdml.LFDA, dict(k=2)),
    (jaxdml.RCA_Supervised, dict(random_state=0)),
    (jaxdml.Covariance, {}),
    (jaxdml.ITML_Supervised, dict(random_state=0)),
    (jaxdml.MMC_Supervised, dict(random_state=0, max_iter=20)),
    (jaxdml.SDML_Supervised, dict(random_state=0, prior="identity", balance_param=5e-5)),
    (jaxdml.LSML_Supervised, dict(random_state=0, max_iter=20)),
    (jaxdml.SCML_Supervised, dict(random_state=0, max_iter=100)),
]


@pytest.mark.parametrize("cls,kw", POINT_LEARNERS, ids=[c.__name__ for c, _ in POINT_LEARNERS])
@pytest.mark.parametrize("kind", ["array", "callable"])
def test_preprocessor_on_points_equals_the_points(iris, cls, kw, kind):
    X, y = iris
    rng = np.random.RandomState(0)
    perm = rng.permutation(len(X))  # the indices need not be in order, nor the data
    y_fit = None if cls is jaxdml.Covariance else y[perm]
    pre = X if kind == "array" else (lambda idx: X[idx])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = cls(**kw).fit(X[perm], y_fit)
        got = cls(preprocessor=pre, **kw).fit(perm, y_fit)
    np.testing.assert_array_equal(got.components_, ref.components_)
    q = np.array([3, 0, 149, 3])
    np.testing.assert_array_equal(got.transform(q), ref.transform(X[q]))
    np.testing.assert_array_equal(got.transform(X[q]), ref.transform(X[q]))  # 2-D input stays points
    pairs = np.array([[0, 1], [5, 140]])
    np.testing.assert_allclose(got.pair_distance(pairs), ref.pair_distance(X[pairs]), rtol=1e-12)


def test_mlkr_and_rca_chunks_take_the_preprocessor():
    X, t = make_regression(60, 5, random_state=0)
    idx = np.arange(60)[::-1]
    a = jaxdml.MLKR(max_iter=10, random_state=0).fit(X[idx], t[idx])
    b = jaxdml.MLKR(max_iter=10, random_state=0, preprocessor=X).fit(idx, t[idx])
    np.testing.assert_array_equal(a.components_, b.components_)
    Xi, _ = load_iris(return_X_y=True)
    chunks = np.repeat(np.arange(30), 5)
    a = jaxdml.RCA().fit(Xi, chunk_labels=chunks)
    b = jaxdml.RCA(preprocessor=lambda i: Xi[i]).fit(np.arange(150), chunk_labels=chunks)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_callable_preprocessor_takes_any_identifiers(iris):
    # metric-learn's preprocessor page: a callable maps identifiers (file names, keys) to points
    X, y = iris
    names = np.array([f"img{i:03d}.png" for i in range(150)])
    load = {n: x for n, x in zip(names, X)}

    def loader(keys):
        return np.stack([load[k] for k in keys])

    a = jaxdml.NCA(max_iter=10).fit(X, y)
    b = jaxdml.NCA(max_iter=10, preprocessor=loader).fit(names, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(b.transform(names[:3]), a.transform(X[:3]))
    pairs = np.array([[names[0], names[1]], [names[2], names[100]], [names[51], names[52]], [names[3], names[120]]])
    c = jaxdml.ITML(preprocessor=loader, random_state=0).fit(pairs, [1, -1, 1, -1])
    d = jaxdml.ITML(random_state=0).fit(np.stack([[load[k] for k in row] for row in pairs]), [1, -1, 1, -1])
    np.testing.assert_allclose(c.metric_, d.metric_, rtol=1e-12)
    np.testing.assert_allclose(c.pair_distance(pairs[:2]), d.pair_distance(X[[[0, 1], [2, 100]]]), rtol=1e-12)
    with pytest.raises(ValueError, match="integer row indices"):  # an array preprocessor takes indices only
        jaxdml.NCA(preprocessor=X).fit(names, y)


@pytest.mark.parametrize("bad,match", [
    (np.array([0.5, 1.5, 2.0]), "integer row indices"),
    (np.array([0, 1, 150]), r"indices must lie in \[0, 149\]"),
    (np.array([-1, 0, 1]), r"indices must lie in \[0, 149\]"),
    (np.array(["a", "b", "c"]), "integer row indices"),
    (np.array([], dtype=int), "no sample indices"),
])
def test_preprocessor_indices_are_checked(iris, bad, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        jaxdml.NCA(preprocessor=X).fit(bad, y[: len(bad)])
    with pytest.raises(ValueError, match=match):
        jaxdml.Covariance(preprocessor=X).fit(np.arange(150)).transform(bad)


def test_preprocessor_callable_failures_and_types(iris):
    X, y = iris
    with pytest.raises(ValueError, match="the preprocessor failed"):
        jaxdml.NCA(preprocessor=lambda i: 1 / 0).fit(np.arange(150), y)
    with pytest.raises(ValueError, match="one row per index"):
        jaxdml.NCA(preprocessor=lambda i: X[:3]).fit(np.arange(150), y)
    with pytest.raises(ValueError, match="'preprocessor' parameter of NCA"):
        jaxdml.NCA(preprocessor=3).fit(np.arange(150), y)


# --------------------------------------------------------------------------- LMNN's parameters
def test_lmnn_regularization_is_the_pull_weight(iris):
    X, y = iris
    # metric-learn's objective is reg * pull + (1 - reg) * push; jaxdml's (1 - mu) pull + mu push
    a = jaxdml.LMNN(regularization=0.3, max_iter=20).fit(X, y)
    b = jaxdml.LMNN(mu=0.7, max_iter=20).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    c = jaxdml.LMNN(convergence_tol=1e-3, max_iter=20).fit(X, y)
    d = jaxdml.LMNN(tol=1e-3, max_iter=20).fit(X, y)
    np.testing.assert_array_equal(c.components_, d.components_)


def test_metric_learn_lmnn_example_runs(iris):
    X, y = iris
    lmnn = jaxdml.LMNN(n_neighbors=5, learn_rate=1e-6, min_iter=50, max_iter=1000, convergence_tol=1e-3,
                       regularization=0.5).fit(X, y)
    ref = jaxdml.LMNN(n_neighbors=5, tol=1e-3).fit(X, y)  # learn_rate and min_iter: not used by L-BFGS
    np.testing.assert_array_equal(lmnn.components_, ref.components_)
    assert lmnn.get_params()["learn_rate"] == 1e-6  # kept for clone/get_params, as scikit-learn requires


@pytest.mark.parametrize("kw,match", [
    (dict(regularization=1.0), "'regularization' parameter of LMNN"),
    (dict(regularization=-0.1), "'regularization' parameter of LMNN"),
    (dict(learn_rate=0.0), "'learn_rate' parameter of LMNN"),
    (dict(min_iter=-1), "'min_iter' parameter of LMNN"),
    (dict(convergence_tol=-1.0), "'convergence_tol' parameter of LMNN"),
    (dict(regularization=0.4, mu=0.2), "give mu .* or regularization"),
    (dict(convergence_tol=1e-3, tol=1e-4), "give tol or convergence_tol"),
])
def test_lmnn_metric_learn_parameters_are_checked(iris, kw, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        jaxdml.LMNN(**kw).fit(X, y)


def test_score_pairs_is_pair_distance_with_a_deprecation_warning(iris):
    X, y = iris
    est = jaxdml.NCA(max_iter=10).fit(X, y)
    pairs = np.stack([X[:10], X[10:20]], axis=1)
    with pytest.warns(FutureWarning, match="score_pairs will be deprecated") as caught:
        got = est.score_pairs(pairs)
    np.testing.assert_array_equal(got, est.pair_distance(pairs))
    assert caught[0].filename == __file__  # attributed to the caller
    d = est.get_metric()
    assert d(X[:1], X[1:2]) == pytest.approx(est.pair_distance(np.stack([X[:1], X[1:2]], 1))[0])
    with pytest.raises(ValueError, match="two 1-D points"):
        d(X[:2], X[2:4])


# --------------------------------------------------------------------------- tuple classifiers
def test_tuple_learners_are_classifiers_and_the_supervised_names_are_not():
    for est in (jaxdml.ITML(), jaxdml.MMC(), jaxdml.SDML(), jaxdml.LSML(), jaxdml.SCML(), jaxdml.LSI(),
                jaxdml.DMLEig(), jaxdml.LDML()):
        assert is_classifier(est), type(est).__name__
    for est in (jaxdml.ITML_Supervised(), jaxdml.MMC_Supervised(), jaxdml.NCA(), jaxdml.LMNN()):
        assert not is_classifier(est), type(est).__name__


def test_cross_val_score_splits_pairs_by_stratified_folds(iris):
    X, y = iris
    rng = np.random.RandomState(0)
    idx = rng.randint(0, 150, size=(60, 2))
    yp = np.where(y[idx[:, 0]] == y[idx[:, 1]], 1, -1)
    pairs = X[idx]
    seen = []

    class Spy(jaxdml.ITML):
        def fit(self, X, y=None, **kw):
            seen.append(np.sort(np.asarray(y)))
            return super().fit(X, y, **kw)

    scores = cross_val_score(Spy(random_state=0), pairs, yp, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    expected = [np.sort(yp[train]) for train, _ in StratifiedKFold(3).split(pairs, yp)]
    assert len(seen) == 3
    for got, want in zip(seen, expected):
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- prior="random"
@pytest.mark.parametrize("cls,kw", [(jaxdml.ITML_Supervised, {}), (jaxdml.SDML_Supervised, dict(balance_param=5e-5)),
                                    (jaxdml.LSML_Supervised, dict(max_iter=20)), (jaxdml.ITML, {})],
                         ids=["ITML_Supervised", "SDML_Supervised", "LSML_Supervised", "ITML"])
def test_random_prior_is_seeded_and_positive_definite(iris, cls, kw):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = cls(prior="random", random_state=1, **kw).fit(X, y)
        b = cls(prior="random", random_state=1, **kw).fit(X, y)
        c = cls(prior="random", random_state=2, **kw).fit(X, y)
    P = a.result_.info["prior"]
    np.testing.assert_array_equal(P, b.result_.info["prior"])
    np.testing.assert_array_equal(a.metric_, b.metric_)
    assert not np.allclose(P, c.result_.info["prior"])
    np.testing.assert_allclose(P, P.T, atol=0)
    w = np.linalg.eigvalsh(P)
    assert w.min() >= 1 - 1e-12 and w.max() <= 2 + 1e-12  # eigenvalues uniform in [1, 2]
    assert not np.allclose(P, np.diag(np.diag(P)))  # a random rotation, not a diagonal


def test_random_prior_reaches_itml_on_every_pair(iris):
    X, y = iris
    a = jaxdml.ITML(prior="random", random_state=1, n_constraints="all").fit(X, y)
    b = jaxdml.ITML(prior="random", random_state=3, n_constraints="all").fit(X, y)
    assert not np.allclose(a.result_.info["prior"], b.result_.info["prior"])


# --------------------------------------------------------------------------- MMC: init, diagonal form
def _walkthrough():
    """The data of metric-learn's walkthrough (unevenly scaled features)."""
    rng = np.random.RandomState(42)
    return make_classification(n_samples=100, n_classes=3, n_clusters_per_class=2, n_informative=3, class_sep=4.,
                               n_features=5, n_redundant=0, shuffle=True, scale=[1, 1, 20, 20, 20],
                               random_state=rng)


def _pairwise(Z):
    return np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))


@pytest.mark.parametrize("cls", [jaxdml.MMC_Supervised, jaxdml.LSI])
def test_default_ridge_makes_the_neighbours_independent_of_units(cls):
    X, y = _walkthrough()
    D = np.array([3.0, 0.1, 1.0, 7.0, 0.02])
    a = cls(random_state=0).fit(X, y)
    b = cls(random_state=0).fit(X * D, y)
    assert a.converged_ and b.converged_
    # M' = D^-1 M D^-1 exactly for a scale-free problem: the embedded distances agree (to the gap)
    np.testing.assert_allclose(_pairwise(b.transform(X * D)), _pairwise(a.transform(X)), rtol=2e-3,
                               atol=2e-3 * _pairwise(a.transform(X)).max())
    iso_a = cls(random_state=0, ridge="isotropic").fit(X, y)
    iso_b = cls(random_state=0, ridge="isotropic").fit(X * D, y)
    assert not np.allclose(_pairwise(iso_b.transform(X * D)), _pairwise(iso_a.transform(X)), rtol=0.05)


def test_mmc_on_unevenly_scaled_features_keeps_xings_objective_low():
    X, y = _walkthrough()
    i, j = np.triu_indices(len(X), 1)
    same = y[i] == y[j]

    def xing(M):  # sum_S d^2 / (sum_D d)^2: Xing et al.'s objective, invariant to the scale of M
        Dv = X[i] - X[j]
        d2 = np.einsum("ij,jk,ik->i", Dv, M, Dv)
        return d2[same].sum() / np.sqrt(np.maximum(d2[~same], 0)).sum() ** 2

    mmc = jaxdml.MMC_Supervised().fit(X, y)
    exact = jaxdml.MMC_Supervised(reg=0).fit(X, y)  # the paper's problem: the smallest value there is
    assert xing(exact.metric_) <= xing(mmc.metric_) < 0.3 * xing(np.eye(5))
    assert np.linalg.matrix_rank(mmc.metric_, tol=1e-8 * np.abs(mmc.metric_).max()) == 5  # no collapse


def test_mmc_init_changes_the_start_not_the_optimum(iris):
    X, y = iris
    ref = jaxdml.MMC_Supervised().fit(X, y)
    for init in ("random", "covariance", np.diag([1.0, 2.0, 3.0, 4.0])):
        got = jaxdml.MMC_Supervised(init=init, random_state=3).fit(X, y)
        assert got.converged_
        # the certified gap is 1e-5 of the objective: the metrics agree to that order
        np.testing.assert_allclose(got.metric_, ref.metric_, rtol=0, atol=5e-3 * np.abs(ref.metric_).max())
    with pytest.raises(ValueError, match="positive definite"):
        jaxdml.MMC_Supervised(init=np.zeros((4, 4))).fit(X, y)
    with pytest.raises(ValueError, match="'init' parameter of MMC_Supervised"):
        jaxdml.MMC_Supervised(init="pca").fit(X, y)


def _diagonal_problem(X, y):
    i, j = np.triu_indices(len(X), 1)
    d2 = (X[i] - X[j]) ** 2
    same = y[i] == y[j]
    return d2[same].sum(axis=0), d2[~same]


def _reference_diagonal(s, D2, c):
    """The same objective minimised by an independent optimiser: L-BFGS-B over w = exp(u) (inside the
    orthant, where the objective is smooth), from several starts; the best value."""
    def f(u):
        w = np.exp(u)
        dist = np.sqrt(D2 @ w)
        val = s @ w - c * np.log(dist.sum())
        grad = w * (s - c * (D2.T @ (0.5 / np.maximum(dist, 1e-300))) / dist.sum())
        return val, grad

    best = np.inf
    for seed in range(4):
        u0 = np.log(np.random.RandomState(seed).uniform(0.5, 2.0, s.size) / s)
        r = minimize(f, u0, jac=True, method="L-BFGS-B", options=dict(maxiter=5000, ftol=1e-15, gtol=1e-12))
        best = min(best, r.fun)
    return best


@pytest.mark.parametrize("data", ["iris", "walkthrough"])
def test_mmc_diagonal_reaches_the_optimum_of_xings_diagonal_problem(iris, data):
    X, y = iris if data == "iris" else _walkthrough()
    s, D2 = _diagonal_problem(X, y)
    st = x64_call(mmc_diagonal_solve, np.ones(X.shape[1]), s, D2, np.ones(len(D2)), 1.0, max_iter=2000, tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = _reference_diagonal(s, D2, 1.0)
    got = float(x64_call(mmc_diagonal_objective, st.w, s, D2, np.ones(len(D2)), 1.0))
    assert bool(st.converged)
    assert got <= ref + 1e-6 * abs(ref)
    # the estimator runs the same problem (all pairs of these small sets) and returns diag(w)
    est = jaxdml.MMC_Supervised(diagonal=True, tol=1e-8).fit(X, y)
    M = est.get_mahalanobis_matrix()
    np.testing.assert_array_equal(M, np.diag(np.diag(M)))
    val = float(x64_call(mmc_diagonal_objective, np.diag(M), s, D2, np.ones(len(D2)), 1.0))
    assert val <= ref + 1e-6 * abs(ref)


def test_mmc_diagonal_c_only_scales_the_weights(iris):
    X, y = iris
    a = jaxdml.MMC_Supervised(diagonal=True, tol=1e-9).fit(X, y)
    b = jaxdml.MMC_Supervised(diagonal=True, diagonal_c=3.0, tol=1e-9).fit(X, y)
    np.testing.assert_allclose(np.diag(b.metric_), 3.0 * np.diag(a.metric_), rtol=1e-4, atol=1e-9 * a.metric_.max())


def test_mmc_diagonal_refuses_an_unbounded_problem():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 5.0], [1.0, 5.0]])
    y = np.array([0, 0, 1, 1])  # no similar pair differs along feature 1; dissimilar ones do
    with pytest.raises(ValueError, match="unbounded"):
        jaxdml.MMC_Supervised(diagonal=True).fit(X, y)


@pytest.mark.parametrize("kw,match", [(dict(diagonal_c=0.0), "'diagonal_c'"), (dict(diagonal="yes"), "'diagonal'")])
def test_mmc_diagonal_parameters_are_checked(iris, kw, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        jaxdml.MMC_Supervised(**kw).fit(X, y)


# --------------------------------------------------------------------------- SCML
def test_scml_warns_when_bases_are_fewer_than_classes(iris):
    X, y = iris
    with pytest.warns(UserWarning, match="less than the number of classes"):
        jaxdml.SCML_Supervised(n_basis=2, random_state=0, max_iter=50).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jaxdml.SCML_Supervised(n_basis=3, random_state=0, max_iter=50).fit(X, y)
    assert not [w for w in caught if "number of classes" in str(w.message)]


# --------------------------------------------------------------------------- NCA's default keeps the rank
@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("load", [load_iris, "wine"])
def test_nca_default_keeps_the_rank_that_the_unpenalised_objective_keeps(load, scaled):
    from sklearn.datasets import load_wine

    X, y = (load_wine if load == "wine" else load)(return_X_y=True)
    if scaled:
        X = (X - X.min(0)) / np.ptp(X, 0)

    r = np.ptp(X, axis=0)

    def rank(M):  # in range units (the penalty's): raw wine's proline spans 1400, its unit length is 1/1400^2
        w = np.linalg.eigvalsh(r[:, None] * M * r[None, :])
        return int(np.sum(w > 1e-6 * w.max()))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = jaxdml.NCA().fit(X, y).metric_
        plain = jaxdml.NCA(reg=0).fit(X, y).metric_
    assert rank(default) == X.shape[1] and rank(default) >= rank(plain)
