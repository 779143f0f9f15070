"""pyDML's algorithms: GMML, LLDA, KLLDA against independent computations; IMLS's behaviour."""

import numpy as np
import pytest
import scipy.linalg as sla
from sklearn.datasets import load_iris, load_wine
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.neighbors import KNeighborsClassifier

import jaxdml
from jaxdml.eigen import gmml_metric


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    return X, y


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X / X.max(0), y


def _naive_pair_scatters(X, y):
    """Sums over every pair i < j, enumerated."""
    d = X.shape[1]
    S, D, ns, nd = np.zeros((d, d)), np.zeros((d, d)), 0, 0
    for i in range(len(X)):
        diff = X[i] - X[i + 1:]
        same = y[i + 1:] == y[i]
        S += diff[same].T @ diff[same]
        D += diff[~same].T @ diff[~same]
        ns += same.sum()
        nd += (~same).sum()
    return S / ns, D / nd


# ---------------------------------------------------------------------------------------------- GMML
def test_gmml_is_the_riccati_solution_and_the_sqrtm_geometric_mean(wine):
    X, y = wine
    S, D = _naive_pair_scatters(X, y)
    lam = 1e-2
    A = jaxdml.GMML(reg=lam).fit(X, y).metric_
    lam_abs = lam * np.trace(S) / X.shape[1]
    Sl, Dl = S + lam_abs * np.eye(13), D + lam_abs * np.eye(13)
    # the Riccati characterisation of the midpoint: A S A = D
    np.testing.assert_allclose(A @ Sl @ A, Dl, rtol=1e-8, atol=1e-10 * np.abs(Dl).max())
    # an independent geometric mean: S^{-1/2} (S^{1/2} D S^{1/2})^{1/2} S^{-1/2}, with scipy's sqrtm
    Sh = np.real(sla.sqrtm(Sl))
    Sih = np.linalg.inv(Sh)
    ref = Sih @ np.real(sla.sqrtm(Sh @ Dl @ Sh)) @ Sih
    np.testing.assert_allclose(A, ref, rtol=1e-7, atol=1e-9 * np.abs(ref).max())


def test_gmml_geodesic_end_points_and_prior(wine):
    X, y = wine
    S, D = _naive_pair_scatters(X, y)
    scale = np.trace(S) / 13
    P = np.diag(np.linspace(0.5, 2.0, 13))
    lam = 0.3
    Sl, Dl = S + lam * scale * np.linalg.inv(P), D + lam * scale * P
    np.testing.assert_allclose(gmml_metric(S, D, 0.0, lam, P), np.linalg.inv(Sl), rtol=1e-8)
    np.testing.assert_allclose(gmml_metric(S, D, 1.0, lam, P), Dl, rtol=1e-8)
    A = jaxdml.GMML(t=0.3, reg=lam, prior=P).fit(X, y).metric_
    # A = Sl^{-1} #_t Dl: in the whitened frame of Sl^{-1}, a plain matrix power
    w, U = np.linalg.eigh(np.linalg.inv(Sl))
    R = (U * np.sqrt(w)) @ U.T
    Ri = np.linalg.inv(R)
    w2, U2 = np.linalg.eigh(Ri @ Dl @ Ri)
    np.testing.assert_allclose(A, R @ ((U2 * w2 ** 0.3) @ U2.T) @ R, rtol=1e-7)


def test_gmml_from_pairs_and_fit_by_name(wine):
    X, y = wine
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, len(X), size=(300, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sim = (y[pairs[:, 0]] == y[pairs[:, 1]]).astype(int)
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]
    S = diff[sim == 1].T @ diff[sim == 1] / sim.sum()
    D = diff[sim == 0].T @ diff[sim == 0] / (sim == 0).sum()
    A = jaxdml.GMML().fit(X, pairs=pairs, similar=sim).metric_
    np.testing.assert_allclose(A, gmml_metric(S, D, 0.5, 1e-6), rtol=1e-8)
    res = jaxdml.fit(X, y, loss="gmml")
    np.testing.assert_allclose(res.M, jaxdml.GMML().fit(X, y).metric_, rtol=1e-10)
    with pytest.raises(ValueError, match="similar and dissimilar"):
        jaxdml.GMML().fit(X, pairs=pairs[sim == 1], similar=sim[sim == 1])


def test_gmml_sampled_constraints_are_label_pairs(wine):
    """``n_constraints`` from labels: that many similar and dissimilar pairs, drawn as
    jaxdml.problems.pairs_from_labels draws them for the same seed; GMML of their scatters."""
    from jaxdml.problems import pairs_from_labels

    X, y = wine
    est = jaxdml.GMML(n_constraints=40, random_state=0).fit(X, y)
    a, b, s = pairs_from_labels(y, n_similar=40, n_dissimilar=40, random_state=0)
    assert np.all((y[a] == y[b]) == (s == 1)) and s.sum() == 40 and len(s) == 80
    diff = X[a] - X[b]
    S = diff[s == 1].T @ diff[s == 1] / 40
    D = diff[s == 0].T @ diff[s == 0] / 40
    info = est.result_.info
    assert (info["n_similar"], info["n_dissimilar"]) == (40, 40)
    np.testing.assert_allclose(info["similar_scatter"], S, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(est.metric_, gmml_metric(S, D, 0.5, 1e-6), rtol=1e-8)
    other = jaxdml.GMML(n_constraints=40, random_state=1).fit(X, y).metric_
    assert not np.allclose(other, est.metric_)


def test_gmml_rejects_bad_priors_and_labels_without_similar_pairs(wine):
    from jaxdml.exceptions import NonPSDError

    X, y = wine
    X = X[:, :3]
    bad = [([["a", "b", "c"]] * 3, ValueError, r"numeric \(3, 3\) matrix"),
           (np.eye(4), ValueError, r"finite \(3, 3\) matrix; got shape \(4, 4\)"),
           (np.diag([1.0, np.nan, 1.0]), ValueError, r"finite \(3, 3\) matrix; got shape \(3, 3\)"),
           (np.triu(np.ones((3, 3))), ValueError, "must be symmetric"),
           (np.diag([1.0, 0.0, 2.0]), NonPSDError, "positive definite; its smallest eigenvalue is 0"),
           (np.diag([1.0, -1.0, 2.0]), NonPSDError, "smallest eigenvalue is -1")]
    for prior, exc, msg in bad:
        with pytest.raises(exc, match=msg):
            jaxdml.GMML(prior=prior).fit(X, y)
    # a symmetric prior given as nested lists is used as given
    P = [[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]
    np.testing.assert_allclose(jaxdml.GMML(prior=P).fit(X, y).metric_,
                               jaxdml.GMML(prior=np.array(P)).fit(X, y).metric_, rtol=1e-12)
    with pytest.raises(ValueError, match="every class has a single sample; there is no similar pair"):
        jaxdml.fit(X[:6], np.arange(6), loss="gmml")


# ---------------------------------------------------------------------------------------------- LLDA
def _naive_local_scatters(X, y, k, affinity="local-scaling"):
    n, d = X.shape
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    A = np.zeros((n, n))
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        Dc = D2[np.ix_(idx, idx)]
        kk = min(k, len(idx) - 1)
        sig2 = np.sort(Dc, axis=1)[:, kk]
        if affinity == "local-scaling":
            sig = np.sqrt(sig2)
            A[np.ix_(idx, idx)] = np.exp(-Dc / np.outer(sig, sig))
        else:
            N = (Dc <= sig2[:, None] * (1 + 1e-9)).astype(float)
            A[np.ix_(idx, idx)] = 0.5 * (N + N.T)
    counts = np.bincount(y)[y]
    same = y[:, None] == y[None, :]
    Ww = np.where(same, A / counts[:, None], 0.0)
    Wb = np.where(same, A * (1.0 / n - 1.0 / counts[:, None]), 1.0 / n)
    Sw, Sb = np.zeros((d, d)), np.zeros((d, d))
    for i in range(n):
        diff = X[i] - X
        Sw += 0.5 * (diff * Ww[i][:, None]).T @ diff
        Sb += 0.5 * (diff * Wb[i][:, None]).T @ diff
    return Sb, Sw


@pytest.mark.parametrize("affinity", ["local-scaling", "neighbors"])
def test_llda_solves_the_local_fisher_pencil(iris, affinity):
    X, y = iris
    Sb, Sw = _naive_local_scatters(X, y, 7, affinity)
    w, V = sla.eigh(Sb, Sw)
    w, V = w[::-1], V[:, ::-1]
    est = jaxdml.LLDA(n_components=3, affinity=affinity).fit(X, y)
    np.testing.assert_allclose(est.eigenvalues_, w[:3], rtol=1e-7)
    L = est.components_
    # the same S_w-normalised eigenvectors, up to sign
    signs = np.sign(np.sum(L * V[:, :3].T, axis=1))
    np.testing.assert_allclose(L * signs[:, None], V[:, :3].T, rtol=1e-6, atol=1e-8 * np.abs(V).max())
    np.testing.assert_allclose(L @ Sw @ L.T, np.eye(3), atol=1e-8)
    np.testing.assert_allclose(jaxdml.fit(X, y, loss="llda", n_components=3, affinity=affinity).L, L, atol=1e-12)


def test_kllda_with_the_linear_kernel_is_ridged_llda(iris):
    X, y = iris
    X = X - X.mean(0)
    reg = 1e-3
    est = jaxdml.KLLDA(n_components=2, kernel="linear", reg=reg, eigen_solver="dense").fit(X, y)
    Sb, Sw = _naive_local_scatters(X, y, 7)
    rho = reg * np.trace(Sw) / len(X)
    w, V = sla.eigh(Sb, Sw + rho * np.eye(X.shape[1]))
    w, V = w[::-1], V[:, ::-1]
    np.testing.assert_allclose(est.result_.info["eigenvalues"], w[:2], rtol=1e-6)
    E, ref = est.transform(X), X @ V[:, :2]
    signs = np.sign(np.sum(E * ref, axis=0))
    np.testing.assert_allclose(E * signs, ref, rtol=1e-5, atol=1e-7 * np.abs(ref).max())


# ---------------------------------------------------------------------------------------------- IMLS
def _imbalanced(seed=0):
    rng = np.random.default_rng(seed)
    Xa = rng.normal(size=(180, 4))
    Xb = rng.normal(size=(20, 4)) + np.array([2.0, 0, 0, 0])
    Xb[:, 3] *= 0.2
    X = np.vstack([Xa, Xb])
    return X, np.r_[np.zeros(180, int), np.ones(20, int)]


def test_imls_one_iteration_is_knn_under_the_first_metric(iris):
    X, y = iris
    imls = jaxdml.IMLS("lda", max_iter=1, n_selected=5).fit(X[::2], y[::2])  # a jaxdml method by name
    lda = jaxdml.fit(X[::2], y[::2], loss="lda")
    ref = KNeighborsClassifier(3).fit(lda.transform(X[::2]), y[::2]).predict(lda.transform(X[1::2]))
    np.testing.assert_array_equal(imls.predict(X[1::2]), ref)
    assert imls.neighbourhoods(X[1::2])[0]["n_iter"] == 1


def test_imls_votes_with_all_training_rows_under_the_final_metric():
    """Repeated feature vectors (ties at every distance): the vote is k-NN over the whole training set
    under the last metric, not over the class-balanced selection (which would drop the majority of a
    tied group)."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 3, size=(12, 3)).astype(float)
    X = base[rng.integers(0, 12, size=300)]
    y = (X.sum(1) + (rng.random(300) < 0.25) > 3).astype(int)  # noisy labels: tied groups of mixed classes
    imls = jaxdml.IMLS(LinearDiscriminantAnalysis(), n_selected=5, max_iter=3).fit(X[:240], y[:240])
    last = imls.neighbourhoods(X[240:])[0]["metric_learner"]
    Zt, Zq = last.transform(X[:240]), last.transform(X[240:])
    D = ((Zq[:, None, :] - Zt[None, :, :]) ** 2).sum(-1)  # repeated rows: exactly equal distances
    near = np.argsort(D, axis=1, kind="stable")[:, :3]  # equal distances: the earlier training row first
    votes = np.stack([(y[:240][near] == c).sum(1) for c in (0, 1)], axis=1) / 3.0
    np.testing.assert_array_equal(imls.predict_proba(X[240:]), votes)
    np.testing.assert_array_equal(imls.predict(X[240:]), np.argmax(votes, axis=1))


def test_imls_selection_is_balanced_and_per_sample_matches_single_rows():
    X, y = _imbalanced()
    Xt, _ = _imbalanced(1)
    # any estimator with fit/transform (scikit-learn's LDA: nothing to compile)
    imls = jaxdml.IMLS(LinearDiscriminantAnalysis(), n_selected=5, max_iter=4).fit(X, y)
    sel = imls._select(imls.metric_learner_, Xt[:7])
    counts = np.bincount(y[sel], minlength=2)
    assert counts[1] >= 5 and counts[0] >= 5 and sel.size <= 7 * 10
    per = jaxdml.IMLS(LinearDiscriminantAnalysis(), n_selected=5, max_iter=4, per_sample=True).fit(X, y)
    proba = per.predict_proba(Xt[:4])
    for i in range(4):
        np.testing.assert_allclose(proba[i], imls.predict_proba(Xt[i:i + 1])[0])
    its = [g["n_iter"] for g in per.neighbourhoods(Xt[:4])]
    assert len(its) == 4 and all(1 <= i <= 4 for i in its)
    assert set(imls.predict(Xt)) <= {0, 1}
    with pytest.raises(ValueError, match="metric_learner"):
        jaxdml.IMLS(object()).fit(X, y)
