"""NCMML, NCMC, MCML, LDML and KLMNN: losses against the seed's formulas, fits, errors, estimators.

The references below are written naively (loops, explicit outer products) from the seed's
appendix "Algorithms for Distance Metric Learning: Detailed Explanation". Where the seed's printed
formulas slip, the slip is noted next to the reference and the mathematically consistent version
is used:

- NCMC: the objective line reads ``(1/N) sum_i p_L(y_i|x_i)`` but the printed gradient (with
  ``alpha_icj``) is that of ``(1/N) sum_i log p_L(y_i|x_i)``; we use the log-likelihood.
- MCML: ``p_0(j|i) "proportional to" 1`` for same-class ``j`` is normalised (so the objective is a KL
  divergence), and the printed gradient's second term has a sign slip (``- sum_i (-sum_k ...)``);
  the gradient of the seed's own objective is ``sum_ij p_0(j|i) O_ij - sum_i sum_k p(k|i) O_ik``.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import jaxdml
from jaxdml import losses

from ..._reference import expected_failed_checks


# --------------------------------------------------------------------------- naive references
def _outer(a, b):
    v = a - b
    return np.outer(v, v)


def _softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def ref_ncmml(L, X, y):
    """Seed NCMML: log-likelihood (1/N) sum_i log p_L(y_i|x_i) and its printed gradient."""
    N, d = X.shape
    classes = np.unique(y)
    mus = [X[y == c].mean(axis=0) for c in classes]
    value, G = 0.0, np.zeros((d, d))
    for i in range(N):
        p = _softmax(np.array([-0.5 * np.sum((L @ (X[i] - m)) ** 2) for m in mus]))
        value += np.log(p[list(classes).index(y[i])])
        for ci, c in enumerate(classes):
            alpha = p[ci] - float(y[i] == c)
            G += alpha * _outer(mus[ci], X[i])
    return value / N, L @ G / N


def ref_ncmc(L, X, y, C, clab):
    """Seed NCMC: (1/N) sum_i log p_L(y_i|x_i), p_L(c|x) = sum_j p_L(m_cj|x), and its gradient."""
    N, d = X.shape
    value, G = 0.0, np.zeros((d, d))
    for i in range(N):
        p = _softmax(np.array([-0.5 * np.sum((L @ (X[i] - m)) ** 2) for m in C]))
        pc = p[clab == y[i]].sum()
        value += np.log(pc)
        for j, m in enumerate(C):
            alpha = p[j] - float(clab[j] == y[i]) * p[j] / pc
            G += alpha * _outer(m, X[i])
    return value / N, L @ G / N


def ref_mcml(M, X, y):
    """Seed MCML: f(M) = sum_i KL[p_0(.|i) || p^M(.|i)] and grad f (see module docstring)."""
    N, d = X.shape
    value, G = 0.0, np.zeros((d, d))
    for i in range(N):
        others = [k for k in range(N) if k != i]
        dist = np.array([(X[i] - X[k]) @ M @ (X[i] - X[k]) for k in others])
        p = _softmax(-dist)
        same = np.array([y[k] == y[i] for k in others])
        p0 = same / same.sum()
        value += sum(p0[t] * np.log(p0[t] / p[t]) for t in range(len(others)) if p0[t] > 0)
        for t, k in enumerate(others):
            G += (p0[t] - p[t]) * _outer(X[i], X[k])
    return value, G


def ref_ldml(M, X, y, b):
    """Seed LDML: log-likelihood sum_{i != j} y_ij log p_ij + (1 - y_ij) log(1 - p_ij), gradient
    sum_ij (p_ij - y_ij) O_ij with p_ij = sigma(b - d_M(x_i, x_j)^2)."""
    N, d = X.shape
    value, G = 0.0, np.zeros((d, d))
    for i in range(N):
        for j in range(N):
            if i == j:
                continue
            p = 1.0 / (1.0 + np.exp(-(b - (X[i] - X[j]) @ M @ (X[i] - X[j]))))
            yij = float(y[i] == y[j])
            value += yij * np.log(p) + (1 - yij) * np.log(1 - p)
            G += (p - yij) * _outer(X[i], X[j])
    return value, G


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(np.asarray(b)), 1e-300)


def _data(rng, n=21, d=4, c=3):
    X = rng.normal(size=(n, d)) * 0.7
    y = np.arange(n) % c
    return X, y


# --------------------------------------------------------------------------- losses vs the seed
def test_ncmml_value_and_gradient_match_seed(rng, x64):
    X, y = _data(rng)
    prob = jaxdml.make_problem(X, y, n_neighbors=None)
    vg = jax.jit(jax.value_and_grad(losses.ncmml))
    for L in (rng.normal(size=(4, 4)), rng.normal(size=(2, 4))):
        value, G = ref_ncmml(L, X, y)
        v, g = vg(jnp.asarray(L), prob)
        assert abs(-float(v) - value) < 1e-10
        assert _rel(-np.asarray(g), G) < 1e-6  # ncmml() is -log-likelihood


def test_ncmc_value_and_gradient_match_seed(rng, x64):
    X, y = _data(rng, n=30)
    prob = jaxdml.make_problem(X, y, n_neighbors=None, n_centroids=2, random_state=0)
    C, clab = np.asarray(prob.centroids), np.asarray(prob.centroid_labels)
    assert C.shape == (6, 4) and np.all(np.asarray(prob.centroid_mask) == 1)
    L = rng.normal(size=(3, 4))
    value, G = ref_ncmc(L, X, y, C, clab)
    v, g = jax.jit(jax.value_and_grad(losses.ncmc))(jnp.asarray(L), prob)
    assert abs(-float(v) - value) < 1e-10
    assert _rel(-np.asarray(g), G) < 1e-6


def test_ncmc_with_one_centroid_is_ncmml(rng, x64):
    X, y = _data(rng)
    L = jnp.asarray(rng.normal(size=(4, 4)))
    p1 = jaxdml.make_problem(X, y, n_neighbors=None, n_centroids=1)
    assert abs(float(jax.jit(losses.ncmc)(L, p1)) - float(jax.jit(losses.ncmml)(L, p1))) < 1e-12


def test_mcml_value_and_gradient_match_seed(rng, x64):
    X, y = _data(rng)
    prob = jaxdml.make_problem(X, y, n_neighbors=None)
    A = rng.normal(size=(4, 4)) * 0.6
    M = A.T @ A
    value, G = ref_mcml(M, X, y)
    N = len(X)
    v, g = jax.jit(jax.value_and_grad(losses.mcml))(jnp.asarray(M), prob)
    assert abs(N * float(v) - value) < 1e-9
    assert _rel(N * np.asarray(g), G) < 1e-6  # mcml() is f / N
    check_grads(jax.jit(lambda m: losses.mcml(m, prob)), (jnp.asarray(M),), order=1, modes=["rev"])


def test_ldml_value_and_gradient_match_seed(rng, x64):
    X, y = _data(rng)
    prob = jaxdml.make_problem(X, y, n_neighbors=None)
    A = rng.normal(size=(4, 4)) * 0.5
    M = A.T @ A
    N = len(X)
    vg = jax.jit(jax.value_and_grad(losses.ldml))
    for b in (0.5, 2.0):
        value, G = ref_ldml(M, X, y, b)
        v, g = vg(jnp.asarray(M), prob, b=b)
        assert abs(-N * (N - 1) * float(v) - value) < 1e-8
        assert _rel(-N * (N - 1) * np.asarray(g), G) < 1e-6  # ldml() is -log-likelihood / (N (N - 1))


def test_ldml_is_stable_for_large_distances(x64):
    X = np.array([[0.0], [1e3], [2e3], [3e3]])
    y = np.array([0, 0, 1, 1])
    prob = jaxdml.make_problem(X, y, n_neighbors=None)
    v, g = jax.jit(jax.value_and_grad(losses.ldml))(jnp.eye(1), prob, b=1.0)
    assert np.isfinite(float(v)) and float(v) > 1e4 and np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("name", ["ncmml", "ncmc", "mcml", "ldml"])
def test_losses_ignore_padding_and_blocks(rng, x64, name):
    X, y = _data(rng, n=23)
    fn = jaxdml.methods()[name].loss.fn
    p = jnp.asarray(np.eye(4) + 0.1 * rng.normal(size=(4, 4)))
    kw = dict(n_neighbors=None, n_centroids=2 if name == "ncmc" else None, random_state=0)
    f = jax.jit(fn, static_argnames=("block_elements",) if name in ("mcml", "ldml") else ())
    plain = float(f(p, jaxdml.make_problem(X, y, **kw)))
    padded = float(f(p, jaxdml.make_problem(X, y, pad_to=40, **kw)))
    assert abs(plain - padded) < 1e-12
    if name in ("mcml", "ldml"):  # several row blocks (checkpointed) give the same value
        assert abs(float(f(p, jaxdml.make_problem(X, y, **kw), block_elements=50)) - plain) < 1e-12
    # minibatch anchors: means over a partition of the rows recombine into the full mean
    prob = jaxdml.make_problem(X, y, pad_to=40, **kw)
    a, b = jnp.arange(0, 9), jnp.arange(9, 40)  # b holds the padding rows
    parts = 9 * float(f(p, prob, anchors=a)) + 14 * float(f(p, prob, anchors=b))
    assert abs(parts / 23 - plain) < 1e-12
    if name in ("mcml", "ldml"):  # every row as candidate: the exact objective
        assert abs(float(f(p, prob, candidates=jnp.arange(40))) - plain) < 1e-12
    else:
        with pytest.raises(ValueError, match="n_candidates does not apply"):
            f(p, prob, candidates=jnp.arange(40))


# --------------------------------------------------------------------------- fits
# The fits below use the training part of the first fold of the accuracy test (the same shapes).
def _folds(y, n_splits=5):
    return list(StratifiedKFold(n_splits, shuffle=True, random_state=0).split(np.zeros(len(y)), y))


@pytest.fixture(scope="module")
def wine_fold(wine_minmax):
    X, y = wine_minmax
    tr, te = _folds(y)[0]
    sc = MinMaxScaler().fit(X[tr])
    return sc.transform(X[tr]), y[tr], sc.transform(X[te]), y[te]


FIT_CASES = [("ncmml", {}), ("ncmc", dict(random_state=0)), ("mcml", {}), ("ldml", {}),
             ("klmnn", dict(kernel="linear"))]


#: iterations of the fits below: enough to move well below the start, a fraction of the defaults' run time
BUDGET = 40


@pytest.mark.parametrize("loss, kw", FIT_CASES)
def test_fit_decreases_the_loss(wine_fold, loss, kw):
    X, y = wine_fold[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = jaxdml.fit(X, y, loss=loss, max_iter=BUDGET, **kw)
    hist = res.loss_history
    assert hist.size >= 2 and np.all(np.isfinite(hist))
    best = np.minimum.accumulate(hist)
    assert np.all(np.diff(best) <= 0)
    assert res.loss < hist[0] - 1e-3 * abs(hist[0])  # clearly below the initial value
    assert res.loss == pytest.approx(best[-1], rel=1e-6)
    if loss == "klmnn":
        assert isinstance(res, jaxdml.KernelFittedMetric) and res.A.shape == (X.shape[1], len(X))
        return
    # the returned parameters really have the reported loss
    kw_p = dict(n_centroids=2, random_state=0) if loss == "ncmc" else {}
    prob = jaxdml.make_problem(X, y, n_neighbors=None, **kw_p)
    spec = jaxdml.methods()[loss].loss
    params = res.M if spec.param == "M" else res.L
    value = jax.jit(spec.fn)(jnp.asarray(params, prob.X.dtype), prob)  # compiled: op by op takes seconds
    assert float(value) == pytest.approx(res.loss, rel=1e-3, abs=1e-6)
    if spec.param == "M":  # projected methods return PSD metrics
        assert np.allclose(params, params.T) and np.linalg.eigvalsh(params).min() > -1e-6
    if loss == "ncmc":
        np.testing.assert_allclose(res.info["centroids"], np.asarray(prob.centroids), rtol=1e-6)
        same = jaxdml.fit(X, y, loss="ncmc", random_state=0, tol=1e-3, max_iter=BUDGET)  # NCMC's own default tol
        assert same.n_iter == res.n_iter and np.allclose(same.L, res.L)


def test_minibatch_training(wine_fold):
    X, y = wine_fold[:2]
    res = jaxdml.fit(X, y, loss="ldml", optimizer="adam", learning_rate=0.01, batch_size=32, max_iter=30,
                     random_state=0)
    assert res.info["batch_size"] == 32 and res.loss < res.loss_history[0]


def test_ncmc_centroids_num_too_large_is_a_clear_error(wine_minmax):
    X, y = wine_minmax  # smallest class: 48 samples
    with pytest.raises(ValueError, match=r"centroids_num=49 is larger than the number of samples"):
        jaxdml.fit(X, y, loss="ncmc", centroids_num=49)
    with pytest.raises(ValueError, match=r"centroids_num=60 is larger"):
        jaxdml.NCMC(centroids_num=60).fit(X, y)
    with pytest.raises(ValueError, match="'centroids_num' parameter"):
        jaxdml.NCMC(centroids_num=0).fit(X, y)
    with pytest.raises(ValueError, match="needs class centroids"):
        losses.ncmc(jnp.eye(13), jaxdml.make_problem(X, y, n_neighbors=None))


def test_klmnn_rejects_bad_kernels(wine_minmax):
    X, y = wine_minmax
    with pytest.raises(ValueError, match="'gamma' parameter"):
        jaxdml.fit(X, y, loss="klmnn", kernel="rbf", gamma=-1.0)
    with pytest.raises(ValueError, match="'degree' parameter"):
        jaxdml.fit(X, y, loss="klmnn", kernel="poly", degree=0)
    with pytest.raises(ValueError, match="'kernel' parameter"):
        jaxdml.fit(X, y, loss="klmnn", kernel="sigmoid")
    with pytest.raises(ValueError, match="non-finite"):
        jaxdml.fit(X, y, loss="klmnn", kernel="poly", degree=300, gamma=50.0)
    with pytest.raises(ValueError, match="non-finite"):
        jaxdml.fit(X, y, loss="klmnn", kernel=lambda A, B: np.full((len(A), len(B)), np.inf))
    with pytest.raises(ValueError, match="exceeds the rank"):
        jaxdml.fit(X, y, loss="klmnn", kernel="linear", n_components=20)
    with pytest.raises(ValueError, match="'tol' parameter"):
        jaxdml.fit(X, y, loss="klmnn", tol=-1.0)
    with pytest.raises(ValueError, match="'kernel' parameter of KLMNN"):
        jaxdml.KLMNN(kernel="cosine").fit(X, y)


def test_kernel_basis_factorises_the_kernel_matrix():
    """``K = Z Z^T`` with ``Z = K P^T`` and ``P K P^T = I`` on the numerical rank of ``K``."""
    from jaxdml.methods.core._landmarks import kernel_basis

    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 3))
    for K, rank in ((X @ X.T, 3), (np.exp(-((X[:, None] - X[None]) ** 2).sum(-1)), 12)):
        Z, P = kernel_basis(K)
        assert Z.shape == (12, rank) and P.shape == (rank, 12)
        np.testing.assert_allclose(Z @ Z.T, K, atol=1e-10)
        np.testing.assert_allclose(K @ P.T, Z, atol=1e-8)
        np.testing.assert_allclose(P @ K @ P.T, np.eye(rank), atol=1e-8)
    for K in (np.zeros((4, 4)), -np.eye(4)):
        with pytest.raises(ValueError, match="no positive eigenvalue"):
            kernel_basis(K)


@pytest.fixture(scope="module")
def wine_small(wine_minmax):
    X, y = wine_minmax
    keep = np.concatenate([np.flatnonzero(y == c)[:12] for c in range(3)])
    return X[keep], y[keep]


def test_klmnn_random_and_array_initial_maps(wine_fold):
    """init "random" (seeded) and an array (a warm start: the fit starts at the loss of the array's map)."""
    X, y = wine_fold[:2]
    # the settings of test_klmnn_estimator_and_parameters: one compiled program for these fits
    kw = dict(loss="klmnn", n_components=5, kernel="rbf", gamma=1.0, n_neighbors=5, mu=0.3, max_iter=20)
    base = jaxdml.fit(X, y, **kw)
    warm = jaxdml.fit(X, y, init=base.L, **kw)
    assert warm.loss_history[0] == pytest.approx(base.loss, rel=1e-5) and warm.loss <= base.loss * (1 + 1e-6)
    r1, r2 = (jaxdml.fit(X, y, init="random", random_state=s, **kw) for s in (0, 0))
    np.testing.assert_array_equal(r1.L, r2.L)
    assert r1.loss_history[0] != pytest.approx(base.loss_history[0], rel=1e-3)


def test_klmnn_impostor_candidates(wine_small):
    """KLMNN's problem with ``n_impostors`` candidates (nearest other-class rows in feature space,
    padded rows included): covering every other-class row gives the exact LMNN loss and gradient;
    fewer candidates drop hinge terms, so the loss is at most the exact one."""
    from jaxdml.kernels import kernel_matrix
    from jaxdml.methods.core._landmarks import kernel_basis
    from jaxdml.methods.gradient._klmnn import _kernel_problem

    X, y = wine_small
    n = len(X)
    K = kernel_matrix(X, kernel="rbf", gamma=1.0)
    Z, _ = kernel_basis(K)
    exact, bucket = _kernel_problem(Z, K, y, 3, None, "auto")
    loss = jax.jit(jax.value_and_grad(lambda B, p: losses.lmnn(B, p, mu=0.5)))
    B = np.eye(Z.shape[1])
    v0, g0 = loss(B, exact)
    assert float(v0) > 0
    every, bucket2 = _kernel_problem(Z, K, y, 3, n, "auto")
    assert bucket2 == bucket == exact.X.shape[0] > n and every.impostors.shape == (bucket, n)
    assert not np.asarray(every.impostor_mask)[n:].any()  # padded rows have no candidates
    v1, g1 = loss(B, every)
    np.testing.assert_allclose(float(v1), float(v0), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g0), rtol=1e-4, atol=1e-6)
    few = every._replace(impostor_mask=every.impostor_mask.at[:, 2:].set(0.0))  # the 2 nearest only
    assert float(loss(B, few)[0]) < float(v0)


def test_klmnn_rejects_bad_initial_maps_and_neighbour_counts(wine_small):
    X, y = wine_small
    n = len(X)
    with pytest.raises(ValueError, match=f"n_neighbors={n} must be smaller than n_samples={n}"):
        jaxdml.fit(X, y, loss="klmnn", n_neighbors=n)
    for extra in ({}, {"n_landmarks": 10}):  # the exact path and the Nystrom landmarks
        with pytest.raises(ValueError, match="init must be 'auto', 'identity', 'random' or an array"):
            jaxdml.fit(X, y, loss="klmnn", kernel="rbf", init="pca", **extra)
        with pytest.raises(ValueError, match=r"init array must have shape \(2, 36\) \(n_components, n_samples\)"):
            jaxdml.fit(X, y, loss="klmnn", kernel="rbf", n_components=2, init=np.ones((2, 5)), **extra)


def test_klmnn_linear_kernel_reproduces_lmnn(wine_fold):
    Xtr, ytr, Xte, yte = wine_fold
    lm = jaxdml.fit(Xtr, ytr, loss="lmnn")
    kl = jaxdml.fit(Xtr, ytr, loss="klmnn", kernel="linear")
    # same objective values along the way (same starting map, orthogonally equivalent steps)
    assert kl.loss_history[0] == pytest.approx(lm.loss_history[0], rel=1e-5)
    assert kl.loss == pytest.approx(lm.loss, rel=1e-2)
    # the learned distances agree on new points, and so do the 3-NN predictions
    np.testing.assert_allclose(kl.pairwise_distances(Xte, Xtr), lm.pairwise_distances(Xte, Xtr), rtol=0.05, atol=0.05)
    pa = KNeighborsClassifier(3).fit(lm.transform(Xtr), ytr).predict(lm.transform(Xte))
    pb = KNeighborsClassifier(3).fit(kl.transform(Xtr), ytr).predict(kl.transform(Xte))
    assert np.mean(pa == pb) >= 0.99


def test_klmnn_estimator_and_parameters(wine_fold):
    X, y = wine_fold[:2]
    est = jaxdml.KLMNN(5, kernel="rbf", gamma=1.0, n_neighbors=5, mu=0.3, max_iter=20).fit(X, y)
    assert est.result_.info["n_neighbors"] == 5 and est.result_.info["mu"] == pytest.approx(0.3)
    assert est.result_.info["kernel_rank"] > 100 and est.n_iter_ >= 1
    assert est.components_.shape == (5, len(X)) and est.X_fit_.shape == X.shape
    Z = est.transform(X[:7])
    K = jaxdml.kernels.kernel_matrix(X[:7], X, kernel="rbf", gamma=1.0)
    np.testing.assert_allclose(Z, K @ est.components_.T, rtol=1e-8, atol=1e-10)


def test_fit_forwards_klmnn_parameters(wine_minmax, monkeypatch):
    """jaxdml.fit hands the KLMNN hyper-parameters to the record's solve step (spied, not run)."""
    from jaxdml.methods import _registry

    seen = {}
    real = _registry._TABLE["klmnn"]

    class Stop(Exception):
        pass

    def spy(X, codes, n_classes, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setitem(_registry._TABLE, "klmnn", real._replace(solve=spy))
    X, y = wine_minmax
    with pytest.raises(Stop):
        jaxdml.fit(X, y, loss="klmnn", kernel="poly", gamma=0.5, degree=2, coef0=0.0, mu=0.3, n_neighbors=5)
    assert {k: seen[k] for k in ("kernel", "gamma", "degree", "coef0", "mu", "n_neighbors")} == dict(
        kernel="poly", gamma=0.5, degree=2, coef0=0.0, mu=0.3, n_neighbors=5)
    with pytest.raises(ValueError, match="does not take n_neighbors"):
        jaxdml.fit(X, y, loss="ncmc", n_neighbors=5)


# --------------------------------------------------------------------------- accuracy (fast)
@pytest.mark.slow  # accuracy on real data: 25 fits
def test_learned_metrics_help_3nn_on_wine(wine_minmax):
    """5-fold 3-NN accuracy on wine (min-max scaled within folds): every method within 3 points of
    Euclidean, most of them strictly better (the 10-fold table on iris/wine/breast cancer is in the
    report)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    folds = _folds(y)

    def cv(loss, kw):
        accs = []
        for tr, te in folds:
            sc = MinMaxScaler().fit(X[tr])
            Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
            if loss is None:
                tf = lambda Z: Z  # noqa: E731
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tf = jaxdml.fit(Xtr, y[tr], loss=loss, **kw).transform
            accs.append(KNeighborsClassifier(3).fit(tf(Xtr), y[tr]).score(tf(Xte), y[te]))
        return float(np.mean(accs))

    base = cv(None, {})
    accs = {loss: cv(loss, kw) for loss, kw in FIT_CASES}
    assert all(a >= base - 0.03 for a in accs.values()), (accs, base)
    assert sum(a > base for a in accs.values()) >= 3, (accs, base)


# --------------------------------------------------------------------------- scikit-learn contract
# Small iteration budgets, as scikit-learn does for NCA, and Adam instead of L-BFGS (its loop
# compiles faster; the checks test the estimator contract, not the optimiser). NCMC uses one
# centroid per class because some check data sets have classes of a single sample (more centroids
# than samples is a documented ValueError). No check is skipped (scikit-learn itself skips its
# array-API check when SCIPY_ARRAY_API is unset).
ESTIMATORS = [
    jaxdml.LDML(max_iter=5),
]
#: the same checks in the slow suite (each check compiles the solver again for its data's shape)
SLOW_ESTIMATORS = [
    jaxdml.KLMNN(max_iter=5, optimizer="adam"),
    jaxdml.NCMML(max_iter=5, optimizer="adam"),
    jaxdml.NCMC(centroids_num=1, max_iter=5, optimizer="adam"),
    jaxdml.MCML(max_iter=5),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(SLOW_ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_slow(estimator, check):
    check(estimator)


@pytest.mark.parametrize("c", [1e-3, 1.0, 50.0])
def test_nca_large_path_starts_with_nearest_neighbours_at_unit_distance(c):
    """NCA's large-data path scales its initial map so that the median squared distance from a row to its
    nearest other row is 1 (protocol round 16), whatever the units: the factor scales as ``1 / c``."""
    from jaxdml._validation import seed_from
    from jaxdml.methods.gradient._nca import neighbour_scale
    from jaxdml.neighbors import knn_search

    Z = np.random.default_rng(0).normal(size=(3000, 5))
    s, s_c = neighbour_scale(Z, 0), neighbour_scale(Z * c, 0)
    np.testing.assert_allclose(s_c, s / c, rtol=1e-5)
    rows = np.random.default_rng(seed_from(0)).choice(3000, 2000, replace=False)  # the rows it draws
    _, dist = knn_search(np.asarray(Z * c * s_c, np.float32)[rows], 2, Y=np.asarray(Z * c * s_c, np.float32))
    np.testing.assert_allclose(np.median(np.asarray(dist)[:, 1]), 1.0, rtol=1e-4)
