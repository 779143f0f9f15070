"""metric-learn's algorithms (Covariance, LFDA, RCA, MLKR, MMC), each against an independent reference."""


import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import MinMaxScaler

import jaxdml


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return MinMaxScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


# ---------------------------------------------------------------- Covariance
def test_covariance_is_the_inverse_sample_covariance(wine):
    X, y = wine
    ref = np.linalg.inv(np.cov(X.T))
    res = jaxdml.fit(X, None, loss="covariance")
    np.testing.assert_allclose(res.M, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())
    est = jaxdml.Covariance().fit(X, y)  # labels are ignored
    np.testing.assert_allclose(est.metric_, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())
    np.testing.assert_allclose(est.components_.T @ est.components_, ref, rtol=1e-7, atol=1e-7 * np.abs(ref).max())
    # whitening: the transformed data has identity covariance
    np.testing.assert_allclose(np.cov(est.transform(X).T), np.eye(X.shape[1]), atol=1e-8)


def test_covariance_singular_is_the_pseudo_inverse():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X = np.hstack([X, X[:, :1] + X[:, 1:2]])  # rank 3 in 4 dimensions
    est = jaxdml.Covariance().fit(X)
    C = np.cov(X.T)
    # the Moore-Penrose pseudo-inverse (as metric-learn's Covariance): numpy's, and its identities
    np.testing.assert_allclose(est.metric_, np.linalg.pinv(C, rcond=1e-10, hermitian=True), atol=1e-8)
    np.testing.assert_allclose(est.metric_ @ C @ est.metric_, est.metric_, atol=1e-8)
    # the direction without variance gets no weight; on the others the data is whitened
    null = np.array([1.0, 1.0, 0.0, -1.0]) / np.sqrt(3)
    assert abs(null @ est.metric_ @ null) < 1e-8
    np.testing.assert_allclose(np.linalg.eigvalsh(np.cov(est.transform(X).T)), [0, 1, 1, 1], atol=1e-8)
    # round-off along that direction (float32 data) is not amplified into the transform
    Z = est.transform(X.astype(np.float32))
    np.testing.assert_allclose(Z, est.transform(X), atol=1e-4)


def test_eigen_covariance_helpers_against_numpy(x64):
    """jaxdml.eigen's covariance_components (np.cov and its pseudo-inverse), inverse_sqrt_psd with
    floored eigenvalues, and the restriction of a matrix to the span of another (RCA's)."""
    import jax

    from jaxdml.eigen import _covariance

    covariance_components, inverse_sqrt_psd, span_restricted = (
        jax.jit(f) for f in (_covariance.covariance_components, _covariance.inverse_sqrt_psd,
                             _covariance.span_restricted))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 4))
    L, M, C = map(np.asarray, covariance_components(X))
    np.testing.assert_allclose(C, np.cov(X.T), rtol=1e-12)
    np.testing.assert_allclose(M, np.linalg.inv(np.cov(X.T)), rtol=1e-10)
    np.testing.assert_allclose(L, L.T, atol=1e-14)
    np.testing.assert_allclose(L @ C @ L.T, np.eye(4), atol=1e-12)
    Xs = np.hstack([X[:, :3], X[:, :1] - 2 * X[:, 2:3]])  # rank 3: the pseudo-inverse
    L, M, C = map(np.asarray, covariance_components(Xs))
    np.testing.assert_allclose(M, np.linalg.pinv(np.cov(Xs.T), rcond=1e-10, hermitian=True), atol=1e-10)
    np.testing.assert_allclose(L.T @ L, M, atol=1e-10)
    _, M, C = map(np.asarray, covariance_components(X[:1]))  # one row: no variance, nothing kept
    assert not C.any() and not M.any()
    # without drop, eigenvalues are floored at reg times the largest; C = 0 gives the identity
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    L, M = map(np.asarray, inverse_sqrt_psd(R @ np.diag([4.0, 1.0, 0.0]) @ R.T, 1e-2))
    np.testing.assert_allclose(M, R @ np.diag([0.25, 1.0, 25.0]) @ R.T, atol=1e-10)
    np.testing.assert_allclose(L, R @ np.diag([0.5, 1.0, 5.0]) @ R.T, atol=1e-10)
    for out in inverse_sqrt_psd(np.zeros((3, 3))):
        np.testing.assert_array_equal(np.asarray(out), np.eye(3))
    # span_restricted: the kept directions span range(S); C in that basis there, the identity elsewhere
    S = R[:, :2] @ np.diag([2.0, 0.5]) @ R[:, :2].T
    Cfull = np.cov(X[:, :3].T)
    C_s, B, keep = map(np.asarray, span_restricted(Cfull, S))
    assert keep.sum() == 2
    Bk = B[:, keep]
    np.testing.assert_allclose(B.T @ B, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(Bk @ Bk.T, S @ np.linalg.pinv(S), atol=1e-10)
    np.testing.assert_allclose(C_s[np.ix_(keep, keep)], Bk.T @ Cfull @ Bk, atol=1e-12)
    np.testing.assert_allclose(C_s[np.ix_(~keep, ~keep)], np.eye(1))
    assert not C_s[np.ix_(keep, ~keep)].any()


# ---------------------------------------------------------------- LFDA
def _naive_lfda_scatters(X, y, k=7):
    """Sugiyama's local scatters from the explicit (n, n) weight matrices."""
    n = len(X)
    A = np.zeros((n, n))
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        D2 = ((X[idx][:, None] - X[idx][None]) ** 2).sum(-1)
        s = np.sqrt(np.sort(D2, axis=1)[:, min(k, idx.size - 1)])
        A[np.ix_(idx, idx)] = np.exp(-D2 / np.outer(s, s))
    same = y[:, None] == y[None, :]
    nc = np.array([np.sum(y == c) for c in y], dtype=float)[:, None]
    Ww = np.where(same, A / nc, 0.0)
    Wb = np.where(same, A * (1.0 / n - 1.0 / nc), 1.0 / n)
    lap = lambda W: X.T @ (np.diag(W.sum(1)) - W) @ X  # noqa: E731
    return lap(Wb), lap(Ww)


@pytest.mark.parametrize("data", ["iris", "wine"])
def test_lfda_subspace_matches_direct_generalized_eigh(data, iris, wine):
    X, y = iris if data == "iris" else wine
    X = MinMaxScaler().fit_transform(X)
    Sb, Sw = _naive_lfda_scatters(X, y)
    w, V = scipy.linalg.eigh(Sb, Sw)
    for r in (2, 3):
        L = jaxdml.fit(X, y, loss="lfda", n_components=r).L
        angles = scipy.linalg.subspace_angles(L.T, V[:, ::-1][:, :r])
        assert angles.max() < 1e-7
    # the three embeddings span one subspace; "plain" is S_w-orthonormal, "weighted" scaled by sqrt(lambda)
    plain = jaxdml.LFDA(n_components=3, embedding_type="plain").fit(X, y)
    ortho = jaxdml.LFDA(n_components=3, embedding_type="orthonormalized").fit(X, y)
    weighted = jaxdml.LFDA(n_components=3).fit(X, y)
    P = plain.components_
    np.testing.assert_allclose(P @ Sw @ P.T, np.eye(3), atol=1e-8)
    np.testing.assert_allclose(ortho.components_ @ ortho.components_.T, np.eye(3), atol=1e-10)
    assert scipy.linalg.subspace_angles(ortho.components_.T, P.T).max() < 1e-8
    np.testing.assert_allclose(np.abs(weighted.components_), np.abs(P) * np.sqrt(w[::-1][:3])[:, None], rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(weighted.eigenvalues_, w[::-1][:3], rtol=1e-7)


def test_lfda_digits_finite_and_not_worse_than_metric_learn(wine):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    X, y = load_digits(return_X_y=True)  # metric-learn's LFDA gives complex eigenvectors / NaN here
    L = jaxdml.LFDA(n_components=9).fit(X, y).components_
    assert np.all(np.isfinite(L)) and L.dtype == np.float64
    try:
        from benchmarks._harness import metric_learn_compat

        metric_learn_compat()
        import metric_learn
    except Exception:  # pragma: no cover - metric-learn is optional
        pytest.skip("metric-learn is not importable")
    X, y = wine
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    acc = {name: cross_val_score(make_pipeline(est, KNeighborsClassifier(3)), X, y, cv=cv).mean()
           for name, est in (("jaxdml", jaxdml.LFDA()), ("metric_learn", metric_learn.LFDA()))}
    # metric-learn's sigma_i is not the k-th neighbour distance (np.partition along the wrong
    # axis), so the subspaces differ; compare what the user sees: 3-NN accuracy
    assert acc["jaxdml"] >= acc["metric_learn"] - 0.01, acc


# ---------------------------------------------------------------- RCA
def _naive_chunklet_covariance(X, chunks):
    rows = []
    for k in np.unique(chunks[chunks >= 0]):
        Xk = X[chunks == k]
        rows.append(Xk - Xk.mean(axis=0))
    R = np.vstack(rows)
    return R.T @ R / len(R)


def test_rca_whitens_the_chunklet_covariance(wine):
    X, y = wine
    with pytest.warns(UserWarning, match="only 88 chunklets"):  # wine: 29 + 35 + 24 pairs < 100
        est = jaxdml.RCA(random_state=0).fit(X, y)
    chunks = est.result_.info["chunks"]
    assert np.sum(chunks >= 0) == 176 and np.bincount(chunks[chunks >= 0]).tolist() == [2] * 88
    for k in range(88):  # every chunklet joins one class
        assert np.unique(y[chunks == k]).size == 1
    C = _naive_chunklet_covariance(X, chunks)
    np.testing.assert_allclose(est.chunklet_covariance_, C, atol=1e-12)
    L = est.components_
    np.testing.assert_allclose(L @ C @ L.T, np.eye(X.shape[1]), atol=1e-8)
    np.testing.assert_allclose(L, L.T, atol=1e-10)  # the symmetric C^{-1/2}
    low = jaxdml.RCA(n_components=3).fit(X, chunk_labels=chunks).components_
    np.testing.assert_allclose(low @ C @ low.T, np.eye(3), atol=1e-8)
    # the same chunklets through jaxdml.fit; chunk ids are renumbered, -1 rows ignored
    relabel = np.where(chunks >= 0, 3 * chunks + 7, -1)
    np.testing.assert_allclose(jaxdml.fit(X, None, loss="rca", chunk_labels=relabel).L, L, atol=1e-10)


def test_rca_leaves_out_directions_in_which_the_data_does_not_vary(wine):
    X, y = wine
    X = np.hstack([X, X[:, :1] - 2.0 * X[:, 1:2]])  # a linear combination of two features
    chunks = jaxdml.RCA(random_state=0).fit(X[:, :-1], y).result_.info["chunks"]
    L = jaxdml.RCA().fit(X, chunk_labels=chunks).components_
    C = _naive_chunklet_covariance(X, chunks)
    null = np.r_[1.0, -2.0, np.zeros(X.shape[1] - 3), -1.0] / np.sqrt(6)
    np.testing.assert_allclose(L @ null, 0, atol=1e-8)  # no weight where no row varies
    # on the data's span, C is whitened: L C L^T is the projection onto it
    P = np.eye(X.shape[1]) - np.outer(null, null)
    np.testing.assert_allclose(L @ C @ L.T, P, atol=1e-7)


def test_rca_small_classes_and_bad_chunks():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.warns(UserWarning, match="chunklets of 2"):
        jaxdml.RCA(chunk_size=5, n_chunks=2).fit(X, [0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="single sample"):
        jaxdml.RCA().fit(X[:3], [0, 1, 2])
    with pytest.raises(ValueError, match="no chunklet has two"):
        jaxdml.RCA().fit(X, chunk_labels=[0, 1, 2, -1, -1, -1])
    with pytest.raises(ValueError, match="give labels y or chunk_labels"):
        jaxdml.fit(X, None, loss="rca")


# ---------------------------------------------------------------- MLKR
def _naive_mlkr(L, X, t):
    Z = X @ L.T
    K = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1))
    np.fill_diagonal(K, 0.0)
    return np.mean((t - K @ t / K.sum(1)) ** 2)


def test_mlkr_gradient_matches_finite_differences():
    import jax

    from jaxdml.losses import RegressionProblem, mlkr

    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 4))
    t = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=25)
    L = 0.5 * rng.normal(size=(3, 4))
    with jax.enable_x64(True):
        mlkr = jax.jit(mlkr)  # one program per shape (op by op, every primitive compiles on its own)
        prob = RegressionProblem(jax.numpy.asarray(X), jax.numpy.asarray(t), jax.numpy.ones(25))
        assert abs(float(mlkr(L, prob)) - _naive_mlkr(L, X, t)) < 1e-12
        g = np.asarray(jax.jit(jax.grad(mlkr))(jax.numpy.asarray(L), prob))
        fd = np.zeros_like(L)
        h = 1e-6
        for idx in np.ndindex(*L.shape):
            E = np.zeros_like(L)
            E[idx] = h
            fd[idx] = (_naive_mlkr(L + E, X, t) - _naive_mlkr(L - E, X, t)) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
        # padding rows change nothing; far-away points do not underflow the normalisation
        pad = RegressionProblem(jax.numpy.asarray(np.vstack([X, np.zeros((7, 4))])), jax.numpy.asarray(np.r_[t, np.zeros(7)]),
                                jax.numpy.asarray(np.r_[np.ones(25), np.zeros(7)]))
        assert abs(float(mlkr(L, pad)) - float(mlkr(L, prob))) < 1e-12
        assert np.isfinite(float(mlkr(100.0 * L, prob)))


def test_mlkr_blocks_minibatches_and_candidates_follow_the_formula():
    # the blockwise loss (several anchor blocks, the last one padded) is the dense formula, with
    # the same gradient; anchors restrict the predicted rows, candidates the rows predicting them
    import jax

    from jaxdml.losses import RegressionProblem, mlkr

    rng = np.random.default_rng(1)
    X, t = rng.normal(size=(40, 3)), rng.normal(size=40)
    L = 0.7 * rng.normal(size=(2, 3))
    anchors, cands = np.array([3, 17, 17, 39]), np.array([0, 3, 5, 8, 21, 30])
    Z = X @ L.T

    def predicted(a, c):
        K = np.exp(-((Z[a][:, None] - Z[c][None]) ** 2).sum(-1)) * (a[:, None] != c[None, :])
        return np.mean((t[a] - K @ t[c] / K.sum(1)) ** 2)

    with jax.enable_x64(True):
        prob = RegressionProblem(jax.numpy.asarray(X), jax.numpy.asarray(t), jax.numpy.ones(40))
        value = jax.jit(mlkr, static_argnames="block_elements")
        grad = jax.jit(jax.grad(mlkr), static_argnames="block_elements")
        assert abs(float(value(L, prob, block_elements=7 * 40)) - _naive_mlkr(L, X, t)) < 1e-12
        np.testing.assert_allclose(grad(L, prob, block_elements=7 * 40), grad(L, prob), rtol=1e-10, atol=1e-13)
        assert abs(float(value(L, prob, anchors=anchors)) - predicted(anchors, np.arange(40))) < 1e-12
        got = float(value(L, prob, anchors=anchors, candidates=cands))
        assert abs(got - predicted(anchors, cands)) < 1e-12


def test_mlkr_fits_a_random_subsample_above_max_rows():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(300, 4))
    y = X[:, 0] - X[:, 1] ** 2 + 0.05 * rng.normal(size=300)
    kw = dict(loss="mlkr", early_stopping=False, random_state=3, max_iter=5)
    res = jaxdml.fit(X, y, max_rows=120, **kw)
    assert res.info["subsample"] and res.info["n_fitted_rows"] == 120
    from jaxdml.methods.core._sampling import stratified_subsample

    keep = stratified_subsample(np.zeros(300, int), 120, 3)  # one class: a uniform random subsample
    np.testing.assert_array_equal(res.L, jaxdml.fit(X[keep], y[keep], max_rows=None, **kw).L)
    whole = jaxdml.fit(X, y, **kw)  # "auto" keeps every row of a small data set
    assert not whole.info["subsample"] and whole.info["n_fitted_rows"] == 300
    with pytest.raises(ValueError, match="max_rows"):
        jaxdml.MLKR(max_rows=5).fit(X, y)


def _diabetes_r2(est):
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline

    X, y = load_diabetes(return_X_y=True)
    X = MinMaxScaler().fit_transform(X)
    cv = KFold(5, shuffle=True, random_state=0)
    return cross_val_score(make_pipeline(est, KNeighborsRegressor(5)), X, y, cv=cv, scoring="r2").mean()


def test_mlkr_fits_regression_targets():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = MinMaxScaler().fit_transform(X)
    res = jaxdml.fit(X, y, loss="mlkr", n_components=3, max_iter=30, early_stopping=False)
    assert res.L.shape == (3, X.shape[1]) and res.classes is None
    # the leave-one-out objective (standardised targets) falls well below its value at the start
    assert res.loss_history[-1] < 0.6 * res.loss_history[0]
    assert abs(res.loss - _naive_mlkr(res.L, X, (y - y.mean()) / y.std())) < 1e-4


@pytest.mark.slow
def test_mlkr_lowers_its_leave_one_out_regression_error_on_diabetes():
    # what MLKR optimises: the leave-one-out kernel regression error of the training targets. (Run
    # to convergence it overfits - the MLKR docstring states it - hence early stopping by default.)
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = MinMaxScaler().fit_transform(X)
    t = (y - y.mean()) / y.std()
    res = jaxdml.fit(X, y, loss="mlkr", early_stopping=False)
    assert _naive_mlkr(res.L, X, t) < 0.8 * _naive_mlkr(np.eye(X.shape[1]), X, t)


@pytest.mark.slow
def test_mlkr_early_stopping_returns_the_best_held_out_iterate():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = MinMaxScaler().fit_transform(X)
    est = jaxdml.MLKR(random_state=0).fit(X, y)
    assert est.converged_ and est.n_iter_ < 200
    # the same split, recomputed: the held-out Nadaraya-Watson error of the returned map is the
    # lowest one seen, and below the starting point's
    perm = np.random.RandomState(0).permutation(len(X))
    val, fit = np.sort(perm[:88]), np.sort(perm[88:])
    t = (y - y[fit].mean()) / y[fit].std()

    def heldout(L):
        Zf, Zv = X[fit] @ L.T, X[val] @ L.T
        K = np.exp(-((Zv[:, None] - Zf[None]) ** 2).sum(-1))
        return np.mean((t[val] - K @ t[fit] / K.sum(1)) ** 2)

    curve = est.result_.info["validation_error"]
    assert heldout(est.components_) == pytest.approx(curve.min(), rel=1e-6)
    assert curve.min() < curve[0] - 1e-3
    assert np.argmin(curve) <= len(curve) - 11  # stopped after 10 iterates without improvement


def test_mlkr_targets_are_checked():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="not numbers"):
        jaxdml.fit(X, np.array(["a"] * 5 + ["b"] * 5), loss="mlkr")
    with pytest.raises(ValueError, match="constant"):
        jaxdml.MLKR().fit(X, np.ones(10))
    with pytest.raises(ValueError, match="y is None"):
        jaxdml.fit(X, None, loss="mlkr")


# ---------------------------------------------------------------- MMC (= LSI)
def test_mmc_is_lsi_under_metric_learn_names(iris):
    X, y = iris
    X = X / X.max(0)
    lsi = jaxdml.LSI(max_iter=20).fit(X, y).metric_
    np.testing.assert_allclose(jaxdml.MMC(max_iter=20).fit(X, y).metric_, lsi, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jaxdml.fit(X, y, loss="mmc", max_iter=20).M, lsi, rtol=1e-12, atol=1e-14)
    a = jaxdml.fit(X, y, loss="lsi", max_iter=20, proj_iter=3).M
    np.testing.assert_allclose(jaxdml.fit(X, y, loss="mmc", max_iter=20, max_proj=3).M, a, rtol=1e-12, atol=1e-14)
    pairs = np.array([[0, 1], [0, 60], [50, 51], [100, 10], [120, 130], [3, 140]])
    similar = (y[pairs[:, 0]] == y[pairs[:, 1]]).astype(float)
    np.testing.assert_allclose(jaxdml.MMC(max_iter=10).fit(X, pairs=pairs, similar=similar).metric_,
                               jaxdml.LSI(max_iter=10).fit(X, pairs=pairs, similar=similar).metric_, rtol=1e-12)
    with pytest.raises(ValueError, match="proj_iter"):
        jaxdml.fit(X, y, loss="mmc", proj_iter=3)
