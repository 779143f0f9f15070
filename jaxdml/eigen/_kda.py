"""Kernel Discriminant Analysis (KDA) and the kernel coordinates shared by the kernel methods."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from ..linalg import symmetrize
from ._common import class_means, sign_flip

__all__ = ["kda_components", "kernel_coordinates"]


def kernel_coordinates(K, tol=1e-10):
    r"""Coordinates of the training points in an orthonormal basis of their span in feature space.

    With :math:`K = Q \Lambda Q^T`, ``Z = Q Lambda^{1/2}`` satisfies :math:`Z Z^T = K` (row ``i``
    is :math:`\phi(x_i)` in that basis) and ``T = Q Lambda^{-1/2}`` maps kernel columns to the same
    coordinates: :math:`z(x) = T^T k(x)`. A linear map ``L_Z`` learned on ``Z`` is the feature-space
    map :math:`A k(x)` with ``A = L_Z T^T``. Eigenvalues below ``tol`` times the largest (the null
    space of a singular kernel matrix, and round-off) are dropped: their columns of ``Z`` and
    ``T`` are zero and ``keep`` marks the others. Shapes stay static (``n x n``) for ``jit``.

    Returns
    -------
    Z, T : (n, n) arrays.
    keep : (n,) array of 0/1 (float), the retained directions (first, by decreasing eigenvalue).
    """
    w, Q = jnp.linalg.eigh(symmetrize(K))
    w, Q = w[::-1], Q[:, ::-1]
    keep = w > tol * jnp.maximum(w[0], jnp.finfo(w.dtype).tiny)
    ws = jnp.where(keep, w, 1.0)
    Z = Q * jnp.where(keep, jnp.sqrt(ws), 0.0)[None, :]
    T = Q * jnp.where(keep, 1.0 / jnp.sqrt(ws), 0.0)[None, :]
    return Z, T, keep.astype(K.dtype)


@functools.partial(jax.jit, static_argnames=("n_components", "n_classes"))
def kda_components(K, codes, n_components: int, n_classes: int, reg=1e-6, weights=None):
    r"""KDA: discriminant analysis in the feature space of a kernel (coefficients ``A``).

    With :math:`L\phi(x) = A k(x)` the problem (seed, eq:kda) becomes

    .. math::
        \max_A \operatorname{tr}\big((A V A^T)^{-1} (A U A^T)\big), \quad
        U = \sum_c N_c (U_c - U_\mu)(U_c - U_\mu)^T, \quad
        V = \sum_c K_c \big(I - \tfrac{1}{N_c}\mathbb{1}\big) K_c^T,

    where :math:`U_c` (``U_mu``) is the mean of the kernel columns of class ``c`` (of all
    samples): ``U`` and ``V`` are LDA's between- and within-class scatter of the kernel columns.
    By seed thm:eigen_trace_ratio_opt the rows of ``A`` are the leading eigenvectors of
    :math:`V^{-1} U`. ``V`` is singular (rank at most ``n - n_classes``), so it is regularised,
    :math:`V_\epsilon = V + \epsilon \frac{\operatorname{tr} V}{n} I` with :math:`\epsilon` =
    ``reg``. ``U`` has rank at most ``n_classes - 1``, so the problem is solved in that subspace:
    with the Cholesky factor :math:`V_\epsilon = C C^T` and :math:`U = H H^T`
    (``H`` n x n_classes), the leading left singular vectors ``P`` of :math:`C^{-1} H` give
    :math:`A^T = C^{-T} P`, exact eigenvectors of :math:`V_\epsilon^{-1} U` at the cost of one
    Cholesky factorisation (no ``n x n`` eigendecomposition). Rows are scaled to unit
    within-class variance per sample, :math:`A V_\epsilon A^T = n I` (as for LDA).

    ``K`` may also be the ``(n, m)`` kernel columns ``K(X, Z)`` of ``m`` landmarks ``Z``: the same
    problem with the coefficients restricted to the landmarks (``A`` is ``(n_components, m)``; the
    scatters are ``m x m``; with every training row a landmark it is the problem above).

    Parameters
    ----------
    K : (n, n) kernel matrix of the training data, or its (n, m) columns of landmarks.
    codes : (n,) int class codes in ``[0, n_classes)``.
    n_components : int
        At most ``n_classes - 1`` (static).
    n_classes : int (static)
    reg : float
        Ridge added to ``V``, relative to its mean eigenvalue.
    weights : (n,) array, optional
        0 for padding rows/columns of ``K``, 1 otherwise.

    Returns
    -------
    A : (n_components, n) (or (n_components, m)) array; embed new data with ``K(X_new, X_fit) @ A.T``.
    eigenvalues : (n_classes,) eigenvalues of :math:`V_\epsilon^{-1} U`, descending (the last is 0).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> from jaxdml.eigen import kda_components
    >>> X = np.random.default_rng(0).normal(size=(9, 2))
    >>> K = jnp.asarray(np.exp(-((X[:, None] - X[None]) ** 2).sum(-1)))
    >>> A, lam = kda_components(K, jnp.arange(9) % 3, 2, 3)
    >>> A.shape
    (2, 9)

    References
    ----------
    S. Mika, G. Ratsch, J. Weston, B. Scholkopf, K.-R. Muller. Fisher discriminant analysis with
    kernels. IEEE Neural Networks for Signal Processing IX, 1999.
    """
    n_all = K.shape[0]
    w = jnp.ones(n_all, K.dtype) if weights is None else weights.astype(K.dtype)
    n = jnp.sum(w)
    means, counts = class_means(K, codes, n_classes, w)  # K is symmetric: rows are the columns
    mu = (w @ K) / n
    H = ((means - mu[None, :]) * jnp.sqrt(counts)[:, None]).T  # (n, c), U = H H^T
    R = (K - means[codes]) * w[:, None]  # within-class residuals of the kernel columns
    V = symmetrize(R.T @ R)
    scale = jnp.trace(V) / n  # mean eigenvalue per sample; K's diagonal if classes are points
    scale = jnp.where(scale > 0, scale, jnp.maximum(jnp.trace(K) / n, 1.0))
    ridge = reg * scale
    C = jnp.linalg.cholesky(V + ridge * jnp.eye(K.shape[1], dtype=K.dtype))
    P, s, _ = jnp.linalg.svd(solve_triangular(C, H, lower=True), full_matrices=False)
    At = solve_triangular(C.T, P[:, :n_components], lower=False)
    return sign_flip(At).T * jnp.sqrt(n), s * s
