"""The Nystrom landmark path of the kernel methods (``n_landmarks``).

References: the exact kernel methods (the landmark path with every training row a landmark must be
the exact method, float64 round-off), scikit-learn's ``Nystroem`` and kernel functions, and the kernel
matrix itself on the landmarks. Memory: a fit at an ``n`` whose ``n x n`` float64 matrix is 3.2 GB,
under a tight memory budget, watched by sampling the process's resident memory.
"""

import re
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import minmax_scale

import jaxdml
from jaxdml.kernels import kernel_matrix, kmeanspp_landmarks, nystrom_features, nystrom_map
from jaxdml.methods.core._landmarks import AUTO_EXACT_MAX, AUTO_LANDMARKS, resolve_landmarks

KERNEL_METHODS = ("kda", "kanmm", "kdmlmj", "kllda", "klmnn", "kodml", "kcmoml")


@pytest.fixture(scope="module")
def wine_small():
    X, y = load_wine(return_X_y=True)
    idx = np.r_[0:25, 59:84, 130:150]  # 70 samples of the three classes
    return minmax_scale(X)[idx], y[idx]


def sq_dists(T):
    s = np.einsum("ij,ij->i", T, T)
    return s[:, None] + s[None, :] - 2.0 * T @ T.T


# --------------------------------------------------------------------------- the Nystrom features
def test_nystrom_features_reproduce_the_kernel_on_the_landmarks(rng):
    X = rng.random((300, 4))
    Z = X[rng.choice(300, 40, replace=False)]
    W = kernel_matrix(Z, kernel="rbf", gamma=2.0)
    T, w = nystrom_map(W)
    assert T.shape == (40, 40) and w[-1] > 1e-6 * w[0]  # well conditioned: nothing dropped
    np.testing.assert_allclose(T.T @ W @ T, np.eye(40), atol=1e-9)
    Phi = nystrom_features(X, Z, T, kernel="rbf", kernel_params=dict(gamma=2.0), block=64)
    # exact on every landmark column: phi(x)^T phi(z) = k_Z(x)^T W^-1 W e_z = k(x, z)
    np.testing.assert_allclose(Phi @ nystrom_features(Z, Z, T, kernel="rbf", kernel_params=dict(gamma=2.0)).T,
                               rbf_kernel(X, Z, gamma=2.0), atol=1e-9)
    # scikit-learn's Nystroem on the same landmarks: the same approximate kernel (features differ by a rotation)
    sk = Nystroem(kernel="rbf", gamma=2.0, n_components=40, random_state=0).fit(Z).transform(X)
    np.testing.assert_allclose(Phi @ Phi.T, sk @ sk.T, atol=1e-8)
    # a callable kernel (host blocks)
    Phi_c = nystrom_features(X, Z, T, kernel=lambda A, B: rbf_kernel(A, B, gamma=2.0))
    np.testing.assert_allclose(Phi_c, Phi, atol=1e-10)


def test_nystrom_map_drops_the_null_space_of_a_singular_landmark_kernel(rng):
    X = rng.random((200, 3))
    Z = np.vstack([X[:10], X[:5]])  # duplicated landmarks: W is singular
    T, w = nystrom_map(kernel_matrix(Z, kernel="linear"))
    assert T.shape == (15, 3)  # the linear kernel of 3 features has rank 3
    Phi = nystrom_features(X, Z, T, kernel="linear")
    np.testing.assert_allclose(Phi @ Phi.T, X @ X.T, atol=1e-10)  # exact: Z spans the feature space
    with pytest.raises(ValueError, match="no positive eigenvalue"):
        nystrom_map(np.zeros((4, 4)))


def test_kmeanspp_landmarks(rng):
    X = rng.random((500, 3))
    p = dict(gamma=3.0)
    a = kmeanspp_landmarks(X, 50, kernel="rbf", kernel_params=p, random_state=0)
    assert a.shape == (50,) and np.all(np.diff(a) > 0)  # distinct rows, sorted
    np.testing.assert_array_equal(a, kmeanspp_landmarks(X, 50, kernel="rbf", kernel_params=p, random_state=0))
    assert not np.array_equal(a, kmeanspp_landmarks(X, 50, kernel="rbf", kernel_params=p, random_state=1))
    # the compiled loop against the host loop (a callable kernel) with the same draws
    host = kmeanspp_landmarks(X, 50, kernel=lambda A, B: rbf_kernel(A, B, gamma=3.0), random_state=0)
    np.testing.assert_array_equal(a, host)
    # D^2 sampling spreads the landmarks: the farthest row is closer than under a uniform sample
    def coverage(idx):
        return np.max(np.min(((X[:, None] - X[idx][None]) ** 2).sum(-1), axis=1))
    uniform = np.random.default_rng(0).choice(500, 50, replace=False)
    assert coverage(a) < coverage(uniform)
    # duplicated rows: every landmark is a distinct row, the duplicates drawn last
    Xd = np.repeat(X[:5], 100, axis=0)  # the shapes above: no second compilation
    idx = kmeanspp_landmarks(Xd, 50, kernel="rbf", kernel_params=p, random_state=0)
    assert len(set(idx)) == 50 and len({tuple(r) for r in Xd[idx]}) == 5


# --------------------------------------------------------------------------- the rule
def test_the_auto_rule_and_the_up_front_errors():
    assert resolve_landmarks("auto", AUTO_EXACT_MAX, "KDA") is None
    assert resolve_landmarks("auto", AUTO_EXACT_MAX + 1, "KDA") == AUTO_LANDMARKS
    assert resolve_landmarks("auto", 200_000, "KDA") == (1 << 30) // (8 * 200_000)  # 671: the 1 GiB budget
    with jaxdml.config.memory_budget(4 << 30):
        assert resolve_landmarks("auto", 200_000, "KDA") == AUTO_LANDMARKS
    assert resolve_landmarks(500, 300, "KDA") == 300 and resolve_landmarks(50, 300, "KDA") == 50
    assert resolve_landmarks(None, 300, "KDA") is None
    X, y = np.random.default_rng(0).random((200_000, 2)), np.arange(200_000) % 3
    # exact at 200 000 rows: terabytes of n x n matrices; refused before the kernel is formed
    with pytest.raises(ValueError, match=r"needs about .* GiB .* n_landmarks='auto'"):
        jaxdml.fit(X, y, loss="kda", n_landmarks=None)
    with pytest.raises(ValueError, match=re.escape("n_landmarks=1000000000 on 200000 training rows needs about")):
        jaxdml.KANMM(n_landmarks=10**9).fit(X, y)
    with jaxdml.config.memory_budget(1 << 20), pytest.raises(ValueError, match="memory budget .*set_memory_budget"):
        jaxdml.fit(X[:5000], y[:5000], loss="kllda")
    for bad in (0, -3, 2.5, "all"):
        with pytest.raises(ValueError, match="'n_landmarks' parameter"):
            jaxdml.KDA(n_landmarks=bad).fit(X[:50], y[:50])


# --------------------------------------------------------------------------- against the exact methods
#: the default suite checks two closed forms (KDA's own landmark problem, KLLDA's features as coordinates);
#: the others compile heavier programs (5-15 s of CPU each)
_SLOW = pytest.mark.slow
EXACT_CASES = [("kda", "rbf", {}),
               pytest.param("kanmm", "laplacian", {"n_components": 3, "eigen_solver": "dense"}, marks=_SLOW),
               pytest.param("kdmlmj", "poly", {"n_components": 3, "eigen_solver": "dense"}, marks=_SLOW),
               ("kllda", "rbf", {"n_components": 3}),
               pytest.param("klmnn", "rbf", {"max_iter": 8}, marks=_SLOW),
               pytest.param("kodml", "laplacian", {"max_iter": 8}, marks=_SLOW),
               pytest.param("kcmoml", "linear", {"max_iter": 8, "neighborhood_size": 10}, marks=_SLOW)]


@pytest.mark.parametrize("loss, kernel, kw", EXACT_CASES, ids=KERNEL_METHODS)
def test_every_row_a_landmark_is_the_exact_method(wine_small, x64, loss, kernel, kw):
    """The landmark path with every training row a landmark (features = the kernel coordinates) gives the
    exact method's embedding, up to float64 round-off (compared by the embedded distances, which do not
    depend on the signs of the rows)."""
    _every_row_a_landmark_is_exact(*wine_small, loss=loss, kernel=kernel, **kw)


def _every_row_a_landmark_is_exact(X, y, **kw):
    """Fit exactly and with every row a landmark; assert the two embeddings agree; return the exact fit."""
    exact = jaxdml.fit(X, y, n_landmarks=None, **kw)
    lm = jaxdml.fit(X, y, n_landmarks=len(X), **kw)
    assert lm.info["n_landmarks"] == len(X) and "n_landmarks" not in exact.info
    np.testing.assert_array_equal(lm.X_fit, X)
    D_exact, D_lm = sq_dists(exact.transform(X)), sq_dists(lm.transform(X))
    np.testing.assert_allclose(D_lm, D_exact, rtol=1e-7, atol=1e-8 * np.abs(D_exact).max())
    return exact


def test_fewer_landmarks_keep_only_the_landmarks(wine_small):
    X, y = wine_small
    est = jaxdml.KDA(n_landmarks=30, random_state=0).fit(X, y)
    assert est.components_.shape == (2, 30) and est.X_fit_.shape == (30, X.shape[1])
    idx = est.result_.info["landmarks"]
    np.testing.assert_array_equal(est.X_fit_, X[idx])
    new = X[::3] + 0.01
    np.testing.assert_allclose(est.transform(new), rbf_kernel(new, est.X_fit_, gamma=1 / X.shape[1]) @ est.components_.T,
                               rtol=1e-7, atol=1e-10)
    # the landmarks follow random_state (an estimator fitted twice agrees with itself)
    again = jaxdml.KDA(n_landmarks=30, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.result_.info["landmarks"], idx)
    other = jaxdml.KDA(n_landmarks=30, random_state=1).fit(X, y).result_.info["landmarks"]
    assert not np.array_equal(other, idx)


# --------------------------------------------------------------------------- memory
def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


class _PeakRSS:
    """The largest resident memory of this process while the block runs (sampled every 2 ms)."""

    def __enter__(self):
        self.base = self.peak = _rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


@pytest.mark.parametrize("loss, kw", [("kda", {}), pytest.param("kanmm", {"n_components": 2}, marks=_SLOW),
                                      pytest.param("kodml", {"max_iter": 2, "max_rows": None}, marks=_SLOW)])
def test_the_landmark_path_never_forms_an_n_by_n_matrix(loss, kw):
    """20 000 rows (every row fitted: KODML's ``max_rows=None``): one n x n float64 matrix is 3.2 GB. Under a 24 MiB memory budget ("auto" then keeps
    the n x m features within it: 157 landmarks, and the searches work in blocks of that size) the fit's
    resident memory grows by far less than a quarter of that."""
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.random((n, 3))
    y = (X[:, 0] * 4).astype(int)
    with jaxdml.config.memory_budget(24 << 20), _PeakRSS() as rss:
        fitted = jaxdml.fit(X, y, loss=loss, kernel="rbf", **kw)
    assert fitted.info["n_landmarks"] == (24 << 20) // (8 * n) == fitted.X_fit.shape[0]
    assert rss.peak - rss.base < 8 * n * n / 4, (rss.peak - rss.base) / 2**20


@pytest.mark.parametrize("loss, kernel", [("kanmm", "laplacian"), ("kdmlmj", "poly")])
def test_small_landmark_and_truncated_paths_of_the_graph_methods(wine_small, x64, loss, kernel):
    """The default suite's check of KANMM's and KDMLMJ's landmark and block-Krylov paths, on 35 rows
    (the slow tests above and in test_truncated_eigen run them at full size): every row a landmark is
    the exact method, and the truncated solver's leading eigenvalues are the dense solver's."""
    X, y = wine_small[0][::2], wine_small[1][::2]
    exact = _every_row_a_landmark_is_exact(X, y, loss=loss, kernel=kernel, n_components=3, eigen_solver="dense")
    trunc = jaxdml.fit(X, y, loss=loss, kernel=kernel, n_components=2, eigen_solver="truncated")
    assert trunc.info["eigen_solver"]["solver"] == "block Krylov"
    np.testing.assert_allclose(trunc.info["eigenvalues"], exact.info["eigenvalues"][:2], rtol=1e-6)
