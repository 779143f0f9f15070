"""Self-supervised losses between two views of a batch: VICReg."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._base import check_batch, check_real

__all__ = ["vicreg"]


def _centred(Z, w, n):
    mean = jnp.sum(Z * w[:, None], axis=0) / n
    return (Z - mean) * w[:, None]


def _variance(Zc, n, eps):
    std = jnp.sqrt(jnp.sum(Zc * Zc, axis=0) / (n - 1) + eps)
    return jnp.mean(jax.nn.relu(1.0 - std))


def _covariance(Zc, n):
    C = Zc.T @ Zc / (n - 1)
    off = C - jnp.diag(jnp.diag(C))
    return jnp.sum(off * off) / Zc.shape[1]


def vicreg(embeddings, ref_emb, *, invariance=25.0, variance=25.0, covariance=1.0, eps=1e-4, mask=None):
    r"""VICReg: variance-invariance-covariance regularisation of two views of a batch.

    With :math:`Z, Z'` the (n, d) embeddings of two views of the same ``n`` real rows,

    .. math::

        \mathcal{L} = \lambda\, s(Z, Z') + \mu\, \tfrac12 [v(Z) + v(Z')] + \nu\, [c(Z) + c(Z')]

        s(Z, Z') = \frac{1}{n d} \sum_{i, k} (z_{ik} - z'_{ik})^2, \quad
        v(Z) = \frac1d \sum_k \Big[1 - \sqrt{\mathrm{Var}(z_{\cdot k}) + \epsilon}\Big]_+, \quad
        c(Z) = \frac1d \sum_{k \ne l} C(Z)_{kl}^2

    with the unbiased variance and covariance :math:`C(Z) = \frac{1}{n-1} \sum_i (z_i - \bar z)(z_i -
    \bar z)^\top`. The variance terms are halved as in the authors' released code (and PML's
    ``VICRegLoss``); the paper's Eq. 6 writes :math:`\mu [v(Z) + v(Z')]`, which is ``variance`` doubled.
    No labels: the rows of the two arrays are paired by position.

    Parameters
    ----------
    embeddings, ref_emb : (B, d) arrays
        The two views (the expander's outputs), row ``i`` of each from the same sample.
    invariance, variance, covariance : float, default=25.0, 25.0, 1.0
        :math:`\lambda`, :math:`\mu`, :math:`\nu`.
    eps : float, default=1e-4
    mask : (B,) bool array, optional
        False for padded rows (of both views); at least 2 real rows are needed.

    Returns
    -------
    scalar

    References
    ----------
    A. Bardes, J. Ponce, Y. LeCun. VICReg: Variance-Invariance-Covariance Regularization for
    Self-Supervised Learning. ICLR 2022.
    """
    for name, v in (("invariance", invariance), ("variance", variance), ("covariance", covariance)):
        check_real(name, v, low=0.0, strict=False)
    check_real("eps", eps, low=0.0)
    Z, _, valid = check_batch(embeddings, None, mask, labels_required=False)
    R, _, _ = check_batch(ref_emb, None, mask, labels_required=False)
    if R.shape != Z.shape:
        raise ValueError(f"ref_emb must have the shape of embeddings {Z.shape} (two views of the same rows); "
                         f"got shape {R.shape}.")
    if Z.shape[0] < 2:
        raise ValueError("vicreg needs at least 2 rows (a variance and covariance over the batch).")
    w = valid.astype(Z.dtype)
    n = jnp.sum(w)
    Z, R = Z.astype(jnp.result_type(Z, R)), R.astype(jnp.result_type(Z, R))
    inv = jnp.sum(w[:, None] * (Z - R) ** 2) / (n * Z.shape[1])
    Zc, Rc = _centred(Z, w, n), _centred(R, w, n)
    var = 0.5 * (_variance(Zc, n, eps) + _variance(Rc, n, eps))
    cov = _covariance(Zc, n) + _covariance(Rc, n)
    return invariance * inv + variance * var + covariance * cov
