"""Distance Metric Learning through the Maximization of the Jeffrey divergence (DMLMJ, KDMLMJ)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from ..linalg import symmetrize
from ._anmm import neighbourhood_scatter
from ._common import generalized_eigh, sign_flip
from ._kda import kernel_coordinates

__all__ = ["dmlmj_components", "kdmlmj_components"]


def _pair_weights(idx, mask, dtype):
    m = jnp.ones(idx.shape, dtype) if mask is None else mask.astype(dtype)
    return m / jnp.maximum(jnp.sum(m), 1.0)


@functools.partial(jax.jit, static_argnames=("n_components", "use_factor"))
def dmlmj_components(X, positive_idx, negative_idx, n_components: int, reg=0.1, positive_mask=None,
                     negative_mask=None, feature_mask=None, use_factor: bool = True):
    r"""DMLMJ: the map maximising the Jeffrey divergence between the neighbour-difference spaces.

    .. math::
        \max_L J(L) = \operatorname{tr}\big((L \Sigma_S L^T)^{-1} (L \Sigma_D L^T)
                     + (L \Sigma_D L^T)^{-1} (L \Sigma_S L^T)\big),

    :math:`\Sigma_S = \frac{1}{|S|}\sum_i \sum_{j \in V_k^+(x_i)} (x_i - x_j)(x_i - x_j)^T` over
    the ``k``-positive neighbourhoods ``positive_idx`` (same class, self excluded) and
    :math:`\Sigma_D` likewise over the ``k``-negative ones ``negative_idx``. ``J`` is twice the
    Jeffrey divergence between the zero-mean Gaussians of the projected differences, plus ``2 d'``.
    Both covariances are shrunk by the same ridge,
    :math:`\Sigma_\bullet + \epsilon \frac{\operatorname{tr}\Sigma_S}{d} I` with
    :math:`\epsilon` = ``reg`` (this makes :math:`\Sigma_S` invertible and, being common to both,
    leaves directions without data at :math:`\lambda = 1`, i.e. non-discriminative). By seed
    thm:eigen_trace_ratio_sym_opt the rows of ``L`` are eigenvectors of
    :math:`\Sigma_S^{-1}\Sigma_D` (:math:`\Sigma_D v = \lambda \Sigma_S v`) with the largest
    :math:`\lambda + 1/\lambda`. They are computed by whitening :math:`\Sigma_S` through the SVD of
    its factor (the weighted neighbour differences stacked over the ridge rows), which stays
    accurate when :math:`\Sigma_S` is ill-conditioned.

    Scaling of the rows (``J`` is invariant to it, k-NN is not): each eigenvector is
    :math:`\Sigma_S`-normalised and multiplied by :math:`\sqrt{\lambda}`, so
    :math:`L \Sigma_S L^T = \Lambda` and :math:`L \Sigma_D L^T = \Lambda^2`. The embedding whitens
    same-class neighbour differences and then stretches every direction by the square root of its
    ratio of different-class to same-class neighbour variance; directions where other classes
    are closer than one's own (:math:`\lambda < 1`) are shrunk. At full dimension
    :math:`M = \Sigma_S^{-1}\Sigma_D\Sigma_S^{-1}` (pure whitening would give
    :math:`M = \Sigma_S^{-1}` and ignore :math:`\Sigma_D` altogether).

    Parameters
    ----------
    X : (n, d) array
    positive_idx, negative_idx : (n, k) int arrays
        Neighbourhoods (host-side search; see ``jaxdml.fit(loss="dmlmj")``).
    n_components : int (static)
    reg : float
        Relative ridge :math:`\epsilon`.
    positive_mask, negative_mask : (n, k) arrays, optional
        0 for missing neighbours / padding rows.
    feature_mask : (d,) array, optional
        0 for coordinates without data (the ridge scale then averages over the others only).
    use_factor : bool (static)
        Whiten :math:`\Sigma_S` through the SVD of its factor (accurate even when ill-conditioned)
        or through the Cholesky factor of the ridged matrix (cheaper when ``d`` is large, as for
        kernel coordinates).

    Returns
    -------
    L : (n_components, d) array.
    eigenvalues : (d,) the :math:`\lambda` of all eigenvectors, ordered by decreasing
        :math:`\lambda + 1/\lambda` (the first ``n_components`` belong to the rows of ``L``).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> from jaxdml.eigen import dmlmj_components
    >>> X = jnp.asarray(np.random.default_rng(0).normal(size=(6, 3)))
    >>> pos = jnp.array([[1], [0], [3], [2], [5], [4]])
    >>> neg = jnp.array([[2], [3], [4], [5], [0], [1]])
    >>> dmlmj_components(X, pos, neg, 2)[0].shape
    (2, 3)

    References
    ----------
    B. Nguyen, C. Morell, B. De Baets. Supervised distance metric learning through maximization of
    the Jeffrey divergence. Pattern Recognition 64 (2017), 215-225.
    """
    n, d = X.shape
    dt = X.dtype
    wp = _pair_weights(positive_idx, positive_mask, dt)
    wn = _pair_weights(negative_idx, negative_mask, dt)
    r = d if feature_mask is None else jnp.maximum(jnp.sum(feature_mask), 1.0)
    Sigma_D = neighbourhood_scatter(X, negative_idx, wn)
    if use_factor:
        F = (jnp.sqrt(wp)[:, :, None] * (X[:, None, :] - X[positive_idx])).reshape(-1, d)
        Sigma_S = symmetrize(F.T @ F)
    else:
        Sigma_S = neighbourhood_scatter(X, positive_idx, wp)
    scale = jnp.trace(Sigma_S) / r
    scale = jnp.where(scale > 0, scale, jnp.maximum(jnp.trace(Sigma_D) / r, 1.0))
    ridge = reg * scale
    eye = jnp.eye(d, dtype=dt)
    if use_factor:
        factor = jnp.concatenate([F, jnp.sqrt(ridge) * eye], axis=0)
        lam, V = generalized_eigh(Sigma_D + ridge * eye, B_factor=factor, n_components=d, reg=1e-14)
    else:
        # Cholesky whitening: one n^3/3 factorisation instead of an eigendecomposition (the ridge
        # keeps the matrix well conditioned; a tiny floor covers reg=0)
        B = Sigma_S + (ridge + 1e-12 * scale) * eye
        C = jnp.linalg.cholesky(B)
        W = solve_triangular(C, solve_triangular(C, Sigma_D + ridge * eye, lower=True).T, lower=True)
        lam, U = jnp.linalg.eigh(symmetrize(W))
        lam, V = lam[::-1], sign_flip(solve_triangular(C.T, U[:, ::-1], lower=False))
    lam = jnp.maximum(lam, jnp.finfo(dt).tiny)
    order = jnp.argsort(-(lam + 1.0 / lam))
    lam, V = lam[order], V[:, order]
    L = jnp.sqrt(lam[:n_components])[:, None] * V[:, :n_components].T
    return L, lam


@functools.partial(jax.jit, static_argnames=("n_components",))
def kdmlmj_components(K, positive_idx, negative_idx, n_components: int, reg=0.1, positive_mask=None,
                      negative_mask=None, tol=1e-10):
    r"""KDMLMJ: DMLMJ in the feature space of a kernel, returned as coefficients ``A``.

    The seed's matrices :math:`U, V` of the kernel columns satisfy
    :math:`J(L) = \operatorname{tr}((AUA^T)^{-1}(AVA^T) + (AVA^T)^{-1}(AUA^T))` for
    :math:`L\phi(x) = A k(x)`. This function applies :func:`dmlmj_components` to the kernel
    coordinates ``Z`` (:func:`kernel_coordinates`, ``Z Z^T = K``) and maps back,
    ``A = L_Z T^T``: the same objective, with the ridge (and its scale) defined in the feature
    space, so that the linear kernel reproduces DMLMJ exactly. Rows of ``A`` satisfy
    :math:`V_\epsilon a = \lambda U_\epsilon a` with :math:`U_\epsilon = U + \epsilon\tau K`,
    :math:`V_\epsilon = V + \epsilon\tau K` restricted to the span of the kernel columns.
    Neighbourhoods come from feature-space distances :math:`K_{ii} + K_{jj} - 2K_{ij}`.

    Parameters
    ----------
    K : (n, n) kernel matrix of the training data.
    positive_idx, negative_idx, n_components, reg, positive_mask, negative_mask
        As in :func:`dmlmj_components`.
    tol : float
        Kernel eigenvalues below ``tol`` times the largest are treated as zero.

    Returns
    -------
    A : (n_components, n) array; embed new data with ``K(X_new, X_fit) @ A.T``.
    eigenvalues : (n,) as in :func:`dmlmj_components` (dropped directions have :math:`\lambda = 1`).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> from jaxdml.eigen import kdmlmj_components
    >>> X = np.random.default_rng(0).normal(size=(6, 3))
    >>> K = jnp.asarray(np.exp(-((X[:, None] - X[None]) ** 2).sum(-1)))
    >>> pos = jnp.array([[1], [0], [3], [2], [5], [4]])
    >>> neg = jnp.array([[2], [3], [4], [5], [0], [1]])
    >>> kdmlmj_components(K, pos, neg, 2)[0].shape
    (2, 6)

    References
    ----------
    B. Nguyen, C. Morell, B. De Baets. Supervised distance metric learning through maximization of
    the Jeffrey divergence. Pattern Recognition 64 (2017), 215-225.
    """
    Z, T, keep = kernel_coordinates(K, tol)
    L, lam = dmlmj_components(Z, positive_idx, negative_idx, n_components, reg, positive_mask, negative_mask,
                              keep, use_factor=False)
    return L @ T.T, lam
