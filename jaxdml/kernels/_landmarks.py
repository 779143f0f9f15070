"""Landmarks for kernel methods on large data: the Nystrom feature map, never an ``n x n`` kernel.

With ``m`` landmarks ``Z`` (rows of the training data) and ``W = K(Z, Z)``, the Nystrom features

.. math:: \\Phi(x) = T^T k_Z(x), \\qquad k_Z(x) = (k(z_1, x), \\dots, k(z_m, x)), \\qquad
          T = U \\Lambda^{-1/2}

(``W = U Lambda U^T``, eigenvalues below ``tol`` times the largest dropped: a truncated
pseudo-inverse square root, so a singular ``W`` is regularised without changing the kept directions)
satisfy :math:`\\Phi(x)^T \\Phi(y) = k_Z(x)^T W^{+} k_Z(y)`, the Nystrom approximation of
:math:`k(x, y)`; it is exact when ``x`` or ``y`` is a landmark (up to the dropped directions), and
when the landmarks are all training rows the features are the kernel coordinates of the exact
methods (:func:`jaxdml.eigen.kernel_coordinates`: :math:`K U \\Lambda^{-1/2} = U \\Lambda^{1/2}`).
A linear map ``L`` learned on the features is the kernel map ``A k_Z(x)`` with ``A = L T^T``
(``m`` coefficients per output, on the landmarks).

Memory is ``O(n m)``: the kernel columns of the training rows are formed ``block`` rows at a time
and multiplied by ``T`` at once; landmark selection touches one kernel column per landmark.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..linalg import symmetrize
from ._kernels import _FUNCS, kernel_matrix

__all__ = ["kmeanspp_landmarks", "nystrom_map", "nystrom_features", "LANDMARK_TOL"]

#: eigenvalues of ``K(Z, Z)`` below this fraction of the largest are dropped (as the exact methods
#: drop those of ``K``)
LANDMARK_TOL = 1e-10


def _diag(k, X, gamma, degree, coef0):
    """``k(x_i, x_i)`` for every row (one row at a time: no ``n x n``)."""
    return jax.vmap(lambda x: k(x[None, :], x[None, :], gamma, degree, coef0)[0, 0])(X)


def _d2_sampling_step(d2, ok, u):
    """The next landmark: drawn with probability proportional to ``d2`` among the rows ``ok``
    (uniformly among them when every ``d2`` there is 0: the rest duplicates the landmarks)."""
    p = jnp.where(ok, d2, 0.0)
    p = jnp.where(jnp.sum(p) > 0, p, ok.astype(d2.dtype))
    c = jnp.cumsum(p)
    i = jnp.searchsorted(c, u * c[-1], side="right")
    return jnp.minimum(i, d2.shape[0] - 1).astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("degree", "name", "m"))
def _kmeanspp(X, valid, uniforms, gamma, degree, coef0, *, name: str, m: int):
    k = _FUNCS[name]
    diag = _diag(k, X, gamma, degree, coef0)

    def d2_to(i):
        z = X[i][None, :]
        return jnp.maximum(diag + diag[i] - 2.0 * k(X, z, gamma, degree, coef0)[:, 0], 0.0)

    first = _d2_sampling_step(jnp.ones_like(diag), valid, uniforms[0])
    chosen = jnp.zeros(X.shape[0], bool).at[first].set(True)
    idx = jnp.zeros(m, jnp.int32).at[0].set(first)

    def body(j, state):
        idx, d2, chosen = state
        i = _d2_sampling_step(d2, valid & ~chosen, uniforms[j])
        return idx.at[j].set(i), jnp.minimum(d2, d2_to(i)), chosen.at[i].set(True)

    idx, _, _ = jax.lax.fori_loop(1, m, body, (idx, d2_to(first), chosen))
    return idx


def _kmeanspp_host(X, m, kernel, uniforms):
    """The same rule for a callable kernel (one kernel column per landmark, on the host)."""
    n = X.shape[0]
    diag = np.array([float(np.asarray(kernel(x[None, :], x[None, :]))[0, 0]) for x in X])
    ok = np.ones(n, bool)
    d2 = np.ones(n)
    idx = np.zeros(m, np.int64)
    for j in range(m):
        p = np.where(ok, d2, 0.0)
        if not p.sum() > 0:
            p = ok.astype(float)
        c = np.cumsum(p)
        i = min(int(np.searchsorted(c, uniforms[j] * c[-1], side="right")), n - 1)
        idx[j], ok[i] = i, False
        col = np.asarray(kernel(X, X[i][None, :]), dtype=np.float64)[:, 0]
        d2 = np.minimum(d2 if j else np.inf, np.maximum(diag + diag[i] - 2.0 * col, 0.0))
    return idx


def kmeanspp_landmarks(X, m: int, *, kernel="rbf", kernel_params=None, random_state=None):
    """Indices of ``m`` landmark rows of ``X``, sorted: k-means++ seeding in the kernel's feature space.

    The first landmark is a uniformly drawn row; each next one is drawn with probability proportional
    to its squared feature-space distance :math:`k(x, x) + k(z, z) - 2 k(x, z)` to the nearest
    landmark so far (D^2 sampling, Arthur & Vassilvitskii 2007), never a row already chosen. Spread
    landmarks give a Nystrom approximation close to the best rank-``m`` one (Oglic & Gartner, ICML
    2017). ``O(n m d)`` time, ``O(n)`` memory; reproducible from ``random_state`` (scikit-learn's
    forms). Runs in float64.
    """
    from sklearn.utils import check_random_state

    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if not 1 <= m <= n:
        raise ValueError(f"the number of landmarks must be between 1 and the number of rows ({n}); got {m}.")
    uniforms = check_random_state(random_state).uniform(size=m)
    if callable(kernel):
        return np.sort(_kmeanspp_host(X, m, kernel, uniforms))
    from ..problems import bucket_size

    p = kernel_params or {}
    bucket = bucket_size(n)  # rows padded (never drawn): folds of similar size share the program
    Xp = np.concatenate([X, np.zeros((bucket - n, X.shape[1]))])
    valid = np.arange(bucket) < n
    with jax.enable_x64(True):
        idx = _kmeanspp(Xp, valid, uniforms, float(p.get("gamma", 1.0)), coef0=float(p.get("coef0", 1.0)),
                        degree=int(p.get("degree", 3)), name=kernel, m=int(m))
        return np.sort(np.asarray(idx, dtype=np.int64))


@jax.jit
def _map(W, tol):
    w, Q = jnp.linalg.eigh(symmetrize(W))
    w, Q = w[::-1], Q[:, ::-1]
    keep = w > tol * jnp.maximum(w[0], jnp.finfo(w.dtype).tiny)
    return Q * jnp.where(keep, 1.0 / jnp.sqrt(jnp.where(keep, w, 1.0)), 0.0)[None, :], keep, w


def nystrom_map(W, tol: float = LANDMARK_TOL):
    """``T = U Lambda^{-1/2}`` on the kept eigenvalues of the landmark kernel ``W`` (float64).

    Returns
    -------
    T : (m, r) ndarray, ``r`` the number of eigenvalues of ``W`` above ``tol`` times the largest
        (``T^T W T = I_r``).
    eigenvalues : (m,) ndarray, descending.
    Raises ``ValueError`` when ``W`` has no positive eigenvalue.
    """
    with jax.enable_x64(True):
        T, keep, w = (np.asarray(a) for a in _map(np.asarray(W, dtype=np.float64), float(tol)))
    r = int(keep.sum())
    if r == 0:
        raise ValueError("The kernel matrix of the landmarks has no positive eigenvalue (it is zero or not "
                         "positive semidefinite); check the kernel.")
    return np.ascontiguousarray(T[:, :r]), w


@functools.partial(jax.jit, static_argnames=("degree", "name"))
def _features_block(Xb, Z, T, gamma, degree, coef0, *, name: str):
    K = _FUNCS[name](Xb, Z, gamma, degree, coef0)
    return K if T is None else K @ T


def nystrom_features(X, Z, T=None, *, kernel="rbf", kernel_params=None, block: int | None = None):
    """The Nystrom features ``Phi = K(X, Z) T`` (n, r) as a float64 NumPy array (``T=None``: the kernel
    columns ``K(X, Z)`` themselves), ``block`` rows of kernel columns at a time (default: as many as hold
    ``2**22`` kernel entries; all blocks have one shape, so one compiled program serves them)."""
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape[0], Z.shape[0]
    block = int(min(max(1, (1 << 22) // max(m, 1)), n)) if block is None else int(block)
    out = np.empty((n, m if T is None else T.shape[1]))
    if callable(kernel):
        for a in range(0, n, block):
            Kb = kernel_matrix(X[a:a + block], Z, kernel=kernel)
            out[a:a + block] = Kb if T is None else Kb @ T
        return out
    p = kernel_params or {}
    with jax.enable_x64(True):
        Zd = jax.device_put(np.asarray(Z, np.float64))
        Td = None if T is None else jax.device_put(np.asarray(T, np.float64))
        for a in range(0, n, block):
            Xb = X[a:a + block]
            if Xb.shape[0] < block:  # the last block padded: the same compiled program
                Xb = np.concatenate([Xb, np.zeros((block - Xb.shape[0], X.shape[1]))])
            Fb = _features_block(Xb, Zd, Td, float(p.get("gamma", 1.0)), coef0=float(p.get("coef0", 1.0)),
                                 degree=int(p.get("degree", 3)), name=kernel)
            out[a:a + block] = np.asarray(Fb)[:min(block, n - a)]
    if not np.all(np.isfinite(out)):
        raise ValueError(f"The {kernel} kernel produced non-finite values (overflow?); rescale the data or change "
                         "gamma/degree/coef0.")
    return out
