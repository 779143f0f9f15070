"""Closed-form (eigen-solver) methods: ANMM, DMLMJ and the kernel methods KDA, KANMM, KDMLMJ.

The host side does what cannot be traced (validation, neighbourhood search, kernel matrix,
padding rows to a bucket size so that folds of similar size reuse one executable); the maths
are the pure ``jnp`` functions of :mod:`jaxdml.eigen`, run in float64 through :func:`x64_call`.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from .._validation import Interval, Options
from ..eigen import (anmm_components, dmlmj_components, kanmm_components, kda_components,
                     kdmlmj_components)
from ..kernels import KERNELS, check_kernel_params, kernel_matrix
from ..problems import bucket_size
from ._api import SolverSpec, register_solver, x64_call
from ._result import KernelFittedMetric

__all__ = []

_POSITIVE_INT = [Interval(numbers.Integral, 1, None)]
_KERNEL_CONSTRAINTS = {
    "kernel": [Options(KERNELS), "callable"],
    "gamma": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "degree": [Interval(numbers.Integral, 1, None)],
    "coef0": [Interval(numbers.Real, None, None)],
}


# --------------------------------------------------------------------------- neighbourhoods
def _warn_small(codes, n_same, n_diff, names, owner):
    """Warn when a class cannot provide ``n_same`` classmates or ``n_diff`` other-class samples."""
    counts = np.bincount(codes)
    counts = counts[counts > 0]
    n = codes.size
    if n_same is not None and np.any(counts - 1 < n_same):
        warnings.warn(
            f"{owner}: {names[0]}={n_same} but the smallest class has {counts.min()} sample(s); samples of "
            f"classes with at most {n_same} members use all their classmates (average over fewer neighbours).",
            UserWarning, stacklevel=4,
        )
    if n_diff is not None and np.any(n - counts < n_diff):
        warnings.warn(
            f"{owner}: {names[1]}={n_diff} but the largest class leaves only {n - counts.max()} sample(s) of "
            "other classes; its samples use all of them.",
            UserWarning, stacklevel=4,
        )


def _nearest(D, k):
    """Indices of the ``k`` smallest entries of each row of ``D`` (ascending) and their finiteness."""
    kk = min(k, D.shape[1])
    if kk == 0:
        return np.zeros((D.shape[0], 0), dtype=np.int64), np.zeros((D.shape[0], 0), dtype=bool)
    part = np.argpartition(D, kk - 1, axis=1)[:, :kk] if kk < D.shape[1] else np.tile(np.arange(kk), (len(D), 1))
    order = np.argsort(np.take_along_axis(D, part, axis=1), axis=1, kind="stable")
    idx = np.take_along_axis(part, order, axis=1)
    return idx, np.isfinite(np.take_along_axis(D, idx, axis=1))


def _neighbourhoods(sq_dists, codes, n_same, n_diff, names, owner):
    """Nearest neighbours of every sample: ``n_same`` classmates (self excluded) and ``n_diff``
    samples of other classes, as ``(same_idx, same_mask, diff_idx, diff_mask)`` of shape (n, k).

    ``sq_dists(rows, cols)`` returns the squared distances between two index sets. Host-side
    NumPy, class by class and in blocks of rows (memory ``O(block * n)``). A sample whose class
    cannot provide the neighbours gets all there are (the remaining slots point at the sample
    itself with mask 0), with a warning.
    """
    _warn_small(codes, n_same, n_diff, names, owner)
    n = codes.size
    same_idx = np.tile(np.arange(n, dtype=np.int32)[:, None], (1, n_same))
    diff_idx = np.tile(np.arange(n, dtype=np.int32)[:, None], (1, n_diff))
    same_mask, diff_mask = np.zeros((n, n_same)), np.zeros((n, n_diff))
    block = max(1, (1 << 22) // max(n, 1))
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        others = np.flatnonzero(codes != c)
        cols = np.r_[members, others]
        m = members.size
        for a in range(0, m, block):
            rows = members[a:a + block]
            D = sq_dists(rows, cols)
            Ds = D[:, :m]
            Ds[np.arange(rows.size), np.arange(a, a + rows.size)] = np.inf  # the sample itself
            for D_, pool, idx, mask, k in ((Ds, members, same_idx, same_mask, n_same),
                                           (D[:, m:], others, diff_idx, diff_mask, n_diff)):
                j, ok = _nearest(D_, k)
                idx[rows, :j.shape[1]] = np.where(ok, pool[j], rows[:, None])
                mask[rows, :j.shape[1]] = ok
    return same_idx, same_mask, diff_idx, diff_mask


def _linear_neighbourhoods(X, codes, n_same, n_diff, names, owner):
    """Neighbourhoods by Euclidean distance (one GEMM per block)."""
    sq = np.einsum("ij,ij->i", X, X)

    def sq_dists(rows, cols):
        return np.maximum(sq[rows, None] + sq[None, cols] - 2.0 * X[rows] @ X[cols].T, 0.0)

    return _neighbourhoods(sq_dists, codes, n_same, n_diff, names, owner)


def _kernel_neighbourhoods(K, codes, n_same, n_diff, names, owner):
    """Neighbourhoods by feature-space distances ``K_ii + K_jj - 2 K_ij``."""
    diag = np.diag(K)

    def sq_dists(rows, cols):
        return np.maximum(diag[rows, None] + diag[None, cols] - 2.0 * K[np.ix_(rows, cols)], 0.0)

    return _neighbourhoods(sq_dists, codes, n_same, n_diff, names, owner)


def _pad_neighbourhoods(n, bucket, *arrays):
    """Pad (n, k) index/mask arrays to ``bucket`` rows: padding rows point at themselves, mask 0."""
    out = []
    for i, a in enumerate(arrays):
        if i % 2 == 0:  # indices
            pad = np.tile(np.arange(n, bucket, dtype=np.int32)[:, None], (1, a.shape[1]))
            out.append(np.concatenate([a.astype(np.int32), pad]))
        else:
            out.append(np.concatenate([a.astype(np.float64), np.zeros((bucket - n, a.shape[1]))]))
    return out


def _pad_rows(X, bucket):
    return np.concatenate([X, np.zeros((bucket - X.shape[0], X.shape[1]))]) if bucket > X.shape[0] else X


def _pad_square(K, bucket):
    n = K.shape[0]
    if bucket == n:
        return K
    Kp = np.zeros((bucket, bucket))
    Kp[:n, :n] = K
    return Kp


_FIT_ARGS = {"X", "codes", "n_classes", "n_components", "random_state", "max_iter", "tol", "verbose"}


def _strict(name):
    """Solver front end: reject unknown hyper-parameters, run with single-threaded BLAS.

    Unknown keywords raise a ValueError naming them; the wrapped signature stays visible to
    :func:`inspect.signature` (``jaxdml.fit`` uses it to decide which methods receive
    ``n_neighbors``). On the CPU, JAX's eigen/Cholesky kernels call the LAPACK of SciPy's
    OpenBLAS; with OpenBLAS's own threads competing with XLA's thread pool, an ``eigh`` of a
    576 x 576 matrix was measured 70x slower (4 s instead of 0.06 s) on a 2-core machine, so BLAS
    is limited to one thread while the solver runs (about 2 ms of overhead; no effect on GPUs).
    """

    def decorate(fn):
        accepted = set(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def solver(X, codes, n_classes, **kwargs):
            unknown = sorted(set(kwargs) - accepted)
            if unknown:
                raise ValueError(f"Unknown hyper-parameter(s) {unknown} for method {name!r}; it accepts "
                                 f"{sorted(accepted - _FIT_ARGS)}.")
            with threadpool_limits(limits=1, user_api="blas"):
                return fn(X, codes, n_classes, **kwargs)

        return solver

    return decorate


def _bucket(n, pad_to):
    """Rows after padding: ``bucket_size(n)`` ("auto"), ``n`` (None) or ``max(pad_to, n)``."""
    if pad_to is None:
        return n
    if isinstance(pad_to, str):
        return bucket_size(n)
    return max(int(pad_to), n)


# --------------------------------------------------------------------------- linear methods
@_strict("anmm")
def _anmm(X, codes, n_classes, *, n_components, n_friends=3, n_enemies=1, pad_to="auto", random_state=None,
          max_iter=None, tol=None, verbose=0):
    n, d = X.shape
    nb = _linear_neighbourhoods(X, codes, n_friends, n_enemies, ("n_friends", "n_enemies"), "ANMM")
    bucket = _bucket(n, pad_to)
    friends, fmask, enemies, emask = _pad_neighbourhoods(n, bucket, *nb)
    # all d rows are computed, then sliced: one compiled program serves every n_components
    L, w = x64_call(anmm_components, _pad_rows(X, bucket), friends, enemies, d, fmask, emask)
    return dict(L=L[:n_components], info=dict(eigenvalues=w, margin=float(w[:n_components].sum())))


def _dmlmj_scaling(reg):
    """reg=0 is the paper's DMLMJ (rows Sigma_S-normalised); reg > 0 adds the sqrt(lambda) scaling."""
    return "none" if float(reg) == 0.0 else "sqrt"


@_strict("dmlmj")
def _dmlmj(X, codes, n_classes, *, n_components, n_neighbors=3, reg=0.1, pad_to="auto", random_state=None,
           max_iter=None, tol=None, verbose=0):
    n, d = X.shape
    nb = _linear_neighbourhoods(X, codes, n_neighbors, n_neighbors, ("n_neighbors", "n_neighbors"), "DMLMJ")
    bucket = _bucket(n, pad_to)
    pos, pmask, neg, nmask = _pad_neighbourhoods(n, bucket, *nb)
    L, lam = x64_call(dmlmj_components, _pad_rows(X, bucket), pos, neg, d, float(reg), pmask, nmask,
                      scaling=_dmlmj_scaling(reg))
    top = lam[:n_components]
    return dict(L=L[:n_components], info=dict(eigenvalues=lam, objective=float(np.sum(top + 1.0 / top))))


register_solver(
    "anmm",
    SolverSpec(_anmm, constraints={"n_friends": _POSITIVE_INT, "n_enemies": _POSITIVE_INT}),
)
register_solver(
    "dmlmj",
    SolverSpec(_dmlmj, constraints={"n_neighbors": _POSITIVE_INT, "reg": [Interval(numbers.Real, 0, None)]}),
)


# --------------------------------------------------------------------------- kernel methods
def _training_kernel(X, kernel, gamma, degree, coef0):
    """Kernel matrix of the training data and the resolved kernel parameters (clear errors)."""
    if callable(kernel):
        params = {}
    else:
        g, dg, c0 = check_kernel_params(kernel, gamma, degree, coef0, X.shape[1])
        params = dict(gamma=g, degree=dg, coef0=c0)
    K = kernel_matrix(X, kernel=kernel, **params)  # raises ValueError on non-finite values
    if not np.allclose(K, K.T, rtol=1e-8, atol=1e-10 * max(np.abs(K).max(), 1e-300)):
        raise ValueError("The kernel matrix of the training data is not symmetric; a kernel must satisfy "
                         "k(x, y) = k(y, x).")
    return 0.5 * (K + K.T), params


def _kernel_result(A, n_components, X, kernel, params, info):
    """A :class:`KernelFittedMetric` with ``n_components`` rows of ``A`` (padding columns removed).

    Rows beyond the number of feature-space directions the data span (at most ``n_samples``)
    are zero.
    """
    n = X.shape[0]
    out = np.zeros((n_components, n))
    m = min(n_components, A.shape[0])
    out[:m] = A[:m, :n]
    return KernelFittedMetric(L=out, X_fit=np.array(X, dtype=np.float64), kernel=kernel, kernel_params=params,
                              info=info)


@_strict("kda")
def _kda(X, codes, n_classes, *, n_components, kernel="rbf", gamma=None, degree=3, coef0=1.0, reg=1e-6,
         pad_to="auto", random_state=None, max_iter=None, tol=None, verbose=0):
    n = X.shape[0]
    K, params = _training_kernel(X, kernel, gamma, degree, coef0)
    bucket = _bucket(n, pad_to)
    weights = np.r_[np.ones(n), np.zeros(bucket - n)]
    codes_p = np.r_[codes, np.zeros(bucket - n, dtype=codes.dtype)].astype(np.int32)
    A, lam = x64_call(kda_components, _pad_square(K, bucket), codes_p, n_classes - 1, n_classes, float(reg), weights)
    return _kernel_result(A, n_components, X, kernel, params, dict(eigenvalues=lam))


@_strict("kanmm")
def _kanmm(X, codes, n_classes, *, n_components, n_friends=3, n_enemies=1, kernel="rbf", gamma=None, degree=3,
           coef0=1.0, pad_to="auto", random_state=None, max_iter=None, tol=None, verbose=0):
    n = X.shape[0]
    K, params = _training_kernel(X, kernel, gamma, degree, coef0)
    nb = _kernel_neighbourhoods(K, codes, n_friends, n_enemies, ("n_friends", "n_enemies"), "KANMM")
    bucket = _bucket(n, pad_to)
    friends, fmask, enemies, emask = _pad_neighbourhoods(n, bucket, *nb)
    # all rows are computed, then sliced: the compiled program depends on the bucket size only
    A, w = x64_call(kanmm_components, _pad_square(K, bucket), friends, enemies, bucket, fmask, emask)
    return _kernel_result(A, n_components, X, kernel, params,
                          dict(eigenvalues=w, margin=float(w[:n_components].sum())))


@_strict("kdmlmj")
def _kdmlmj(X, codes, n_classes, *, n_components, n_neighbors=3, reg=0.1, kernel="rbf", gamma=None,
            degree=3, coef0=1.0, pad_to="auto", random_state=None, max_iter=None, tol=None, verbose=0):
    n = X.shape[0]
    K, params = _training_kernel(X, kernel, gamma, degree, coef0)
    nb = _kernel_neighbourhoods(K, codes, n_neighbors, n_neighbors, ("n_neighbors", "n_neighbors"), "KDMLMJ")
    bucket = _bucket(n, pad_to)
    pos, pmask, neg, nmask = _pad_neighbourhoods(n, bucket, *nb)
    A, lam = x64_call(kdmlmj_components, _pad_square(K, bucket), pos, neg, bucket, float(reg), pmask, nmask,
                      scaling=_dmlmj_scaling(reg))
    return _kernel_result(A, n_components, X, kernel, params, dict(eigenvalues=lam))


register_solver(
    "kda",
    SolverSpec(_kda, max_components=lambda d, c: c - 1,
               constraints={**_KERNEL_CONSTRAINTS, "reg": [Interval(numbers.Real, 0, None, closed="neither")]}),
)
register_solver(
    "kanmm",
    SolverSpec(_kanmm, constraints={**_KERNEL_CONSTRAINTS, "n_friends": _POSITIVE_INT, "n_enemies": _POSITIVE_INT}),
)
register_solver(
    "kdmlmj",
    SolverSpec(_kdmlmj, constraints={**_KERNEL_CONSTRAINTS, "n_neighbors": _POSITIVE_INT,
                                     "reg": [Interval(numbers.Real, 0, None)]}),
)
