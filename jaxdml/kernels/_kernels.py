"""Kernel functions as ``jnp`` code, and the empirical kernel map used by kernel DML methods.

A kernel method learns ``A`` (n_components, n_train) so that ``L phi(x) = A k(x)`` with
``k(x) = (K(x_1, x), ..., K(x_N, x))`` (representer theorem). Where the mathematics allows, a
kernel method is the linear method applied to the kernel columns.
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from ..linalg import pairwise_sq_dists

__all__ = ["KERNELS", "kernel_matrix", "check_kernel_params", "feature_space_sq_dists"]

KERNELS = ("linear", "poly", "rbf", "laplacian")


def _linear(X, Y, gamma, degree, coef0):
    return X @ Y.T


def _poly(X, Y, gamma, degree, coef0):
    return (gamma * (X @ Y.T) + coef0) ** degree


def _rbf(X, Y, gamma, degree, coef0):
    # translated by a row of Y first (a real one: padding comes last): rows far from the origin keep their distances
    return jnp.exp(-gamma * pairwise_sq_dists(X, Y, translate="row"))


def _laplacian(X, Y, gamma, degree, coef0):
    # accumulate |x_f - y_f| one feature at a time: O(n m) memory, never (n, m, d)
    def add(f, acc):
        return acc + jnp.abs(X[:, f][:, None] - Y[:, f][None, :])

    d1 = jax.lax.fori_loop(0, X.shape[1], add, jnp.zeros((X.shape[0], Y.shape[0]), X.dtype))
    return jnp.exp(-gamma * d1)


_FUNCS = {"linear": _linear, "poly": _poly, "rbf": _rbf, "laplacian": _laplacian}


def _check_gram(K) -> None:
    """A callable kernel's training Gram matrix must be symmetric positive semidefinite.

    Kernel methods rely on ``K = Phi Phi^T`` (a feature space exists); an indefinite or
    non-symmetric "kernel" gives meaningless metrics, so it is rejected here. PSD up to round-off:
    Cholesky of ``K + eps I`` with ``eps = 1e-8 * max(diag K)`` (n^3 / 3 flops).
    """
    from ..exceptions import NonPSDError

    scale = max(float(np.abs(K).max()), 1e-300)
    asym = float(np.abs(K - K.T).max())
    if asym > 1e-8 * scale:
        raise ValueError(f"The kernel callable is not symmetric: max |K - K^T| = {asym:.3g} on the training "
                         f"data (max |K| = {scale:.3g}); a kernel must satisfy k(x, y) = k(y, x).")
    eps = 1e-8 * max(float(np.max(np.diag(K))), scale * 1e-8)
    try:
        np.linalg.cholesky(0.5 * (K + K.T) + eps * np.eye(len(K)))
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(0.5 * (K + K.T))[0])
        raise NonPSDError(
            f"The kernel callable is not positive semidefinite on the training data (smallest eigenvalue "
            f"of its Gram matrix {low:.3g}, largest |K| {scale:.3g}); kernel methods need a Mercer kernel."
        ) from None


def check_kernel_params(kernel, gamma, degree, coef0, n_features: int):
    """Validate and resolve kernel parameters; ``gamma=None`` means ``1 / n_features``."""
    if not (callable(kernel) or kernel in KERNELS):
        raise ValueError(f"kernel must be one of {KERNELS} or a callable k(X, Y) -> matrix; got {kernel!r}.")
    if gamma is None:
        gamma = 1.0 / max(n_features, 1)
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not gamma > 0 or not np.isfinite(gamma):
        raise ValueError(f"gamma must be a positive float; got {gamma!r}.")
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 1:
        raise ValueError(f"degree must be a positive int; got {degree!r}.")
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real) or not np.isfinite(coef0):
        raise ValueError(f"coef0 must be a finite float; got {coef0!r}.")
    return float(gamma), int(degree), float(coef0)


def kernel_matrix(X, Y=None, *, kernel="rbf", gamma=None, degree=3, coef0=1.0):
    """Kernel matrix ``K[i, j] = k(X[i], Y[j])`` (NumPy float64 in, NumPy float64 out).

    Kernels: ``linear`` ``<x, y>``, ``poly`` ``(gamma <x, y> + coef0)^degree``, ``rbf``
    ``exp(-gamma |x - y|^2)``, ``laplacian`` ``exp(-gamma |x - y|_1)``, or a callable
    ``k(X, Y) -> (n, m)``. Raises ``ValueError`` if the result is not finite.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    if callable(kernel):
        K = np.asarray(kernel(X, Y), dtype=np.float64)
        if K.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(f"The kernel callable returned shape {K.shape}; expected {(X.shape[0], Y.shape[0])}.")
        if Y is X and np.all(np.isfinite(K)):
            _check_gram(K)
    else:
        gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, X.shape[1])
        # rows are padded to bucket sizes so that new data of similar size (test folds) reuse
        # one compiled kernel instead of compiling per shape
        from ..problems import bucket_size

        n, m = X.shape[0], Y.shape[0]
        Xp = np.concatenate([X, np.zeros((bucket_size(n) - n, X.shape[1]))]) if n else X
        with jax.enable_x64(True):
            if Y is X:  # a Gram matrix: exactly symmetric (symmetrised in the compiled program)
                K = np.asarray(_jit_kernel(kernel, gram=True)(Xp, Xp, gamma, degree,
                                                               coef0))[:n, :n]
            else:
                Yp = np.concatenate([Y, np.zeros((bucket_size(m) - m, Y.shape[1]))]) if m else Y
                K = np.asarray(_jit_kernel(kernel)(Xp, Yp, gamma, degree, coef0))[:n, :m]
    if not np.all(np.isfinite(K)):
        raise ValueError(
            f"The {kernel if isinstance(kernel, str) else 'callable'} kernel produced non-finite values "
            "(overflow?); rescale the data or change gamma/degree/coef0."
        )
    return K


_JITTED = {}


def _gram(k, X, Y, gamma, degree, coef0):
    K = k(X, Y, gamma, degree, coef0)
    return 0.5 * (K + K.T)


def _jit_kernel(name, gram=False):
    if (name, gram) not in _JITTED:
        _JITTED[name, gram] = jax.jit(functools.partial(_gram, _FUNCS[name]) if gram else _FUNCS[name],
                                      static_argnums=(3,))
    return _JITTED[name, gram]


def feature_space_sq_dists(K):
    """``|phi(x_i) - phi(x_j)|^2 = K_ii + K_jj - 2 K_ij`` from a square kernel matrix."""
    K = np.asarray(K)
    d = np.diag(K)
    return np.maximum(d[:, None] + d[None, :] - 2.0 * K, 0.0)
