"""GMML: geometric mean metric learning (record, host-side solve step, estimator)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ..._validation import Interval, Options
from ...eigen._gmml import gmml_metric, label_pair_scatters, pair_scatters
from ...exceptions import NonPSDError
from ..core._record import Method
from ._pairs import (
    ESTIMATOR_CONSTRAINTS,
    PAIRS_CONSTRAINTS,
    PairsMetricLearner,
    check_both_kinds,
    sample_pairs,
    supervision,
)

__all__ = ["GMML", "GMML_METHOD"]

_CONSTRAINTS = {
    "t": [Interval(numbers.Real, 0, 1, closed="both")],
    "reg": [Interval(numbers.Real, 0, None)],
    "prior": [Options({"identity"}), "array-like"],
}


def _prior(prior, d):
    if isinstance(prior, str):
        return np.eye(d)
    try:
        A0 = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"GMML prior must be a numeric ({d}, {d}) matrix; got {prior!r:.80}.") from None
    if A0.shape != (d, d) or not np.all(np.isfinite(A0)):
        raise ValueError(f"GMML prior must be a finite ({d}, {d}) matrix; got shape {A0.shape}.")
    if not np.allclose(A0, A0.T, rtol=1e-8, atol=1e-12 * max(np.abs(A0).max(), 1e-300)):
        raise ValueError("GMML prior must be symmetric.")
    w = np.linalg.eigvalsh(0.5 * (A0 + A0.T))
    if w[0] <= 1e-12 * max(abs(w[-1]), 1e-300):
        raise NonPSDError(f"GMML prior must be positive definite; its smallest eigenvalue is {w[0]:.3g}.")
    return 0.5 * (A0 + A0.T)


def _gmml(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, t, reg, prior,
          n_constraints, pairs, similar):
    """Similar / dissimilar scatters (all label pairs from class statistics, sampled pairs, or the given
    pairs), then the closed form on the host in float64."""
    sup = supervision("gmml", X, codes, n_classes, pairs, similar)
    if sup is None and n_constraints is None:
        S, D, n_sim, n_dis = label_pair_scatters(X, codes)
        if n_sim == 0:
            raise ValueError("method 'gmml': every class has a single sample; there is no similar pair.")
    else:
        if sup is None:
            k = int(n_constraints)
            a, b, s = sample_pairs(codes, k, k, check_random_state(random_state))
        else:
            a, b, s = sup
        check_both_kinds("gmml", s)
        S, D, n_sim, n_dis = pair_scatters(X, a, b, s)
    A0 = _prior(prior, X.shape[1])
    M = gmml_metric(S, D, float(t), float(reg), A0)
    return dict(metric=M, info=dict(n_similar=int(n_sim), n_dissimilar=int(n_dis), similar_scatter=S,
                                    dissimilar_scatter=D))


GMML_METHOD = Method(
    "gmml", "M", _gmml,
    defaults=dict(t=0.5, reg=1e-6, prior="identity", n_constraints=None, pairs=None, similar=None),
    constraints={**PAIRS_CONSTRAINTS, **_CONSTRAINTS}, supervised=False, full_rank_only=True, estimator="GMML",
)


class GMML(PairsMetricLearner):
    r"""Geometric Mean Metric Learning (Zadeh, Hosseini and Sra, 2016).

    With :math:`S` and :math:`D` the scatters of the differences :math:`x_i - x_j` over similar and
    dissimilar pairs, GMML minimises :math:`\operatorname{tr}(AS) + \operatorname{tr}(A^{-1}D)` (small
    distances on similar pairs, large ones on dissimilar pairs through :math:`A^{-1}`); the regularised
    version adds :math:`\lambda D_{sld}(A, A_0)`, the symmetrised LogDet divergence to a prior. The
    minimiser is the midpoint of the geodesic between :math:`S_\lambda^{-1}` and :math:`D_\lambda`, and
    the paper's weighted version takes the point at ``t``:

    .. math:: A = (S + \lambda A_0^{-1})^{-1} \#_t (D + \lambda A_0), \qquad
              P \#_t Q = P^{1/2} (P^{-1/2} Q P^{-1/2})^t P^{1/2}.

    Computed on the host in float64 with symmetric eigendecompositions
    (:func:`jaxdml.eigen.gmml_metric`). From labels, *all* pairs are used by default: their scatters
    come from class statistics (:math:`\sum_{i<j}(x_i-x_j)(x_i-x_j)^T = n\,\mathrm{scatter}`), memory
    :math:`O(d^2)`, without enumerating pairs.

    Departures from the paper, stated: ``S`` and ``D`` are *means* over their pairs (the paper sums;
    at ``reg=0`` this multiplies ``A`` by a positive constant, which no distance ranking sees), and
    :math:`\lambda` = ``reg`` :math:`\cdot \operatorname{tr}(S)/d` is in units of the mean eigenvalue of
    ``S``, so that the default does not depend on the number of pairs nor on the scale of the features.
    The default ``reg`` only makes the problem well posed (singular scatters, constant features); it was
    not tuned (the paper tunes :math:`\lambda` and ``t`` by cross-validation).

    Parameters
    ----------
    t : float in [0, 1], default=0.5
        Step along the geodesic: 0 gives :math:`S_\lambda^{-1}` (similar pairs only), 1 gives
        :math:`D_\lambda`; 0.5 is the unweighted geometric mean (the paper's basic GMML).
    reg : float >= 0, default=1e-6
        :math:`\lambda`, relative to the mean eigenvalue of ``S``.
    prior : "identity" or ndarray of shape (n_features, n_features), default="identity"
        :math:`A_0` (positive definite).
    n_constraints : int, default=None
        From labels: None uses all pairs (exact, class statistics); an int samples that many similar
        and as many dissimilar pairs.
    random_state : int, RandomState or None
        Seeds the pair sampling (``n_constraints``).

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
    metric_ : ndarray of shape (n_features, n_features)
        The learned :math:`A`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.GMML().fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    P. Zadeh, R. Hosseini, S. Sra. Geometric mean metric learning. ICML 2016, 2464-2471.
    """

    _record = GMML_METHOD
    _parameter_constraints = {**{k: v for k, v in ESTIMATOR_CONSTRAINTS.items() if k in ("n_constraints",
                                                                                            "random_state")},
                              **_CONSTRAINTS}

    def __init__(self, t=0.5, *, reg=1e-6, prior="identity", n_constraints=None, random_state=None):
        self.t = t
        self.reg = reg
        self.prior = prior
        self.n_constraints = n_constraints
        self.random_state = random_state
