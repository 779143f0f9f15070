"""SDML, LSML and SCML against independent references: optimality conditions, finite differences,
scikit-learn's graphical lasso, scipy's LP solver and metric-learn's own objectives."""

import sys
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import MinMaxScaler

import jaxdml
from jaxdml._runtime._device import x64_call
from jaxdml.losses._lsml import QuadrupletProblem, lsml
from jaxdml.losses._scml import scml_objective
from jaxdml.losses._sdml import sdml_objective
from jaxdml.problems import pairs_from_labels


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return MinMaxScaler().fit_transform(X), y


def _metric_learn():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
    try:
        from _harness import metric_learn_compat
    finally:
        sys.path.pop(0)
    metric_learn_compat()
    return pytest.importorskip("metric_learn")


# ---------------------------------------------------------------- SDML
def _kkt_violation(M, Z, S, lam):
    """Largest violation of the graphical lasso's optimality conditions (off-diagonal L1)."""
    G = S - np.linalg.inv(M)  # gradient of the smooth part; 0 in G + lam * subgradient
    off = ~np.eye(len(M), dtype=bool)
    support = off & (np.abs(Z) > 0)
    v = [np.abs(np.diag(G)).max()]
    if support.any():
        v.append(np.abs(G[support] + lam * np.sign(Z[support])).max())
    if (off & ~support).any():
        v.append(max(np.abs(G[off & ~support]).max() - lam, 0.0))
    return max(v)


def test_sdml_solves_the_graphical_lasso(iris):
    X, y = iris
    res = jaxdml.fit(X, y, loss="sdml", random_state=0, sparsity_param=0.5, tol=1e-9, max_iter=5000)
    S, M, Z = res.info["S"], res.M, res.info["sparse_metric"]
    assert res.converged and np.linalg.eigvalsh(M).min() > 0
    assert _kkt_violation(M, Z, S, 0.5) < 1e-5 * np.abs(S).max()
    assert np.sum(Z == 0) > 0  # the L1 term made it sparse
    from sklearn.covariance import graphical_lasso

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ref = graphical_lasso(S, alpha=0.5, tol=1e-10, max_iter=2000)
    f = lambda A: float(x64_call(sdml_objective, A, S, 0.5))  # noqa: E731
    assert f(M) <= f(ref) + 1e-6 * abs(f(ref))


def test_sdml_bounds_the_pair_term_to_keep_the_problem_bounded(iris):
    X, y = iris
    est = jaxdml.SDML(balance_param=0.5, random_state=0).fit(X, y)
    S = est.result_.info["S"]
    assert est.balance_param_ < 0.5  # iris' dissimilar pairs make I + 0.5 K indefinite
    assert np.linalg.eigvalsh(S).min() == pytest.approx(0.1, rel=1e-6)  # pd_margin * eig(M0^-1 = I)
    small = jaxdml.SDML(balance_param=1e-3, random_state=0).fit(X, y)
    assert small.balance_param_ == 1e-3  # left alone where S is safely definite


def test_sdml_from_given_pairs_builds_the_papers_matrix(iris):
    # metric-learn 0.7's SDML cannot run on current scikit-learn (it passes graphical_lasso the removed
    # cov_init argument), so the reference is the matrix of the paper and scikit-learn's solver.
    X, y = iris
    a, b, s = pairs_from_labels(y, n_similar=40, n_dissimilar=40, random_state=0)
    pairs = np.stack([a, b], 1)
    ours = jaxdml.SDML(balance_param=0.01, sparsity_param=0.02, tol=1e-9, max_iter=5000).fit(
        X, pairs=pairs, similar=s)
    assert ours.balance_param_ == 0.01
    D = X[a] - X[b]
    S = np.eye(4) + 0.01 * (D.T * (2 * s - 1)) @ D
    np.testing.assert_allclose(ours.result_.info["S"], S, atol=1e-12)
    from sklearn.covariance import graphical_lasso

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (its dual gap stalls above tol at round-off: the objective of the 100th iterate equals the
        # 2000th's to 1e-15 relative, and the remaining iterations only cost time)
        _, ref = graphical_lasso(S, alpha=0.02, tol=1e-10, max_iter=100)
    f = lambda A: float(x64_call(sdml_objective, A, S, 0.02))  # noqa: E731
    assert abs(f(ours.metric_) - f(ref)) < 1e-6 * abs(f(ref))


def test_sdml_admm_reports_non_convergence(iris):
    X, y = iris
    with pytest.warns(jaxdml.exceptions.ConvergenceWarning):
        est = jaxdml.SDML(max_iter=2, tol=1e-12, random_state=0).fit(X, y)
    assert not est.converged_ and est.n_iter_ == 2


def test_sdml_errors(iris):
    X, y = iris
    with pytest.raises(ValueError, match="together"):
        jaxdml.fit(X, None, loss="sdml", pairs=np.array([[0, 1]]))
    with pytest.raises(ValueError, match="not both"):
        jaxdml.SDML().fit(X, y, pairs=np.array([[0, 1]]), similar=[1])
    with pytest.raises(ValueError, match="pd_margin"):
        jaxdml.SDML(pd_margin=1.5).fit(X, y)


# ---------------------------------------------------------------- LSML
def _naive_lsml(L, Vab, Vcd, w, P):
    M = L.T @ L
    dab = np.sqrt(np.einsum("ij,jk,ik->i", Vab, M, Vab))
    dcd = np.sqrt(np.einsum("ij,jk,ik->i", Vcd, M, Vcd))
    return np.sum(w * np.maximum(dab - dcd, 0) ** 2) + np.sum(M * P) - np.linalg.slogdet(M)[1]


def test_lsml_loss_and_gradient_match_naive_and_finite_differences(rng):
    d, n = 4, 30
    Vab, Vcd = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    w = rng.uniform(size=n)
    A = rng.normal(size=(d, d))
    P = A @ A.T / d + np.eye(d)
    L = np.eye(d) + 0.3 * rng.normal(size=(d, d))
    with jax.enable_x64(True):
        prob = QuadrupletProblem(jnp.asarray(np.stack([Vab, Vcd], 1)), jnp.asarray(w), jnp.asarray(P))
        value, g = jax.jit(jax.value_and_grad(lsml))(jnp.asarray(L), prob)  # one program, not op by op
        assert abs(float(value) - _naive_lsml(L, Vab, Vcd, w, P)) < 1e-10
        g = np.asarray(g)
    fd = np.zeros_like(L)
    h = 1e-6
    for idx in np.ndindex(*L.shape):
        E = np.zeros_like(L)
        E[idx] = h
        fd[idx] = (_naive_lsml(L + E, Vab, Vcd, w, P) - _naive_lsml(L - E, Vab, Vcd, w, P)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_lsml_reaches_metric_learns_objective_on_the_same_quadruplets(iris):
    ml = _metric_learn()
    X, y = iris
    rng = np.random.RandomState(0)
    Q = np.stack([rng.randint(0, len(X), 100) for _ in range(4)], 1)
    Q = Q[(Q[:, 0] != Q[:, 1]) & (Q[:, 2] != Q[:, 3])]
    ours = jaxdml.LSML(tol=1e-9, max_iter=500).fit(X, quadruplets=Q)
    ref = ml.LSML(prior="identity", tol=1e-6, max_iter=200).fit(X[Q])
    Vab, Vcd = X[Q[:, 0]] - X[Q[:, 1]], X[Q[:, 2]] - X[Q[:, 3]]
    w = np.full(len(Q), 1.0 / len(Q))
    f = lambda M: _naive_lsml(np.linalg.cholesky(M + 0 * np.eye(4)).T, Vab, Vcd, w, np.eye(4))  # noqa: E731
    f_ours, f_ref = f(ours.metric_), f(ref.get_mahalanobis_matrix())
    assert f_ours <= f_ref + 1e-4 * abs(f_ref)
    assert f_ours < f(np.eye(4)) - 1e-3  # it moved off the prior
    # weak supervision gives what the labels would have if the same quadruplets were drawn
    again = jaxdml.fit(X, None, loss="lsml", quadruplets=Q, tol=1e-9, max_iter=500)
    np.testing.assert_allclose(again.M, ours.metric_, rtol=1e-6, atol=1e-8)


def test_lsml_errors(iris):
    X, y = iris
    with pytest.raises(ValueError, match="out of range"):
        jaxdml.LSML().fit(X, quadruplets=[[0, 1, 2, 1000]])
    with pytest.raises(ValueError, match=r"\(n_quadruplets, 4\)"):
        jaxdml.LSML().fit(X, quadruplets=[[0, 1, 2]])
    with pytest.raises(ValueError, match="not both"):
        jaxdml.LSML().fit(X, y, quadruplets=[[0, 1, 2, 3]])
    with pytest.raises(ValueError, match="neither"):
        jaxdml.fit(X, None, loss="lsml")
    with pytest.raises(ValueError, match="weights"):
        jaxdml.LSML(weights=[1.0, -1.0]).fit(X, quadruplets=[[0, 1, 2, 3], [4, 5, 6, 7]])


# ---------------------------------------------------------------- SCML
def _lp_optimum(D, beta):
    """min beta 1'w + mean(xi)  s.t.  xi >= 1 + D w, xi >= 0, w >= 0 (scipy's HiGHS)."""
    from scipy.optimize import linprog

    T, K = D.shape
    c = np.r_[np.full(K, beta), np.full(T, 1.0 / T)]
    A = np.hstack([D, -np.eye(T)])
    res = linprog(c, A_ub=A, b_ub=-np.ones(T), bounds=[(0, None)] * (K + T), method="highs")
    assert res.status == 0
    return res.fun


def test_scml_approaches_the_lp_optimum_and_beats_metric_learn(iris):
    ml = _metric_learn()
    X, y = iris
    est = jaxdml.SCML(random_state=0, n_basis=24, max_iter=20000, tol=1e-4).fit(X, y)
    B, T = est.basis_, est.result_.info["triplets"]
    Pab = ((X[T[:, 0]] - X[T[:, 1]]) @ B.T) ** 2
    Pan = ((X[T[:, 0]] - X[T[:, 2]]) @ B.T) ** 2
    D = Pab - Pan
    opt = _lp_optimum(D, 1e-5)
    ours = np.mean(np.maximum(1 + D @ est.weights_, 0)) + 1e-5 * est.weights_.sum()
    assert opt - 1e-9 <= ours <= opt + 0.15 * max(opt, 1e-2)  # a stochastic solver: near the optimum
    assert np.all(est.weights_ >= 0)
    np.testing.assert_allclose(est.metric_, (B.T * est.weights_) @ B, atol=1e-10)
    # metric-learn's solver, on the same triplets and bases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (SCML(basis=array).fit fails in metric-learn 0.7 - it compares the array to a string - so its
        # solver is called as SCML_Supervised calls it, with the bases)
        ref = ml.SCML(random_state=0)._fit(X[T], basis=B, n_basis=len(B))
    Mr = ref.get_mahalanobis_matrix()
    d = lambda M, V: np.einsum("ij,jk,ik->i", V, M, V)  # noqa: E731
    theirs_hinge = np.mean(np.maximum(1 + d(Mr, X[T[:, 0]] - X[T[:, 1]]) - d(Mr, X[T[:, 0]] - X[T[:, 2]]), 0))
    assert ours <= theirs_hinge + 0.02 + 1e-5 * np.trace(Mr)


def test_scml_from_triplets_and_objective(iris):
    X, y = iris
    rng = np.random.RandomState(0)
    a = rng.randint(0, len(X), 300)
    p = np.array([rng.choice(np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))) for i in a])
    n = np.array([rng.choice(np.flatnonzero(y != y[i])) for i in a])
    T = np.stack([a, p, n], 1)
    est = jaxdml.SCML(random_state=0).fit(X, triplets=T)
    assert est.basis_.shape == (80 * 4, 4)  # triplet_diffs
    Mw = est.metric_
    d = lambda V: np.einsum("ij,jk,ik->i", V, Mw, V)  # noqa: E731
    satisfied = np.mean(d(X[a] - X[p]) < d(X[a] - X[n]))
    assert satisfied > np.mean(((X[a] - X[p]) ** 2).sum(1) < ((X[a] - X[n]) ** 2).sum(1)) - 0.02
    with jax.enable_x64(True):
        P, iab, ian = [jnp.asarray(v) for v in jaxdml.methods.weak._scml._projections(X, T, est.basis_)]
        value = jax.jit(scml_objective)(jnp.asarray(est.weights_), P, iab, ian, 1e-5)  # one program
        assert abs(float(value) - est.result_.loss) < 1e-5


def test_scml_streamed_objective_equals_the_dense_one(iris):
    """The solver never forms ``P``: its objective from the pair differences and the bases equals
    :func:`scml_objective` on the explicit ``P`` (float64, padded pairs, bases and triplets too)."""
    from jaxdml.losses._scml import scml_streamed_objective
    from jaxdml.solvers._scml import _pair_projections
    from jaxdml.methods.weak._scml import _padded, _projections, _triplet_pairs, knn_triplets, lda_basis

    X, y = iris
    T = knn_triplets(X, y, 3, 5)
    B = lda_basis(X, y, None, np.random.RandomState(0))
    P, iab, ian = _projections(X, T, B)
    V, iab2, ian2 = _triplet_pairs(X, T)
    Vp, Bp, iabp, ianp, mask = _padded(V, B, iab2, ian2)
    assert Vp.shape[0] > V.shape[0] or Bp.shape[0] > B.shape[0] or mask.size > T.shape[0]
    w = np.random.RandomState(1).exponential(size=Bp.shape[0])

    @jax.jit  # the three evaluations as one program (op by op, every primitive would compile)
    def evaluate(w, P, iab, ian, V, B, Vp, Bp, iabp, ianp, mask):
        return (scml_objective(w[: B.shape[0]], P, iab, ian, 1e-3),
                scml_streamed_objective(w, Vp, Bp, iabp, ianp, 1e-3, mask),
                _pair_projections(V, B, jnp.arange(7)))

    with jax.enable_x64(True):
        dense, streamed, rows = evaluate(*map(jnp.asarray, (w, P, iab, ian, V, B, Vp, Bp, iabp, ianp, mask)))
        dense, streamed, rows = float(dense), float(streamed), np.asarray(rows)
    # padded bases are zero: their weights add only to the L1 term
    assert streamed == pytest.approx(dense + 1e-3 * w[B.shape[0]:].sum(), rel=1e-12)
    np.testing.assert_allclose(rows, P[:7], rtol=1e-12)


def test_scml_knn_triplets_cap_is_a_stratified_anchor_subset(iris):
    """Above the cap the anchors are a class-stratified subset; the neighbours are still the exact
    k-NN among all rows (the uncapped triplets of those anchors)."""
    from jaxdml.methods.weak._scml import knn_triplets

    X, y = iris
    full = knn_triplets(X, y, 2, 3)
    assert full.shape == (150 * 6, 3)
    capped = knn_triplets(X, y, 2, 3, max_triplets=6 * 30, random_state=0)
    assert capped.shape == (180, 3)
    anchors = np.unique(capped[:, 0])
    assert anchors.size == 30 and np.all(np.bincount(y[anchors]) == 10)
    want = full[np.isin(full[:, 0], anchors)]
    np.testing.assert_array_equal(capped, want)
    assert np.all(y[capped[:, 0]] == y[capped[:, 1]]) and np.all(y[capped[:, 0]] != y[capped[:, 2]])
    np.testing.assert_array_equal(knn_triplets(X, y, 2, 3, max_triplets=10**6), full)  # under the cap

def test_scml_knn_triplets_equal_a_brute_force_search_with_the_tie_rule(rng):
    """The triplets come from the library's one neighbour search: against a plain NumPy k-NN with
    the documented tie rule (distance, then lowest row index), on data with duplicated rows (ties,
    and an anchor whose duplicates are as near as itself)."""
    from jaxdml.methods.weak._scml import knn_triplets

    X = rng.integers(0, 4, (40, 3)).astype(float)  # whole numbers: equal distances are exactly equal
    X[10], X[11], X[12] = X[9], X[9], X[9]
    y = np.arange(40) % 3
    y[9:13] = 0
    kg, ki = 2, 3
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    want = []
    for i in range(40):
        same = [j for j in np.lexsort((np.arange(40), d[i])) if y[j] == y[i] and j != i][:kg]
        other = [j for j in np.lexsort((np.arange(40), d[i])) if y[j] != y[i]][:ki]
        want += [(i, j, l) for j in same for l in other]
    np.testing.assert_array_equal(knn_triplets(X, y, kg, ki), np.array(want))


def test_scml_errors(iris):
    X, y = iris
    with pytest.raises(ValueError, match="out of range"):
        jaxdml.SCML().fit(X, triplets=[[0, 1, 500]])
    with pytest.raises(ValueError, match="needs labels"):
        jaxdml.SCML(basis="lda").fit(X, triplets=[[0, 1, 2]])
    with pytest.raises(ValueError, match="basis"):
        jaxdml.SCML(basis=np.ones((3, 2))).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 samples"):
        jaxdml.SCML().fit(X[:51], y[:51])


def test_metric_learn_tuple_forms_reach_sdml_scml_lsml():
    """metric-learn's inputs: formed tuples (n, k, d) and index tuples with ``preprocessor`` give the
    same fit; the fitted learners classify their tuples (pairs: ±1, triplets/quadruplets: order)."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import minmax_scale

    X, y = load_iris(return_X_y=True)
    X = minmax_scale(X)
    c = jaxdml.Constraints(y)
    a, b, cc, d = c.positive_negative_pairs(40, random_state=0)
    pairs = np.vstack([np.c_[a, b], np.c_[cc, d]])
    py = np.r_[np.ones(len(a)), -np.ones(len(cc))]
    s1 = jaxdml.SDML().fit(X[pairs], py)
    s2 = jaxdml.SDML(preprocessor=X).fit(pairs, py)
    np.testing.assert_array_equal(s1.metric_, s2.metric_)
    assert set(np.unique(s1.predict(X[pairs]))) <= {-1, 1} and s1.score(X[pairs], py) > 0.5
    T = c.generate_knntriplets(X, 2, 3)[:200]
    t1 = jaxdml.SCML(random_state=0, max_iter=200).fit(X[T])
    t2 = jaxdml.SCML(preprocessor=X, random_state=0, max_iter=200).fit(T)
    np.testing.assert_array_equal(t1.metric_, t2.metric_)
    assert np.mean(t1.predict(X[T]) == 1) == t1.score(X[T])
    # (100 quadruplets and max_iter=500: the padded size and budget of the LSML fit above, whose
    # compiled solver these fits reuse)
    Q = np.c_[T[:100, 0], T[:100, 1], T[:100, 0], T[:100, 2]]
    q1 = jaxdml.LSML(max_iter=500).fit(X[Q])
    q2 = jaxdml.LSML(preprocessor=X, max_iter=500).fit(Q)
    np.testing.assert_array_equal(q1.metric_, q2.metric_)
    assert q1.score(X[Q]) > 0.5
    with pytest.raises(ValueError):
        jaxdml.SCML_Supervised().fit(X[T])
