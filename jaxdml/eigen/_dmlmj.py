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
from ._truncated import leading_eigh

__all__ = ["dmlmj_components", "kdmlmj_components", "kdmlmj_components_truncated"]


def _pair_weights(idx, mask, dtype):
    m = jnp.ones(idx.shape, dtype) if mask is None else mask.astype(dtype)
    return m / jnp.maximum(jnp.sum(m), 1.0)


@functools.partial(jax.jit, static_argnames=("n_components", "use_factor", "scaling", "slotwise"))
def dmlmj_components(X, positive_idx, negative_idx, n_components: int, reg=0.1, positive_mask=None,
                     negative_mask=None, feature_mask=None, use_factor: bool = True, scaling: str = "sqrt",
                     span_tol=1e-10, slotwise: bool = False):
    r"""DMLMJ: the map maximising the Jeffrey divergence between the neighbour-difference spaces.

    .. math::
        \max_L J(L) = \operatorname{tr}\big((L \Sigma_S L^T)^{-1} (L \Sigma_D L^T)
                     + (L \Sigma_D L^T)^{-1} (L \Sigma_S L^T)\big),

    :math:`\Sigma_S = \frac{1}{|S|}\sum_i \sum_{j \in V_k^+(x_i)} (x_i - x_j)(x_i - x_j)^T` over
    the ``k``-positive neighbourhoods ``positive_idx`` (same class, self excluded) and
    :math:`\Sigma_D` likewise over the ``k``-negative ones ``negative_idx``. ``J`` is twice the
    Jeffrey divergence between the zero-mean Gaussians of the projected differences, plus ``2 d'``.
    Both covariances are shrunk by the same ridge,
    :math:`\Sigma_\bullet + \epsilon \frac{\operatorname{tr}\Sigma_S}{r} I` with
    :math:`\epsilon` = ``reg`` (``r``: the number of coordinates, or of ``feature_mask`` ones).
    By seed thm:eigen_trace_ratio_sym_opt the rows of ``L`` are eigenvectors of
    :math:`\Sigma_S^{-1}\Sigma_D` (:math:`\Sigma_D v = \lambda \Sigma_S v`) with the largest
    :math:`\lambda + 1/\lambda`. They are computed by whitening :math:`\Sigma_S` through the SVD of
    its factor (the weighted neighbour differences stacked over the ridge rows), which stays
    accurate when :math:`\Sigma_S` is ill-conditioned.

    Directions without data: the problem is solved on the span of :math:`\Sigma_S + \Sigma_D`
    (eigenvalues above ``span_tol`` times the largest). Directions where both difference spaces
    vanish (a constant column; in a kernel space the direction of the mean) carry no
    information: they get :math:`\lambda = 1` (the least discriminative value, so they are
    ranked last) and zero rows, for every ``reg`` (without this, ``reg=0`` would give them
    :math:`\lambda \approx 0` and rank them first). Directions where :math:`\Sigma_S` alone
    vanishes (:math:`\lambda = \infty`; typical in kernel spaces, where the class-separating
    directions have no same-class spread) are ranked first, with :math:`\Sigma_S` floored at
    ``1e-14`` (factor path) / ``1e-12`` (Cholesky path) of its scale; ``reg > 0`` is the remedy.

    Scaling of the rows (``J`` is invariant to it, k-NN is not):

    * ``scaling="none"`` - the paper's (and pyDML's) solution: eigenvectors
      :math:`\Sigma_S`-normalised (:math:`L \Sigma_S L^T = I`), so that at full dimension
      :math:`M = L^T L = \Sigma_S^{-1}` on the span of the data (0 on the directions without
      data). With ``reg=0`` this is exactly Nguyen et al.'s DMLMJ; ``jaxdml.fit(loss="dmlmj",
      reg=0)`` uses it.
    * ``scaling="sqrt"`` (default; used by ``jaxdml.fit`` when ``reg > 0``) - a departure from
      the paper: each :math:`\Sigma_S`-normalised eigenvector is multiplied by
      :math:`\sqrt{\lambda}`, so :math:`L \Sigma_S L^T = \Lambda` and
      :math:`L \Sigma_D L^T = \Lambda^2`. The embedding whitens same-class neighbour differences
      and then stretches every direction by the square root of its ratio of different-class to
      same-class neighbour variance; directions where other classes are closer than one's own
      (:math:`\lambda < 1`) are shrunk. At full dimension
      :math:`M = \Sigma_S^{-1}\Sigma_D\Sigma_S^{-1}` (the paper's :math:`M = \Sigma_S^{-1}` ignores
      :math:`\Sigma_D` at full dimension). Together with the ridge (``reg=0.1``) this is the
      library's default, chosen for k-NN accuracy; ``reg=0`` returns to the paper.

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
    scaling : {"sqrt", "none"} (static)
        Row scaling, see above (``"none"``: the paper's).
    span_tol : float
        Relative eigenvalue of :math:`\Sigma_S + \Sigma_D` below which a direction has no data.
    slotwise : bool (static)
        Neighbour scatters without the ``(n, k, d)`` gather (:func:`neighbourhood_scatter`).

    Returns
    -------
    L : (n_components, d) array (zero rows for directions without data).
    eigenvalues : (d,) the :math:`\lambda` of all eigenvectors, ordered by decreasing
        :math:`\lambda + 1/\lambda` (the first ``n_components`` belong to the rows of ``L``);
        directions without data come last, with :math:`\lambda = 1`.

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
    if scaling not in ("sqrt", "none"):
        raise ValueError(f"scaling must be 'sqrt' or 'none'; got {scaling!r}.")
    wp = _pair_weights(positive_idx, positive_mask, dt)
    wn = _pair_weights(negative_idx, negative_mask, dt)
    r = d if feature_mask is None else jnp.maximum(jnp.sum(feature_mask), 1.0)
    Sigma_D = neighbourhood_scatter(X, negative_idx, wn, slotwise)
    if use_factor:
        F = (jnp.sqrt(wp)[:, :, None] * (X[:, None, :] - X[positive_idx])).reshape(-1, d)
        Sigma_S = symmetrize(F.T @ F)
    else:
        Sigma_S = neighbourhood_scatter(X, positive_idx, wp, slotwise)
    scale = jnp.trace(Sigma_S) / r
    scale = jnp.where(scale > 0, scale, jnp.maximum(jnp.trace(Sigma_D) / r, 1.0))
    ridge = reg * scale
    # The data's span: directions where both difference spaces vanish (a constant column, the
    # kernel's mean direction) carry no information. They are solved as a separate identity block
    # (lambda = 1, the least discriminative value) and get zero rows.
    Q, keep = _difference_span(Sigma_S, Sigma_D, span_tol)
    inner = keep[:, None] & keep[None, :]
    Dq = jnp.where(inner, symmetrize(Q.T @ Sigma_D @ Q), 0.0) + jnp.diag(jnp.where(keep, ridge, 1.0))
    if use_factor:
        factor = jnp.concatenate([jnp.where(keep[None, :], F @ Q, 0.0),
                                  jnp.diag(jnp.where(keep, jnp.sqrt(ridge), 1.0))], axis=0)
        lam, V = generalized_eigh(Dq, B_factor=factor, n_components=d, reg=1e-14)
    else:
        # Cholesky whitening: one n^3/3 factorisation instead of an eigendecomposition (the ridge
        # keeps the matrix well conditioned; a small floor covers reg=0)
        B = jnp.where(inner, symmetrize(Q.T @ Sigma_S @ Q), 0.0)
        B = B + jnp.diag(jnp.where(keep, ridge + 1e-12 * scale, 1.0))
        C = jnp.linalg.cholesky(B)
        W = solve_triangular(C, solve_triangular(C, Dq, lower=True).T, lower=True)
        lam, U = jnp.linalg.eigh(symmetrize(W))
        lam, V = lam[::-1], sign_flip(solve_triangular(C.T, U[:, ::-1], lower=False))
    # eigenvectors of the no-data block: lambda 1, ranked last, zero rows
    empty = jnp.sum(jnp.where(keep[:, None], 0.0, V * V), axis=0) > jnp.sum(jnp.where(keep[:, None], V * V, 0.0), axis=0)
    lam = jnp.where(empty, 1.0, jnp.maximum(lam, jnp.finfo(dt).tiny))
    score = jnp.where(empty, -jnp.inf, lam + 1.0 / lam)
    order = jnp.argsort(-score)
    lam, V, empty = lam[order], V[:, order], empty[order]
    V = Q @ jnp.where(keep[:, None] & ~empty[None, :], V, 0.0)
    rows = V[:, :n_components].T
    if scaling == "sqrt":
        rows = jnp.sqrt(lam[:n_components])[:, None] * rows
    return rows, lam


def _difference_span(Sigma_S, Sigma_D, rtol):
    """Orthonormal eigenvectors ``Q`` of ``Sigma_S + Sigma_D`` and the mask of those with data."""
    t, Q = jnp.linalg.eigh(symmetrize(Sigma_S + Sigma_D))
    keep = t > rtol * jnp.maximum(t[-1], jnp.finfo(t.dtype).tiny)
    return Q, keep


@functools.partial(jax.jit, static_argnames=("n_components", "scaling"))
def kdmlmj_components(K, positive_idx, negative_idx, n_components: int, reg=0.1, positive_mask=None,
                      negative_mask=None, tol=1e-10, scaling: str = "sqrt"):
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
    positive_idx, negative_idx, n_components, reg, positive_mask, negative_mask, scaling
        As in :func:`dmlmj_components` (``scaling="none"`` with ``reg=0``: the paper's KDMLMJ,
        whose :math:`\Sigma_S` is usually singular on the span of the data in an RBF feature
        space - see there; use ``reg > 0`` with such kernels).
    tol : float
        Kernel eigenvalues below ``tol`` times the largest are treated as zero, and so are
        directions of :math:`\Sigma_S + \Sigma_D` below ``tol`` times its largest eigenvalue
        (the mean direction, which no difference vector spans).

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
                              keep, use_factor=False, scaling=scaling, span_tol=tol)
    return L @ T.T, lam


@jax.jit
def _kdmlmj_pencils(K, positive_idx, negative_idx, positive_mask, negative_mask, reg, n_rows, jitter):
    """Cholesky coordinates ``C`` of ``K``, the ridged difference covariance ``Sigma_{D,rho}`` and the
    Cholesky factors ``R``, ``R_D`` of ``Sigma_{S,rho}``, ``Sigma_{D,rho}`` (two ``n x n`` products and
    three factorisations; the whitened pencils are applied, never formed)."""
    n = K.shape[0]
    dt = K.dtype
    scale_k = jnp.maximum(jnp.trace(K) / n_rows, jnp.finfo(dt).tiny)
    C = jnp.linalg.cholesky(symmetrize(K) + jitter * scale_k * jnp.eye(n, dtype=dt))
    Sigma_S = neighbourhood_scatter(C, positive_idx, _pair_weights(positive_idx, positive_mask, dt))
    Sigma_D = neighbourhood_scatter(C, negative_idx, _pair_weights(negative_idx, negative_mask, dt))
    scale = jnp.trace(Sigma_S) / n_rows
    ridge = reg * jnp.where(scale > 0, scale, jnp.maximum(jnp.trace(Sigma_D) / n_rows, 1.0))
    eye = jnp.eye(n, dtype=dt)
    R = jnp.linalg.cholesky(Sigma_S + ridge * eye)
    RD = jnp.linalg.cholesky(Sigma_D + ridge * eye)
    # W = R^{-1} Sigma_D,rho R^{-T} = P P^T and W^{-1} = M^T M with M = R_D^{-1} R, P = M^{-1} (both
    # triangular): every Krylov product is two matrix products, no triangular solve per iteration
    M = solve_triangular(RD, R, lower=True)
    P = solve_triangular(M, eye, lower=True)
    # |W| <= |P|_1 |P|_inf and |W^{-1}| <= |M|_1 |M|_inf (norm bounds of the factors)
    bound_w = jnp.max(jnp.sum(jnp.abs(P), axis=0)) * jnp.max(jnp.sum(jnp.abs(P), axis=1))
    bound_inv = jnp.max(jnp.sum(jnp.abs(M), axis=0)) * jnp.max(jnp.sum(jnp.abs(M), axis=1))
    return C, R, M, P, bound_w, bound_inv


def _gram_apply(F, X):
    """``F F^T X`` (``W = P P^T``)."""
    return F @ (F.T @ X)


def _inverse_gram_apply(F, X):
    """``F^T F X`` (``W^{-1} = M^T M``)."""
    return F.T @ (F @ X)


def kdmlmj_components_truncated(K, positive_idx, negative_idx, n_components: int, reg=0.1, positive_mask=None,
                                negative_mask=None, n_rows=None, scaling: str = "sqrt", jitter=1e-10,
                                solver: str = "truncated"):
    r"""KDMLMJ without dense eigendecompositions (``reg > 0``): the ``n_components`` best directions.

    The problem of :func:`kdmlmj_components` in the coordinates of a Cholesky factor
    :math:`C C^T = K + \epsilon \bar k I` (instead of the eigenvectors of ``K``): with the ridged
    difference covariances :math:`\Sigma_{S,\rho}, \Sigma_{D,\rho}` and :math:`\Sigma_{S,\rho} = R R^T`,
    the generalised eigenvalues are those of :math:`W = R^{-1}\Sigma_{D,\rho}R^{-T}`. DMLMJ ranks them
    by :math:`\lambda + 1/\lambda`, so both ends matter: the ``n_components`` largest eigenpairs of ``W``
    and of :math:`W^{-1} = (R_D^{-1}R)^T(R_D^{-1}R)` (:math:`\Sigma_{D,\rho} = R_D R_D^T`) are computed by
    :func:`leading_eigh` (block Krylov, residual-checked; ``W = P P^T`` and ``W^{-1} = M^T M`` are
    applied through their triangular factors, never formed), merged and ranked. Directions without data
    (padding, the null space of ``K``, the mean direction) have :math:`\lambda = 1`, the lowest score,
    as in the dense path. ``n_rows``: the number of real (unpadded) rows of ``K`` (the ridge's scale).

    Returns
    -------
    A : (n_components, n) array.
    eigenvalues : (n_components,) the :math:`\lambda`, by decreasing :math:`\lambda + 1/\lambda`.
    info : dict from :func:`leading_eigh` (the worse of the two runs).
    """
    n = K.shape[0]
    n_rows = float(n if n_rows is None else n_rows)
    pm = jnp.ones(positive_idx.shape, K.dtype) if positive_mask is None else positive_mask
    nm = jnp.ones(negative_idx.shape, K.dtype) if negative_mask is None else negative_mask
    C, R, M, P, bound_w, bound_inv = _kdmlmj_pencils(K, positive_idx, negative_idx, pm, nm, reg, n_rows, jitter)
    big, Ub, info_b = leading_eigh(P, n_components, solver=solver, apply=_gram_apply, shape=(n, K.dtype),
                                   scale=bound_w)
    inv, Us, info_s = leading_eigh(M, n_components, solver=solver, apply=_inverse_gram_apply,
                                   shape=(n, K.dtype), scale=bound_inv)
    lam = jnp.concatenate([big, 1.0 / jnp.maximum(inv, jnp.finfo(K.dtype).tiny)])
    U = jnp.concatenate([Ub, Us], axis=1)
    order = jnp.argsort(-(lam + 1.0 / lam))[:n_components]
    lam, U = lam[order], U[:, order]
    V = solve_triangular(R.T, U, lower=False)
    At = solve_triangular(C.T, V, lower=False)
    rows = sign_flip(At).T
    if scaling == "sqrt":
        rows = jnp.sqrt(lam)[:, None] * rows
    info = info_b if info_b["max_residual"] >= info_s["max_residual"] else info_s
    return rows, lam, dict(info)
