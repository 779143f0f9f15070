"""ITML, LSI (MMC) and DML-eig: pure pieces against naive NumPy references written from the
seed's formulas, constraint satisfaction of the solvers, weak supervision, bad input, accuracy
and the scikit-learn contract."""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import jaxdml
from jaxdml.exceptions import ConvergenceWarning
from jaxdml.losses import (
    dissimilar_scatter,
    dml_eig_objective,
    dml_eig_smoothed,
    itml_constraints,
    itml_objective,
    logdet_divergence,
    lsi_constraint,
    lsi_objective,
    pair_sq_dists,
    similar_scatter,
)
from jaxdml.solvers import itml_bregman

from ..._reference import expected_failed_checks


# --------------------------------------------------------------------------- naive references
def ref_logdet(A, B):
    """D_ld(A||B) = tr(A B^-1) - log det(A B^-1) - d (seed, LogDet divergence)."""
    C = A @ np.linalg.inv(B)
    return np.trace(C) - np.log(np.linalg.det(C)) - A.shape[0]


def ref_itml(M0, V, delta, xi0, gamma, sweeps):
    """Davis et al. (2007), Algorithm 1, in the original coordinates, with plain loops."""
    M, xi, lam = M0.copy(), xi0.copy(), np.zeros(len(V))
    gp = gamma / (gamma + 1.0)
    for _ in range(sweeps):
        for k in range(len(V)):
            v = V[k]
            p = v @ M @ v
            alpha = min(lam[k], gp * delta[k] * (1.0 / p - 1.0 / xi[k]))
            beta = delta[k] * alpha / (1.0 - delta[k] * alpha * p)
            xi[k] = gamma * xi[k] / (gamma + delta[k] * alpha * xi[k])
            lam[k] -= alpha
            M = M + beta * M @ np.outer(v, v) @ M
    return M, xi, lam


def ref_pairs(y):
    """All pairs i < j split into similar S and dissimilar D (explicit lists)."""
    n = len(y)
    S = [(i, j) for i in range(n) for j in range(i + 1, n) if y[i] == y[j]]
    D = [(i, j) for i in range(n) for j in range(i + 1, n) if y[i] != y[j]]
    return S, D


def ref_sq(M, X, i, j):
    d = X[i] - X[j]
    return d @ M @ d


def ref_lsi(M, X, y):
    """(sum_D d_M, sum_S d_M^2) over all pairs."""
    S, D = ref_pairs(y)
    return (sum(np.sqrt(ref_sq(M, X, i, j)) for i, j in D), sum(ref_sq(M, X, i, j) for i, j in S))


def ref_dml_eig(M, X, y):
    """min_D d_M^2 (the DML-eig objective)."""
    _, D = ref_pairs(y)
    return min(ref_sq(M, X, i, j) for i, j in D)


@pytest.fixture(scope="module")
def itml_wine(wine_minmax):
    """ITML's default fit of wine, by the estimator (its ``result_`` is what ``jaxdml.fit(X, y,
    loss="itml", random_state=0)`` returns): one solve for the tests of the fit and of the estimator."""
    X, y = wine_minmax
    return jaxdml.ITML(random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def lsi_plain_wine(wine_minmax):
    """The plain LSI problem (reg=0) on wine solved to a duality gap of 1e-7 without a convergence
    warning (an error here): one solve for the tests of the plain problem and of its reporting."""
    X, y = wine_minmax
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return jaxdml.fit(X, y, loss="lsi", reg=0, tol=1e-7)


@pytest.fixture
def small(rng):
    X = rng.normal(size=(14, 3))
    y = np.repeat([0, 1, 2], [5, 5, 4])
    return X, y


# --------------------------------------------------------------------------- ITML pieces
def test_logdet_divergence_matches_reference(rng, x64):
    A = rng.normal(size=(4, 4)); A = A @ A.T + np.eye(4)
    B = rng.normal(size=(4, 4)); B = B @ B.T + 0.5 * np.eye(4)
    np.testing.assert_allclose(float(logdet_divergence(A, B)), ref_logdet(A, B), rtol=1e-10)
    assert float(logdet_divergence(B, B)) == pytest.approx(0.0, abs=1e-10)
    assert np.isinf(float(logdet_divergence(-A, B)))


def test_itml_bregman_matches_naive_algorithm(rng, x64):
    d, c = 4, 12
    X = rng.normal(size=(10, d))
    a, b = rng.integers(0, 10, c), (rng.integers(1, 10, c) + np.arange(c)) % 10
    keep = a != b
    V = (X[a] - X[b])[keep]
    delta = np.where(rng.random(V.shape[0]) < 0.5, 1.0, -1.0)
    xi0 = np.where(delta > 0, 0.5, 8.0)
    M0 = rng.normal(size=(d, d)); M0 = M0 @ M0.T / d + np.eye(d)
    for gamma in (1.0, 10.0):
        st = itml_bregman(M0, V, delta, xi0, gamma, 0.0, max_iter=4)
        M, xi, lam = ref_itml(M0, V, delta, xi0, gamma, 4)
        assert int(st.n_iter) == 4
        np.testing.assert_allclose(np.asarray(st.M), M, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(np.asarray(st.xi), xi, rtol=1e-8)
        np.testing.assert_allclose(np.asarray(st.lam), lam, rtol=1e-8, atol=1e-12)
        # the objective tracked through the rank-one updates equals the exact one
        exact = float(jax.jit(itml_objective)(st.M, M0, st.xi, xi0, gamma=gamma))  # gamma traced: one program
        np.testing.assert_allclose(float(st.history[3]), exact, rtol=1e-8)
        # padding rows (delta = 0) change nothing
        st2 = itml_bregman(M0, np.vstack([V, np.ones((3, d))]), np.r_[delta, np.zeros(3)],
                           np.r_[xi0, np.ones(3)], gamma, 0.0, max_iter=4)
        np.testing.assert_allclose(np.asarray(st2.M), np.asarray(st.M), rtol=1e-10)


def test_itml_hard_constraints_without_slack(x64):
    """gamma = inf enforces every constraint exactly (a feasible problem)."""
    rng = np.random.default_rng(3)
    V = rng.normal(size=(6, 3))
    delta = np.array([1, 1, 1, -1, -1, -1.0])
    p0 = np.sum(V * V, axis=1)
    xi0 = np.where(delta > 0, 0.8 * p0, 1.2 * p0)  # 20 % tighter than the Euclidean distances
    st = itml_bregman(np.eye(3), V, delta, xi0, jnp.inf, 1e-12, max_iter=5000)
    assert bool(st.converged)
    viol = np.asarray(itml_constraints(st.M, V, delta, xi0))
    assert np.all(viol <= 1e-8 * xi0)
    np.testing.assert_allclose(np.asarray(st.xi), xi0)  # no slack moves


def test_itml_fit_satisfies_slack_constraints_on_wine(wine_minmax, itml_wine):
    """Driven to a tight tolerance (the default stops at a relative dual change of 1e-3, where a
    quarter of the constraints still miss their slack bound by 0.1-5 %), the Bregman projections
    satisfy every slack-relaxed constraint; the default run uses the same pairs and bounds."""
    X, y = wine_minmax
    m = jaxdml.ITML(random_state=0, tol=1e-5).fit(X, y).result_
    assert np.array_equal(m.info["pairs"], itml_wine.result_.info["pairs"])
    assert m.info["bounds"] == itml_wine.result_.info["bounds"] and m.n_iter > itml_wine.result_.n_iter
    u, l = m.info["bounds"]
    from scipy.spatial.distance import pdist

    np.testing.assert_allclose([u, l], np.percentile(pdist(X, "sqeuclidean"), [5, 95]))
    P, s, xi = m.info["pairs"], m.info["labels"], m.info["slack_bounds"]  # s: +1/-1
    assert len(P) == 2 * 20 * 3**2 and np.all((y[P[:, 0]] == y[P[:, 1]]) == (s == 1))
    np.testing.assert_array_equal(m.info["similar"], (s == 1).astype(float))  # the 0/1 view
    V = X[P[:, 0]] - X[P[:, 1]]
    p = np.einsum("ci,ij,cj->c", V, m.M, V)
    rel = s * (p - xi) / xi
    assert np.mean(rel <= 1e-3) >= 0.95
    assert np.linalg.eigvalsh(m.M).min() > 0  # positive definite
    # slack only relaxes: similar bounds grow, dissimilar bounds shrink
    assert np.all(xi[s == 1] >= u * (1 - 1e-12)) and np.all(xi[s == -1] <= l * (1 + 1e-12))
    assert m.n_iter >= 1 and m.loss_history.size == m.n_iter


def test_itml_priors(wine_scaled):
    X, y = wine_scaled
    cov = jaxdml.fit(X, y, loss="itml", prior="covariance", random_state=0, max_iter=5)
    M0 = np.linalg.inv(np.cov(X, rowvar=False))
    np.testing.assert_allclose(cov.info["prior"], M0, rtol=1e-6)
    user = jaxdml.fit(X, y, loss="itml", prior=2 * np.eye(13), bounds=(0.1, 2.0), max_iter=5, random_state=0)
    assert user.info["bounds"] == (0.1, 2.0)


# --------------------------------------------------------------------------- LSI / DML-eig pieces
#: the smoothing parameters of the soft minimum checked below
MUS = (1.0, 0.1, 1e-3)


@jax.jit
def _pair_quantities(M, prob):
    """Every pair quantity of one problem from one compiled program (evaluated op by op, each of the
    functions would compile every primitive separately, once per problem type)."""
    return dict(obj=lsi_objective(M, prob), con=lsi_constraint(M, prob), XS=similar_scatter(prob),
                dmin=dml_eig_objective(M, prob), d2=pair_sq_dists(M, prob),
                smooth=jnp.stack([dml_eig_smoothed(M, prob, mu=mu) for mu in MUS]),
                grad=jax.grad(lsi_objective)(M, prob))


def test_pair_functions_match_reference(small, x64):
    X, y = small
    rng = np.random.default_rng(1)
    M = rng.normal(size=(3, 3)); M = M @ M.T
    prob = jaxdml.make_problem(X, y, n_neighbors=None, pad_to=20)  # padding must not count
    S, D = ref_pairs(y)
    obj, con = ref_lsi(M, X, y)
    hard = ref_dml_eig(M, X, y)
    XS = sum(np.outer(X[i] - X[j], X[i] - X[j]) for i, j in S)
    # the gradient of the LSI objective is sum_D O_ij / (2 d_ij)  (jax.grad, checked by the seed's formula)
    G_ref = sum(np.outer(X[i] - X[j], X[i] - X[j]) / (2 * np.sqrt(ref_sq(M, X, i, j))) for i, j in D)
    # the same quantities from labels (all pairs) and from explicit pairs
    pairs = np.array(S + D)
    sim = np.r_[np.ones(len(S)), np.zeros(len(D))]
    pp = jaxdml.make_pairs_problem(X, pairs, sim, pad_to=len(pairs) + 7)
    for p in (prob, pp):
        q = {k: np.asarray(v) for k, v in _pair_quantities(jnp.asarray(M), p).items()}
        np.testing.assert_allclose(float(q["obj"]), obj, rtol=1e-10)
        np.testing.assert_allclose(float(q["con"]), con, rtol=1e-10)
        np.testing.assert_allclose(q["XS"], XS, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(float(q["dmin"]), hard, rtol=1e-10)
        # smoothed min: min <= f_mu <= min + mu log|D|, and -> min as mu -> 0
        for mu, f in zip(MUS, q["smooth"]):
            assert hard - 1e-9 <= f <= hard + mu * np.log(len(D)) + 1e-9
        np.testing.assert_allclose(0.5 * (q["grad"] + q["grad"].T), G_ref, rtol=1e-8)
        if p is pp:
            np.testing.assert_allclose(q["d2"][: len(pairs)], [ref_sq(M, X, i, j) for i, j in pairs], rtol=1e-9)
        else:
            np.testing.assert_allclose(q["d2"][:14, :14], [[ref_sq(M, X, i, j) for j in range(14)]
                                                           for i in range(14)], rtol=1e-9, atol=1e-12)


def test_lsi_feasible_and_better_than_identity(wine_minmax, lsi_plain_wine):
    X, y = wine_minmax
    m = jaxdml.fit(X, y, loss="lsi")
    obj, con = ref_lsi(m.M, X, y)
    assert con <= 1 + 1e-6
    w = np.linalg.eigvalsh(m.M)
    assert w.min() >= -1e-6 * w.max()
    XS = m.info["similar_scatter"]
    I = np.eye(13) / np.trace(XS)  # identity scaled onto the constraint
    obj_I, con_I = ref_lsi(I, X, y)
    assert con_I == pytest.approx(1.0)
    assert obj > 1.5 * obj_I
    # the default (reg=0.1) is full rank and certified converged; the plain problem (reg=0) has a
    # larger objective, the constraint active, and collapses to low rank
    assert m.converged and m.info["duality_gap"] <= 1e-5 * obj and w.min() > 1e-6 * w.max()
    plain = lsi_plain_wine  # reg=0, solved to a gap of 1e-7 (the default tolerance: 1e-5)
    obj_plain, con_plain = ref_lsi(plain.M, X, y)
    assert plain.converged and con_plain == pytest.approx(1.0, abs=1e-6) and obj_plain >= obj
    wp = np.linalg.eigvalsh(plain.M)
    assert np.sum(wp > 1e-3 * wp.max()) <= 3
    assert plain.loss == pytest.approx(obj_plain, rel=1e-8)


def _slsqp_lsi(X, y, A, mu=0.0, M0=None):
    """Independent reference: SLSQP on M = L^T L (scipy), objective sum_D |L z| (+ mu f0 log det M, f0 the
    objective at ``M0``, default the identity, scaled onto the constraint) under <A, L^T L> <= 1, best of
    a few starts. Returns the optimal value."""
    from scipy.optimize import minimize
    S, D = ref_pairs(y)
    Z = np.array([X[i] - X[j] for i, j in D])
    d = X.shape[1]
    M0 = np.eye(d) if M0 is None else M0
    f0 = np.sum(np.sqrt(np.einsum("ij,jk,ik->i", Z, M0, Z) / np.sum(A * M0)))
    c = mu * f0

    def obj(v):
        L = v.reshape(d, d)
        r = np.sqrt(np.maximum(np.sum((Z @ L.T) ** 2, axis=1), 1e-300))
        g = L @ (Z.T / r) @ Z
        sign, logabs = np.linalg.slogdet(L)
        val = r.sum() + (2 * c * logabs if c else 0.0)
        if c:
            g = g + 2 * c * np.linalg.inv(L).T
        return -val, -g.ravel()

    cons = dict(type="ineq", fun=lambda v: 1 - np.sum(v.reshape(d, d).T @ v.reshape(d, d) * A),
                jac=lambda v: -(2 * v.reshape(d, d) @ A).ravel())
    best = -np.inf
    for seed in range(3):
        L0 = np.eye(d) + 0.1 * seed * np.random.default_rng(seed).normal(size=(d, d))
        L0 /= np.sqrt(np.sum(L0.T @ L0 * A))
        r = minimize(obj, L0.ravel(), jac=True, method="SLSQP", constraints=[cons],
                     options=dict(maxiter=3000, ftol=1e-15))
        L = r.x.reshape(d, d)
        if np.sum(L.T @ L * A) <= 1 + 1e-9:
            best = max(best, -obj(r.x)[0])
    return best, c


def test_lsi_reaches_the_optimum_of_an_independent_optimiser(x64):
    """The solver's objective equals SLSQP's optimum (to 1e-6, far inside 0.5 %), for the plain
    problem (with converged=True) and for the regularised default problem."""
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    X, y = X[::3], y[::3]  # 50 samples, 4 features
    XS = sum(np.outer(X[i] - X[j], X[i] - X[j]) for i, j in ref_pairs(y)[0])
    # (the default budget, as the regularised fit below: one compiled solver for both; converged is asserted)
    plain = jaxdml.fit(X, y, loss="lsi", reg=0, tol=1e-9)
    ref, _ = _slsqp_lsi(X, y, XS)
    ours, con = ref_lsi(plain.M, X, y)
    assert plain.converged and con <= 1 + 1e-9
    assert ours == pytest.approx(ref, rel=1e-6)
    assert ours >= ref * (1 - 1e-9)  # never below the reference
    reg = 0.1
    from jaxdml.methods.weak._lsi import LSI_LOGDET_PER_REG
    for ridge in ("diagonal", "isotropic"):  # the default: reg diag(X_S), the log-det scale at its inverse
        if ridge == "diagonal":
            A = XS + reg * np.diag(np.diag(XS))
            M0 = np.diag(1.0 / np.diag(A))
        else:
            A, M0 = XS + reg * np.trace(XS) / 4 * np.eye(4), None
        m = jaxdml.fit(X, y, loss="lsi", reg=reg, ridge=ridge, tol=1e-7)
        ref, c = _slsqp_lsi(X, y, A, mu=reg * LSI_LOGDET_PER_REG, M0=M0)
        value = ref_lsi(m.M, X, y)[0] + c * np.linalg.slogdet(m.M)[1]
        assert m.converged and value == pytest.approx(ref, rel=1e-6, abs=1e-6 * abs(ref)), ridge


def test_lsi_reports_convergence_honestly(wine_minmax, lsi_plain_wine):
    X, y = wine_minmax
    with pytest.warns(ConvergenceWarning):
        m = jaxdml.fit(X, y, loss="lsi", reg=0, max_iter=3)
    assert not m.converged and m.n_iter == 3
    assert m.info["duality_gap"] > 1e-5 * m.loss
    m = lsi_plain_wine  # tol=1e-7, fitted with a ConvergenceWarning raised as an error
    assert m.converged and m.info["duality_gap"] <= 1e-7 * m.loss


def test_lsi_plain_problem_unbounded_is_an_error():
    # the last feature is constant within each class but differs between them: X_S is singular there and
    # the plain problem is unbounded (the ridge of reg > 0 bounds it)
    # (42 rows, 4 features and 3 classes: the padded shapes of the iris subset above, whose compiled
    # solver the regularised fit reuses)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 14)
    X = np.c_[rng.normal(size=(42, 3)), y.astype(float)]
    with pytest.raises(ValueError, match="unbounded"):
        jaxdml.fit(X, y, loss="lsi", reg=0)
    assert jaxdml.fit(X, y, loss="lsi").converged


def test_dissimilar_scatter_matches_reference(small, x64):
    X, y = small
    _, D = ref_pairs(y)
    XD = sum(np.outer(X[i] - X[j], X[i] - X[j]) for i, j in D)
    prob = jaxdml.make_problem(X, y, n_neighbors=None, pad_to=20)
    np.testing.assert_allclose(np.asarray(jax.jit(dissimilar_scatter)(prob)), XD, rtol=1e-10, atol=1e-10)


def test_dml_eig_better_than_identity(wine_scaled):
    X, y = wine_scaled
    m = jaxdml.fit(X, y, loss="dml_eig", max_iter=60)
    _, con = ref_lsi(m.M, X, y)
    assert con == pytest.approx(1.0, rel=1e-8)
    XS = sum(np.outer(X[i] - X[j], X[i] - X[j]) for i, j in ref_pairs(y)[0])
    I = np.eye(13) / np.trace(XS)
    assert ref_dml_eig(m.M, X, y) >= ref_dml_eig(I, X, y)
    S = m.info["spectrahedron"]
    assert np.trace(S) == pytest.approx(1.0, rel=1e-5) and np.linalg.eigvalsh(S).min() >= -1e-9
    h = m.loss_history
    assert h.size == m.n_iter + 1 and np.all(np.diff(h) >= -1e-5 * np.abs(h[1:]))  # line search: ascent


# --------------------------------------------------------------------------- weak supervision
@pytest.mark.parametrize("loss", ["itml", "lsi", "dml_eig"])
def test_fit_from_pairs(loss, wine_scaled):
    X, y = wine_scaled
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(X), 300), rng.integers(0, len(X), 300)
    keep = a != b
    pairs = np.stack([a[keep], b[keep]], axis=1)
    sim = (y[pairs[:, 0]] == y[pairs[:, 1]]).astype(float)
    m = jaxdml.fit(X, None, loss=loss, pairs=pairs, similar=sim, max_iter=30, random_state=0)
    assert m.M.shape == (13, 13) and np.all(np.isfinite(m.M))
    est = {"itml": jaxdml.ITML, "lsi": jaxdml.LSI, "dml_eig": jaxdml.DMLEig}[loss](max_iter=30, random_state=0)
    est.fit(X, pairs=pairs, similar=sim)
    np.testing.assert_allclose(est.metric_, m.M, rtol=1e-6, atol=1e-12)
    # the learned metric separates the given pairs better than the Euclidean distance
    d2 = m.pair_distance(X[pairs[:, 0]], X[pairs[:, 1]], squared=True)
    e2 = np.sum((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2, axis=1)
    ratio = lambda d: d[sim == 0].mean() / d[sim == 1].mean()  # noqa: E731
    assert ratio(d2) > ratio(e2)
    with pytest.raises(ValueError, match=re.escape("pair indices must lie in [0, 177]")):
        jaxdml.fit(X, None, loss=loss, pairs=np.array([[0, 1], [2, 178]]), similar=[1, 0])
    with pytest.raises(ValueError, match="either labels y or pairs"):
        jaxdml.fit(X, y, loss=loss, pairs=pairs, similar=sim)
    with pytest.raises(ValueError, match="pairs and similar must be given together"):
        jaxdml.fit(X, None, loss=loss, pairs=pairs)
    with pytest.raises(ValueError, match="needs class labels y"):
        jaxdml.fit(X, None, loss=loss)


def test_pairs_of_one_kind_rejected(wine_scaled):
    X, _ = wine_scaled
    with pytest.raises(ValueError, match="both similar and dissimilar pairs; got 2 similar and 0"):
        jaxdml.fit(X, None, loss="lsi", pairs=np.array([[0, 1], [2, 3]]), similar=[1, 1])
    with pytest.raises(ValueError, match=r"pair labels similar must be \+1/-1 or 1/0.*found \[2\.0\]"):
        jaxdml.fit(X, None, loss="itml", pairs=np.array([[0, 1], [2, 3]]), similar=[1, 2])


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("loss", ["itml", "lsi", "dml_eig"])
def test_single_class_rejected(loss, wine_scaled):
    X, _ = wine_scaled
    with pytest.raises(ValueError, match="1 class"):
        jaxdml.fit(X, np.zeros(len(X)), loss=loss)
    est = {"itml": jaxdml.ITML, "lsi": jaxdml.LSI, "dml_eig": jaxdml.DMLEig}[loss]()
    with pytest.raises(ValueError, match="1 class"):
        est.fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="Unknown hyper-parameter"):
        jaxdml.fit(X, np.arange(len(X)) % 2, loss=loss, not_a_parameter=1)


def test_bad_hyper_parameters(wine_scaled):
    X, y = wine_scaled
    for est, msg in [
        (jaxdml.ITML(gamma=0), "'gamma' parameter of ITML"),
        (jaxdml.ITML(gamma=-1.0), "'gamma' parameter of ITML"),
        (jaxdml.ITML(prior="pca"), "'prior' parameter of ITML must be one of 'covariance', 'identity', 'random' or array-like"),
        (jaxdml.ITML(max_iter=0), "'max_iter' parameter of ITML"),
        (jaxdml.LSI(learning_rate=0), "'learning_rate' parameter of LSI"),
        (jaxdml.LSI(n_constraints=0), "'n_constraints' parameter of LSI"),
        (jaxdml.LSI(reg=-1.0), "'reg' parameter of LSI"),
        (jaxdml.DMLEig(mu=0.0), "'mu' parameter of DMLEig"),
        (jaxdml.DMLEig(tol=-1), "'tol' parameter of DMLEig"),
    ]:
        with pytest.raises(ValueError, match=re.escape(msg)):
            est.fit(X, y)
    with pytest.raises(ValueError, match="'gamma' parameter of method 'itml'"):
        jaxdml.fit(X, y, loss="itml", gamma=float("nan"))
    with pytest.raises(ValueError, match="'mu' parameter of method 'dml_eig'"):
        jaxdml.fit(X, y, loss="dml_eig", mu=-1.0)
    with pytest.raises(ValueError, match="'tol' parameter of method 'lsi'"):
        jaxdml.fit(X, y, loss="lsi", tol=-1.0)
    with pytest.raises(ValueError, match="'max_iter' parameter of method 'itml'"):
        jaxdml.fit(X, y, loss="itml", max_iter=0)
    with pytest.raises(ValueError, match="n_components=14 is out of range"):  # lower ranks: eigen-truncation
        jaxdml.fit(X, y, loss="lsi", n_components=14)


def test_bad_itml_bounds_and_priors(wine_scaled):
    X, y = wine_scaled
    with pytest.raises(ValueError, match=re.escape("similarity bound u=2 must be smaller than the dissimilarity bound l=1")):
        jaxdml.fit(X, y, loss="itml", bounds=(2.0, 1.0))
    with pytest.raises(ValueError, match=re.escape("u=1 must be smaller than the dissimilarity bound l=1")):
        jaxdml.ITML(bounds=[1.0, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match="u must be positive; got u=0"):
        jaxdml.fit(X, y, loss="itml", bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="two finite numbers"):
        jaxdml.fit(X, y, loss="itml", bounds=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="percentiles must be two numbers"):
        jaxdml.fit(X, y, loss="itml", percentiles=(95, 5))
    with pytest.raises(ValueError, match="positive definite"):
        jaxdml.fit(X, y, loss="itml", prior=np.diag(np.r_[0.0, np.ones(12)]))
    with pytest.raises(ValueError, match="must be a finite \\(13, 13\\) matrix"):
        jaxdml.fit(X, y, loss="itml", prior=np.eye(3))
    with pytest.raises(ValueError, match="no variation"):  # caught when the data are validated
        jaxdml.fit(np.ones((20, 3)), np.arange(20) % 2, loss="itml")


# --------------------------------------------------------------------------- accuracy
def _cv_knn(X, y, fit):
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    accs = []
    for tr, te in cv.split(X, y):
        sc = MinMaxScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        tf = fit(Xtr, y[tr])
        accs.append(KNeighborsClassifier(3).fit(tf(Xtr), y[tr]).score(tf(Xte), y[te]))
    return float(np.mean(accs))


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["itml", "lsi", "dml_eig"])
def test_knn_accuracy_against_euclidean(loss):
    """5-fold stratified 3-NN accuracy: never more than 3 points below Euclidean, and strictly
    better on at least one of iris, wine, breast_cancer."""
    better = []
    for load in (load_iris, load_wine, load_breast_cancer):
        X, y = load(return_X_y=True)
        eucl = _cv_knn(X, y, lambda Xtr, ytr: (lambda Z: Z))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            acc = _cv_knn(X, y, lambda Xtr, ytr: jaxdml.fit(Xtr, ytr, loss=loss, random_state=0).transform)
        assert acc >= eucl - 0.03, (load.__name__, acc, eucl)
        better.append(acc > eucl)
    assert any(better)


# --------------------------------------------------------------------------- scikit-learn contract
@parametrize_with_checks([jaxdml.ITML(max_iter=5, random_state=0)], expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.slow  # the same checks (each compiles the solver again for its data's shape)
@parametrize_with_checks([jaxdml.LSI(max_iter=5), jaxdml.DMLEig(max_iter=5)],
                         expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_slow(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_estimators_views_and_defaults(itml_wine):
    est = itml_wine
    np.testing.assert_allclose(est.metric_, est.components_.T @ est.components_, rtol=1e-8, atol=1e-12)
    u, l = est.bounds_
    assert 0 < u < l and est.converged_
    assert jaxdml.LSI().get_params()["learning_rate"] == 0.02
    assert "itml" in jaxdml.available_methods() and "dml_eig" in jaxdml.available_methods()


def test_dml_eig_line_search_never_descends():
    # phi(t) = f_mu((1 - t) a + t b) with its maximiser very close to 0: a Newton iterate inside
    # the final bracket may overshoot it; the line search must still not descend.
    from jaxdml.losses._dml_eig import smoothed_from_values
    from jaxdml.solvers._dml_eig import _line_search

    @jax.jit  # one program for the three scales (op by op, every primitive would compile)
    def search(a, b):
        dis = jnp.ones_like(a)
        t = _line_search(a, b, dis, 0.01, 12)
        return t, smoothed_from_values(a, dis, 0.01), smoothed_from_values(a + t * (b - a), dis, 0.01)

    rng = np.random.default_rng(0)
    for scale in (1e-6, 1e-4, 1e-2):
        a = rng.uniform(1.0, 2.0, size=(40,))
        b = a - rng.uniform(0.0, 1.0, size=(40,)) / scale  # moving towards b mostly shrinks values
        b[0] = a[0] + 1.0 / scale  # one direction of ascent keeps phi'(0) > 0
        t, f0, ft = search(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32))
        assert 0.0 <= float(t) <= 1.0 and float(ft) >= float(f0)


def test_dml_eig_nearest_impostor_pairs_are_the_brute_force_ones(x64):
    """Each anchor's k nearest other-class rows (all rows searched), each pair once: against a
    brute-force search; with fewer anchors, a stratified subset of them."""
    from jaxdml.methods.weak._dml_eig import nearest_impostor_pairs

    rng = np.random.RandomState(0)
    Z = rng.normal(size=(120, 3))
    y = np.arange(120) % 4
    a, b = nearest_impostor_pairs(Z, y, 3, 1000, 0)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    D[y[:, None] == y[None]] = np.inf
    nn = np.argsort(D, axis=1)[:, :3]
    want = {(min(i, j), max(i, j)) for i in range(120) for j in nn[i]}
    assert set(zip(a.tolist(), b.tolist())) == want and len(a) == len(want)
    a, b = nearest_impostor_pairs(Z, y, 2, 40, 0)
    anchors = {i for i in range(120) if any((min(i, j), max(i, j)) in set(zip(a.tolist(), b.tolist()))
                                         for j in np.argsort(D[i])[:2])}
    assert len(anchors) >= 40 and np.all(y[a] != y[b])


def test_dml_eig_above_the_dense_limit_uses_nearest_impostors(monkeypatch, wine_scaled, x64):
    """Above DENSE_PAIRS_LIMIT rows the dissimilar pairs are the nearest impostors of the whitened
    rows and X_S is exact (class scatters): the fitted metric meets sum_S d^2 = 1 over all similar
    pairs, and its hard minimum over those pairs is above the identity's (scaled alike)."""
    import jaxdml.methods.weak._dml_eig as mod

    X, y = wine_scaled
    monkeypatch.setattr(mod, "DENSE_PAIRS_LIMIT", 100)
    m = jaxdml.fit(X, y, loss="dml_eig", max_iter=60, random_state=0)
    same = (y[:, None] == y[None]) & np.triu(np.ones((len(y), len(y)), bool), 1)
    V = (X[:, None] - X[None])[same]
    np.testing.assert_allclose(np.einsum("ij,jk,ik->", V, m.M, V), 1.0, rtol=1e-8)
    a, b = mod.nearest_impostor_pairs(X, y, mod.DML_EIG_IMPOSTORS, mod.DML_EIG_ANCHORS, 0)
    I = np.eye(X.shape[1]) / np.einsum("ij,ij->", V, V)
    dmin = lambda M: np.min(np.einsum("ij,jk,ik->i", X[a] - X[b], M, X[a] - X[b]))  # noqa: E731
    assert dmin(m.M) > dmin(I)


def test_itml_default_pairs_rule():
    """min(20 K^2, max(500, 8 d^2)) pairs of each kind: 20 K^2 for few classes, the cap grows with
    d (the entries of M to pin down); a fit from labels uses that many of each kind."""
    from jaxdml.methods.weak._itml import itml_default_pairs

    assert itml_default_pairs(2, 4) == 80 and itml_default_pairs(3, 100) == 180
    assert itml_default_pairs(26, 4) == 500 and itml_default_pairs(26, 16) == 2048
    assert itml_default_pairs(10, 32) == 2000 and itml_default_pairs(40, 32) == 8192
    # above 4 096 rows at least N // 8 of each kind, at most 20 000; at or below, N plays no part
    assert itml_default_pairs(2, 8, 4096) == 80 and itml_default_pairs(2, 8, 4097) == 512
    assert itml_default_pairs(2, 8, 40_780) == 5097 and itml_default_pairs(2, 8, 10**6) == 20_000
    assert itml_default_pairs(26, 16, 9_000) == 2048
    rng = np.random.RandomState(0)
    # 30 classes of 10 rows: 1350 similar pairs to draw the 648 from (300 rows: N plays no part)
    X, y = rng.normal(size=(300, 9)), np.arange(300) % 30
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # (the data and budget of the next test: one compiled solver for both)
        m = jaxdml.fit(X, y, loss="itml", max_iter=3, random_state=0)
    s = m.info["labels"]
    assert np.sum(s == 1) == np.sum(s == -1) == 8 * 81
    np.testing.assert_array_equal(m.info["similar"], (s == 1).astype(float))


def test_itml_default_gamma_keeps_the_pairs_total_weight():
    """With the default pairs the slack weight is gamma * min(20 K^2, 500) / n_pairs: a default fit
    is exactly the fit with those pairs and that gamma given explicitly; gamma itself where the
    former rule applies (few classes), inf stays inf."""
    from jaxdml.methods.weak._itml import itml_default_gamma

    assert itml_default_gamma(1.0, 3, 180) == 1.0 and itml_default_gamma(2.0, 26, 2048) == 2.0 * 500 / 2048
    assert itml_default_gamma(np.inf, 26, 2048) == np.inf
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(300, 9)), np.arange(300) % 30  # 1350 similar pairs to draw 648 from
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = jaxdml.fit(X, y, loss="itml", max_iter=3, random_state=0)
        e = jaxdml.fit(X, y, loss="itml", max_iter=3, random_state=0, n_constraints=648, gamma=500 / 648)
        g1 = jaxdml.fit(X, y, loss="itml", max_iter=3, random_state=0, n_constraints=648, gamma=1.0)
    np.testing.assert_allclose(m.M, e.M, rtol=1e-12, atol=1e-12)
    assert not np.allclose(m.M, g1.M, rtol=1e-6)


def _iris_subset():
    X, y = load_iris(return_X_y=True)
    keep = np.arange(0, 150, 3)  # 50 rows, every class
    return MinMaxScaler().fit_transform(X[keep]), y[keep]


def test_itml_all_pairs_is_every_labelled_pair_with_the_scaled_slack():
    """n_constraints="all": every pair i < j of the training rows, +1 on a shared label, and the
    default's slack scaling gamma * min(20 K^2, 500) / (n_pairs / 2): the fit equals the one with
    those pairs and that gamma given explicitly."""
    X, y = _iris_subset()
    n = len(y)
    m = jaxdml.ITML(n_constraints="all", random_state=0).fit(X, y)
    pairs, labels = m.result_.info["pairs"], m.result_.info["labels"]
    assert len(pairs) == n * (n - 1) // 2
    assert len({(min(a, b), max(a, b)) for a, b in pairs}) == len(pairs)
    np.testing.assert_array_equal(labels, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1))
    i, j = np.triu_indices(n, 1)
    same = y[i] == y[j]
    order = np.concatenate([np.flatnonzero(same), np.flatnonzero(~same)])  # similar pairs first
    i, j, same = i[order], j[order], same[order]
    gamma = min(20 * 3**2, 500) / (len(i) // 2)
    # the same bounds (from the training rows, not from the rows of the pairs) and the sweeps in the
    # same order: the same computation
    e = jaxdml.ITML(gamma=gamma, bounds=m.bounds_, random_state=0).fit(
        np.stack([X[i], X[j]], axis=1), np.where(same, 1, -1))
    assert m.n_iter_ == e.n_iter_
    np.testing.assert_allclose(m.metric_, e.metric_, rtol=1e-9, atol=1e-9 * np.abs(e.metric_).max())


def test_itml_all_pairs_does_not_depend_on_random_state():
    X, y = _iris_subset()
    ms = [jaxdml.ITML(n_constraints="all", random_state=s).fit(X, y).metric_ for s in (0, 7, None)]
    np.testing.assert_array_equal(ms[0], ms[1])
    np.testing.assert_array_equal(ms[0], ms[2])
    # (sampled pairs do depend on it: the reason for the option)
    a, b = (jaxdml.ITML(random_state=s).fit(X, y).metric_ for s in (0, 7))
    assert not np.allclose(a, b)


def test_itml_all_pairs_refuses_a_set_too_large(monkeypatch):
    from jaxdml.methods.weak import _itml

    X, y = _iris_subset()
    monkeypatch.setattr(_itml, "ITML_ALL_PAIRS_ELEMENTS", 1000)  # 1225 pairs x 4 features is above
    with pytest.raises(ValueError, match=r"n_constraints='all'.*1,225 pairs of 4 features.*integer n_constraints"):
        jaxdml.ITML(n_constraints="all").fit(X, y)
    with pytest.raises(ValueError, match="n_constraints"):
        jaxdml.ITML(n_constraints="every").fit(X, y)
