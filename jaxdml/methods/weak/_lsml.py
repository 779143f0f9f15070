"""LSML: record, host-side preparation (quadruplets from labels or given, prior), solve step (L-BFGS on
the pure loss :func:`jaxdml.losses.lsml` through the optax driver) and estimator."""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._device import to_device
from ..._runtime._padding import bucket_size
from ..._validation import Interval, Options
from ...losses._lsml import QuadrupletProblem, lsml
from ..core._index_tuples import TupleMetricLearner, check_index_tuples
from ..core._plan import execute, plan
from ..core._record import LossSpec, Method
from ..core._tuple_classifiers import _QuadrupletsClassifierMixin
from ._itml import _itml_prior
from ._pairs import sample_pairs

__all__ = ["LSML", "LSML_METHOD", "quadruplets_from_labels"]

_CONSTRAINTS = {
    "prior": [Options({"identity", "covariance", "random"}), "array-like"],
    "n_constraints": [Interval(numbers.Integral, 1, None), None],
    "weights": ["array-like", None],
    "quadruplets": ["array-like", None],
}


def quadruplets_from_labels(codes, n_constraints, rng):
    """``(n, 4)`` quadruplets ``(a, b, c, d)``: ``(a, b)`` of one class, ``(c, d)`` of two classes;
    ``n_constraints`` of each kind sampled, the shorter list sets the number (as metric-learn)."""
    a, b, s = sample_pairs(codes, n_constraints, n_constraints, rng)
    pos = rng.permutation(np.flatnonzero(s > 0))  # s: +1/-1 pair labels
    neg = rng.permutation(np.flatnonzero(s < 0))
    m = min(pos.size, neg.size)
    if m == 0:
        raise ValueError("LSML: the labels give no similar pair or no dissimilar pair to compare.")
    pos, neg = pos[:m], neg[:m]
    return np.stack([a[pos], b[pos], a[neg], b[neg]], axis=1)


def _lsml(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, prior, n_constraints,
          weights, quadruplets, optimizer=None, learning_rate=None, **_):
    """L-BFGS on ``L`` (``M = L^T L``) from the prior's Cholesky factor."""
    rng = check_random_state(random_state)
    if quadruplets is None:
        if codes is None:
            raise ValueError("method 'lsml' needs class labels y, or quadruplets=(n, 4) row indices; got neither.")
        if n_classes < 2:
            raise ValueError(f"method 'lsml': y has {n_classes} class(es); comparisons need at least 2.")
        k = 20 * n_classes**2 if n_constraints is None else int(n_constraints)
        Q = quadruplets_from_labels(codes, k, rng)
    else:
        Q = check_index_tuples("lsml", X, quadruplets, 4, "quadruplets", codes)
    w = np.ones(Q.shape[0]) if weights is None else np.asarray(weights, np.float64).ravel()
    if w.shape != (Q.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"LSML: weights must be {Q.shape[0]} non-negative finite numbers, not all zero.")
    Vab, Vcd = X[Q[:, 0]] - X[Q[:, 1]], X[Q[:, 2]] - X[Q[:, 3]]
    keep = (np.abs(Vab).max(1) > 0) & (np.abs(Vcd).max(1) > 0)  # a comparison with a zero distance: no gradient
    if not np.any(keep):
        raise ValueError("LSML: every quadruplet compares a row with itself.")
    Vab, Vcd, w = Vab[keep], Vcd[keep], w[keep] / w[keep].sum()
    M0 = _itml_prior(prior, X, "LSML", random_state)
    P = np.linalg.inv(M0)

    def quadruplet_problem(Xr):  # the differences of the comparisons, padded to a bucket
        n, pad = Vab.shape[0], bucket_size(Vab.shape[0]) - Vab.shape[0]
        dtype = jnp.result_type(float)
        zpad = lambda A: np.concatenate([A, np.zeros((pad,) + A.shape[1:])])  # noqa: E731
        return QuadrupletProblem(to_device(zpad(np.stack([Vab, Vcd], axis=1)), dtype), to_device(zpad(w), dtype),
                                 to_device(0.5 * (P + P.T), dtype)), n, n + pad

    res = execute(plan(LSML_SPEC, "lsml", X, None, 0, n_components=X.shape[1], random_state=None, max_iter=max_iter,
                       tol=1e-6 if tol is None else float(tol), verbose=verbose,
                       init=np.linalg.cholesky(M0).T,  # M0 = L0^T L0
                       optimizer=optimizer, learning_rate=learning_rate, batch_size=None, n_candidates=None,
                       problem_fn=quadruplet_problem, info=dict(quadruplets=Q[keep], prior=M0, n=int(keep.sum()))))
    res.metric_ = res.L.T @ res.L
    return res


#: LSML's optimisation defaults: L-BFGS on ``L`` for 200 iterations, no large-data switch (the comparisons are
#: the data)
LSML_SPEC = LossSpec(lsml, "L", optimizer="lbfgs", max_iter=200)

LSML_METHOD = Method(
    "lsml", "M", _lsml, defaults=dict(prior="identity", n_constraints=None, weights=None, quadruplets=None),
    constraints=_CONSTRAINTS, settings=frozenset({"optimizer", "learning_rate"}), supervised=False,
    full_rank_only=True, estimator="LSML",
)


class LSML(_QuadrupletsClassifierMixin, TupleMetricLearner):
    r"""Least Squares Metric Learning (Liu et al., 2012) on relative comparisons.

    Each quadruplet ``(a, b, c, d)`` asks ``d_M(a, b) < d_M(c, d)``; violations cost the squared
    difference of the (unsquared) distances, and the LogDet divergence to a prior ``M0``
    regularises:

    .. math::

        \min_{M \succ 0} \sum_q w_q \big[d_M(a_q, b_q) - d_M(c_q, d_q)\big]_+^2
        + \operatorname{tr}(M M_0^{-1}) - \log\det M

    with ``sum w = 1``, minimised over ``L`` (``M = L^T L``) by L-BFGS from ``L0 = chol(M0)``
    (:func:`jaxdml.losses.lsml`). From labels, ``(a, b)`` is a same-class pair and ``(c, d)`` a
    different-class pair (``n_constraints`` of each, default ``20 * n_classes**2`` as metric-learn);
    weakly supervised, ``fit(X, quadruplets=Q)`` with ``Q`` an ``(n, 4)`` int array of rows of ``X``.

    Parameters
    ----------
    prior : {"identity", "covariance", "random"} or ndarray, default="identity"
        ``M0``: identity, the inverse sample covariance, or a positive definite matrix; "random" draws a random
        symmetric positive definite matrix from ``random_state`` (metric-learn's option: a random
        rotation with eigenvalues uniform in [1, 2]).
    n_constraints : int, default=None
    weights : array-like of shape (n_quadruplets,), default=None
        Comparison weights (normalised to sum to one; default uniform).
    max_iter : int, default=None
        L-BFGS iterations (default 200).
    tol : float, default=1e-6
        Relative loss improvement below which it stops.
    random_state : int, RandomState or None
        Seeds the sampling of quadruplets from labels.
    verbose : int, default=0

    Attributes
    ----------
    components_, metric_ : ndarray of shape (n_features, n_features)
    n_iter_, converged_

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LSML(random_state=0).fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    E. Y. Liu, Z. Guo, X. Zhang, V. Jojic, W. Wang. Metric learning from relative comparisons by
    minimizing squared residual. ICDM 2012.
    """

    _record = LSML_METHOD
    _tuple_kind = "quadruplets"
    _parameter_constraints = {
        "prior": _CONSTRAINTS["prior"],
        "n_constraints": _CONSTRAINTS["n_constraints"],
        "weights": ["array-like", None],
        "max_iter": [Interval(numbers.Integral, 1, None), None],
        "tol": [Interval(numbers.Real, 0, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
        "preprocessor": ["array-like", "callable", None],
    }

    def __init__(self, *, prior="identity", n_constraints=None, weights=None, max_iter=None, tol=1e-6,
                 random_state=None, verbose=0, preprocessor=None):
        self.preprocessor = preprocessor
        self.prior = prior
        self.n_constraints = n_constraints
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, quadruplets=None):
        """Learn from labels ``y`` or from ``quadruplets`` ((n, 4) row indices of ``X``: ``d(a, b) < d(c, d)``).

        Returns
        -------
        self
        """
        return self._fit_index_tuples(X, y, quadruplets)
