r"""SDML's solver (Qi, Tang, Zha, Chua & Zhang, ICML 2009): a graphical lasso by ADMM in ``jnp``.

:func:`sdml_admm` solves :math:`\min_{X \succ 0} \operatorname{tr}(SX) - \log\det X +
\lambda\|X\|_{1,\mathrm{off}}`, the problem :func:`jaxdml.losses.sdml_objective` states (see
:mod:`jaxdml.losses._sdml` for how SDML's metric learning problem becomes this graphical lasso).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._runtime._executable_cache import cached_jit

__all__ = ["sdml_admm", "SDMLState"]


class SDMLState(NamedTuple):
    """ADMM state: ``X`` (the PD iterate, returned), ``Z`` (its sparse copy), scaled dual ``U``."""

    X: jax.Array
    Z: jax.Array
    U: jax.Array
    rho: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    primal: jax.Array
    dual: jax.Array


def _soft_off_diagonal(A, t):
    eye = jnp.eye(A.shape[0], dtype=bool)
    return jnp.where(eye, A, jnp.sign(A) * jnp.maximum(jnp.abs(A) - t, 0.0))


def _x_update(S, Z, U, rho):
    """``argmin_X tr(S X) - log det X + rho/2 ||X - Z + U||^2``: PD by construction."""
    w, Q = jnp.linalg.eigh(rho * (Z - U) - S)
    x = (w + jnp.sqrt(w * w + 4.0 * rho)) / (2.0 * rho)
    return (Q * x) @ Q.T


@cached_jit
def sdml_admm(S, X0, sparsity, tol, max_iter):
    r"""Solve :math:`\min_{X \succ 0} \operatorname{tr}(SX) - \log\det X + \lambda\|X\|_{1,\mathrm{off}}`.

    ADMM on the split ``X = Z`` (Boyd et al. 2011, section 6.5): an eigendecomposition for
    ``X`` (always positive definite), soft-thresholding for ``Z``, residual balancing for the
    penalty ``rho``. Stops when the primal residual ``||X - Z||`` and the dual residual
    ``rho ||Z - Z_prev||`` are both below ``tol`` relative to ``max(||X||, ||Z||)`` and
    ``||rho U||``.

    Parameters
    ----------
    S : (d, d) symmetric positive definite matrix (the graphical lasso's "covariance").
    X0 : (d, d) positive definite starting point.
    sparsity : float, the off-diagonal L1 weight ``lambda >= 0``.
    tol : float.
    max_iter : int (traced).

    Returns
    -------
    SDMLState
    """
    dtype = S.dtype
    rho0 = jnp.asarray(1.0, dtype) / jnp.maximum(jnp.mean(jnp.abs(jnp.diag(X0))), 1e-300)
    state = SDMLState(X0, X0, jnp.zeros_like(X0), rho0, jnp.asarray(0), jnp.asarray(False),
                      jnp.asarray(jnp.inf, dtype), jnp.asarray(jnp.inf, dtype))

    def cond(st):
        return (st.n_iter < max_iter) & ~st.converged

    def body(st):
        X = _x_update(S, st.Z, st.U, st.rho)
        Z = _soft_off_diagonal(X + st.U, sparsity / st.rho)
        U = st.U + X - Z
        r = jnp.linalg.norm(X - Z)
        s = st.rho * jnp.linalg.norm(Z - st.Z)
        eps_p = tol * jnp.maximum(jnp.maximum(jnp.linalg.norm(X), jnp.linalg.norm(Z)), 1e-300)
        eps_d = tol * jnp.maximum(st.rho * jnp.linalg.norm(U), 1e-300)
        done = (r <= eps_p) & (s <= eps_d)
        up = r > 10.0 * s
        down = s > 10.0 * r
        factor = jnp.where(up, 2.0, jnp.where(down, 0.5, 1.0)).astype(dtype)
        return SDMLState(X, Z, U / factor, st.rho * factor, st.n_iter + 1, done, r, s)

    return jax.lax.while_loop(cond, body, state)
