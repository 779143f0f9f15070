"""Euclidean (Frobenius) projections onto the convex sets used by metric learning.

Plain ``jnp`` functions ``array -> array``: they jit, vmap and run on any accelerator. They are
applied to the parameters after an optimizer step (projected gradient), not differentiated.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp

from ..linalg import symmetrize

__all__ = [
    "projection_psd",
    "projection_halfspace",
    "projection_intersection",
]


def projection_psd(M, min_eigenvalue=0.0):
    r"""Nearest (Frobenius) positive semidefinite matrix.

    .. math:: \Pi(M) = V \max(\Lambda, \lambda_{\min}) V^T, \quad \tfrac12(M + M^T) = V \Lambda V^T

    ``M`` is symmetrised before ``eigh``; eigenvalues below ``min_eigenvalue`` (default 0) are
    clipped. Works on a batch ``(..., d, d)``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from jaxdml.projections import projection_psd
    >>> P = projection_psd(jnp.array([[1.0, 0.0], [0.0, -2.0]]))
    >>> P.tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    S = symmetrize(M)
    w, V = jnp.linalg.eigh(S)
    w = jnp.maximum(w, min_eigenvalue)
    P = (V * w[..., None, :]) @ jnp.swapaxes(V, -1, -2)
    return symmetrize(P)


def projection_halfspace(M, A, b):
    r"""Projection onto the affine half-space :math:`\{M : \langle A, M\rangle_F \ge b\}`.

    .. math:: \Pi(M) = M + \frac{\max(0, b - \langle A, M \rangle)}{\|A\|_F^2} A

    Points already inside are returned unchanged. A constraint ``<A, M> <= c`` is the half-space
    ``<-A, M> >= -c``.
    """
    inner = jnp.sum(A * M)
    nrm = jnp.maximum(jnp.sum(A * A), jnp.finfo(jnp.result_type(M)).tiny)
    return M + (jnp.maximum(b - inner, 0.0) / nrm) * A


def projection_intersection(
    M,
    projections: Sequence[Callable],
    *,
    max_iter: int = 100,
    tol: float = 1e-7,
):
    """Projection onto the intersection of convex sets by Dykstra's alternating projections.

    ``projections`` are functions onto each set (closures over their own parameters). Dykstra's
    correction terms make the limit the *nearest* point of the intersection, not merely a point of
    it. Iterates until the change over a sweep is below ``tol * (1 + |M|)`` or ``max_iter`` sweeps.

    Returns the projected matrix.
    """
    projections = tuple(projections)
    k = len(projections)
    scale = 1.0 + jnp.sqrt(jnp.sum(M * M))
    zeros = jnp.zeros((k,) + M.shape, M.dtype)

    def sweep(carry):
        X, incs, it, _ = carry
        X0 = X
        new_incs = []
        for i, proj in enumerate(projections):
            Y = proj(X + incs[i])
            new_incs.append(X + incs[i] - Y)
            X = Y
        change = jnp.sqrt(jnp.sum((X - X0) ** 2))
        return X, jnp.stack(new_incs), it + 1, change

    def cond(carry):
        _, _, it, change = carry
        return (it < max_iter) & (change > tol * scale)

    X, _, _, _ = jax.lax.while_loop(cond, sweep, (M, zeros, 0, jnp.asarray(jnp.inf, M.dtype)))
    return X
