"""Information Theoretic Metric Learning (Davis, Kulis, Jain, Sra & Dhillon, 2007).

Pure ``jnp`` pieces: the LogDet divergence, the ITML objective with slack and the constraint values.
The solver, cyclic Bregman projections with rank-one updates, is :func:`jaxdml.solvers.itml_bregman`;
host-side constraint construction (pairs from labels, bounds from percentiles) lives in
:mod:`jaxdml.methods.weak._itml`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..linalg import symmetrize

__all__ = [
    "logdet_divergence",
    "itml_objective",
    "itml_constraints",
]


def logdet_divergence(A, B):
    r"""LogDet (Burg matrix) divergence between symmetric positive definite matrices.

    .. math::

        D_{\ell d}(A \,\|\, B) = \operatorname{tr}(A B^{-1}) - \log\det(A B^{-1}) - d

    It is the Bregman divergence of :math:`\phi(M) = -\log\det M` (seed, appendix "Information
    theory"); it is 0 iff ``A == B`` and finite only for positive definite ``A`` (``+inf`` is
    returned otherwise).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from jaxdml.losses import logdet_divergence
    >>> float(logdet_divergence(2 * jnp.eye(3), jnp.eye(3)))  # 3*2 - 3*log 2 - 3
    0.920558...
    """
    A = symmetrize(A)
    B = symmetrize(B)
    cb = jnp.linalg.cholesky(B)
    # C = R^-1 A R^-T (B = R R^T) has the eigenvalues w of A B^-1: D = sum(w - log w - 1).
    Y = jax.scipy.linalg.solve_triangular(cb, A, lower=True)
    C = jax.scipy.linalg.solve_triangular(cb, Y.T, lower=True)
    w = jnp.linalg.eigvalsh(symmetrize(C))
    pos = jnp.all(w > 0)
    w = jnp.where(pos, w, 1.0)
    return jnp.where(pos, jnp.sum(w - jnp.log(w) - 1.0), jnp.inf)


def vector_logdet(x, x0):
    """LogDet divergence of the diagonal matrices ``diag(x) || diag(x0)`` (positive vectors)."""
    r = x / x0
    return jnp.sum(r - jnp.log(r) - 1.0)


def itml_constraints(M, V, delta, bounds):
    r"""Values of the ITML constraints; a constraint is satisfied where the value is ``<= 0``.

    .. math::

        c_k(M) = \delta_k \,\big( v_k^T M v_k - \xi_k \big), \qquad v_k = x_{i_k} - x_{j_k}

    with :math:`\delta_k = +1` for a similar pair (:math:`d_M^2 \le u`), :math:`-1` for a
    dissimilar one (:math:`d_M^2 \ge \ell`) and 0 for a padding row (value 0).

    Parameters
    ----------
    M : (d, d) metric.
    V : (c, d) difference vectors :math:`v_k` (``V = X[a] - X[b]``).
    delta : (c,) +1 / -1 / 0.
    bounds : (c,) bound :math:`\xi_k` of each constraint (``u``/``l``, or the slack-relaxed
        bounds returned by :func:`jaxdml.solvers.itml_bregman`).
    """
    p = jnp.einsum("ci,ij,cj->c", V, symmetrize(M), V)
    return delta * (p - bounds)


def itml_objective(M, M0, xi=None, xi0=None, *, gamma=1.0):
    r"""ITML objective with slack: the LogDet divergence to the prior plus the slack penalty.

    .. math::

        f(M, \xi) = D_{\ell d}(M \,\|\, M_0) + \gamma\, D_{\ell d}(\operatorname{diag}\xi \,\|\,
        \operatorname{diag}\xi_0)

    ``M0`` is the prior metric, ``xi`` the slack-relaxed bounds and ``xi0`` the original bounds
    (``u`` for similar pairs, ``l`` for dissimilar ones); ``gamma`` weighs the slack. Without
    ``xi`` it is the LogDet divergence alone (the problem of the seed, Eq. itml:prob2; the seed
    writes it as :math:`D_{\ell d}(M_0\|M)` with ``M`` read as a covariance; with ``M`` the
    metric, i.e. the inverse covariance, it is :math:`D_{\ell d}(M\|M_0)`, the form Davis et al.
    minimise).
    """
    val = logdet_divergence(M, M0)
    if xi is not None:
        val = val + gamma * vector_logdet(xi, xi0)
    return val
