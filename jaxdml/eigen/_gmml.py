"""Geometric Mean Metric Learning (Zadeh, Hosseini, Sra, 2016): the closed form on the SPD manifold.

Tiny ``d x d`` closed forms: NumPy float64 on the host (no compilation).
"""

from __future__ import annotations

import numpy as np

__all__ = ["spd_power", "geometric_mean", "gmml_metric", "label_pair_scatters", "pair_scatters"]


def _sym(M):
    return 0.5 * (M + M.T)


def spd_power(A, p: float):
    """``A^p`` of a symmetric positive definite matrix through its symmetric eigendecomposition."""
    w, U = np.linalg.eigh(_sym(np.asarray(A, dtype=np.float64)))
    if w[0] <= 0:
        raise ValueError(f"spd_power: the matrix is not positive definite (smallest eigenvalue {w[0]:.3g}).")
    return _sym((U * w ** p) @ U.T)


def geometric_mean(A, B, t: float = 0.5):
    r"""The weighted geometric mean :math:`A \#_t B = A^{1/2}(A^{-1/2} B A^{-1/2})^t A^{1/2}`.

    The point at ``t`` of the geodesic from ``A`` (``t=0``) to ``B`` (``t=1``) under the affine-invariant
    Riemannian metric of SPD matrices. ``t=1/2`` is the unique SPD solution ``X`` of the Riccati equation
    :math:`X A^{-1} X = B`. Float64, eigendecomposition-based powers.
    """
    Ah = spd_power(A, 0.5)
    Aih = spd_power(A, -0.5)
    return _sym(Ah @ spd_power(_sym(Aih @ B @ Aih), t) @ Ah)


def label_pair_scatters(X, codes):
    r"""Mean pair scatters over *all* similar (same-label) and dissimilar pairs, from class statistics.

    :math:`\sum_{i<j} (x_i - x_j)(x_i - x_j)^T = n \sum_i (x_i - \bar x)(x_i - \bar x)^T` for any set of
    ``n`` points, so with :math:`C_c` the scatter of class ``c`` about its mean and ``T`` the total
    scatter, the similar sum is :math:`\sum_c n_c C_c` and the dissimilar sum :math:`n T - \sum_c n_c C_c`:
    memory ``O(d^2)``, time ``O(n d^2)``, no pair enumerated.

    Returns
    -------
    S, D : (d, d) the sums divided by the numbers of similar / dissimilar pairs.
    n_similar, n_dissimilar : int
    """
    X = np.asarray(X, dtype=np.float64)
    codes = np.asarray(codes)
    n, d = X.shape
    Xt = X - X.mean(axis=0)
    total = n * (Xt.T @ Xt)
    S = np.zeros((d, d))
    n_sim = 0
    for c in np.unique(codes):
        Xc = X[codes == c]
        m = Xc.shape[0]
        R = Xc - Xc.mean(axis=0)
        S += m * (R.T @ R)
        n_sim += m * (m - 1) // 2
    n_dis = n * (n - 1) // 2 - n_sim
    D = total - S
    return _sym(S) / max(n_sim, 1), _sym(D) / max(n_dis, 1), n_sim, n_dis


def pair_scatters(X, a, b, similar):
    """Mean scatters of the differences ``x_a - x_b`` over the similar / dissimilar pairs given.

    ``similar``: the pairs' labels, +1 similar / -1 dissimilar (the library's convention; 1/0 flags
    read the same way: a pair is similar where its label is positive)."""
    X = np.asarray(X, dtype=np.float64)
    s = np.asarray(similar) > 0
    diff = X[a] - X[b]
    Ds, Dd = diff[s], diff[~s]
    return _sym(Ds.T @ Ds) / max(len(Ds), 1), _sym(Dd.T @ Dd) / max(len(Dd), 1), len(Ds), len(Dd)


def gmml_metric(S, D, t: float = 0.5, reg: float = 1e-3, prior=None):
    r"""GMML's regularised closed form :math:`A = (S + \lambda A_0^{-1})^{-1} \#_t (D + \lambda A_0)`.

    It minimises :math:`(1-t)\,\delta_R^2(A, (S+\lambda A_0^{-1})^{-1}) + t\,\delta_R^2(A, D + \lambda A_0)`
    (Riemannian distances); at ``t = 1/2`` it is the minimiser of
    :math:`\operatorname{tr}(AS) + \operatorname{tr}(A^{-1}D) + \lambda D_{sld}(A, A_0)` (the symmetrised
    LogDet divergence to the prior), i.e. the solution of :math:`A S_\lambda A = D_\lambda`.

    Parameters
    ----------
    S, D : (d, d) similar / dissimilar scatters.
    t : float in [0, 1]
        Step along the geodesic from :math:`S_\lambda^{-1}` (``t=0``) to :math:`D_\lambda` (``t=1``).
    reg : float >= 0
        :math:`\lambda` in units of the mean eigenvalue of ``S`` (``tr(S)/d``), so that it does not depend on
        the scale of the features.
    prior : (d, d) SPD matrix or None
        :math:`A_0` (None: the identity).

    Returns
    -------
    A : (d, d) SPD metric.
    """
    S = _sym(np.asarray(S, dtype=np.float64))
    D = _sym(np.asarray(D, dtype=np.float64))
    d = S.shape[0]
    A0 = np.eye(d) if prior is None else _sym(np.asarray(prior, dtype=np.float64))
    scale = np.trace(S) / d
    if not scale > 0:
        scale = max(np.trace(D) / d, 1.0)
    lam = float(reg) * scale
    Sl = S + lam * spd_power(A0, -1.0)
    Dl = D + lam * A0
    for name, M in (("similar", Sl), ("dissimilar", Dl)):
        w = np.linalg.eigvalsh(M)
        if w[0] <= 1e-14 * max(abs(w[-1]), 1e-300):
            raise ValueError(
                f"GMML: the regularised {name} scatter is singular (smallest eigenvalue {w[0]:.3g}); the pairs do "
                "not span every direction - increase reg (the weight of the prior)."
            )
    return geometric_mean(spd_power(Sl, -1.0), Dl, t)
