"""LMNN: the records of its two parametrisations (``L``: "lmnn", ``M``: "lmnn_metric") and the
estimator."""

from __future__ import annotations

import numbers

from .._validation import Interval, Options
from ..losses import lmnn, lmnn_metric
from ._record import LossSpec
from ._base import GradientMetricLearner
from ._gradient import BLOCK_ELEMENTS, gradient_method

__all__ = ["LMNN", "LMNN_METHOD", "LMNN_METRIC_METHOD", "LMNN_CONSTRAINTS", "LMNN_DEFAULTS"]

LMNN_DEFAULTS = dict(mu=0.5, margin=1.0)
LMNN_CONSTRAINTS = {
    "mu": [Interval(numbers.Real, 0, 1, closed="neither")],
    "margin": [Interval(numbers.Real, 0, None, closed="neither")],
}

# LMNN: L-BFGS on the full objective; on large data (more than 4096 samples) the active-set solver
# (jaxdml/solvers/_lmnn_active.py: exact impostor search refreshed every 50 L-BFGS steps). A user
# who sets optimizer/batch_size/n_candidates gets the former large-data path: minibatch Adam, with
# impostors sampled uniformly (an unbiased estimate of the push term) above 8192 samples.
LMNN_METHOD = gradient_method(
    "lmnn",
    LossSpec(lmnn, "L", needs=frozenset({"targets"}), max_iter=200, large_n=4096,
             large=dict(optimizer="adam", learning_rate=1e-2, max_iter=1000, batch_size=256,
                        solver="lmnn_active_set"),
             candidates_above=8192, n_candidates=1024),
    defaults=LMNN_DEFAULTS, constraints={**LMNN_CONSTRAINTS, **BLOCK_ELEMENTS}, estimator="LMNN",
)
# the convex problem in M: projected Adam steps
LMNN_METRIC_METHOD = gradient_method(
    "lmnn_metric",
    LossSpec(lmnn_metric, "M", needs=frozenset({"targets"}), optimizer="adam", learning_rate=1e-2, max_iter=300,
             projection="psd"),
    defaults=LMNN_DEFAULTS, constraints={**LMNN_CONSTRAINTS, **BLOCK_ELEMENTS}, estimator="LMNN",
)


class LMNN(GradientMetricLearner):
    """Large Margin Nearest Neighbours.

    Pulls each sample towards its ``n_neighbors`` target neighbours (same class, Euclidean
    nearest) and pushes differently-labelled samples out of the margin they define.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension; only the gradient solver can reduce it.
    n_neighbors : int, default=3
        Target neighbours per sample (use the k of the k-NN classifier).
    mu : float, default=0.5
        Weight of the push term (the pull term gets ``1 - mu``); in (0, 1).
    margin : float, default=1.0
    solver : {"auto", "gradient", "projected"}, default="auto"
        "gradient": L-BFGS on the linear map ``L`` (:func:`jaxdml.losses.lmnn`);
        "projected": projected sub-gradient on the metric ``M`` over the PSD cone
        (:func:`jaxdml.losses.lmnn_metric`, convex). "auto" is "gradient".
    init, max_iter, tol, optimizer, learning_rate, batch_size, n_candidates, devices, random_state, verbose
        As in :class:`NCA`. Defaults: L-BFGS for 200 iterations on the full objective; above 4096
        samples (and up to 100 000) the active-set solver (Weinberger & Saul, 2009, Section 5):
        the impostors inside the margin (plus a slack) are found exactly (a blockwise search into
        candidate lists, filtered at later refreshes while a bound on the metric's change
        certifies them), refreshed every 50 L-BFGS steps on the objective restricted to them, for
        at most 500 steps; converged only when a refresh finds no new violating impostor. Setting
        ``optimizer``, ``batch_size`` or ``n_candidates`` (or ``devices``) selects the former
        paths instead: e.g. ``optimizer="lbfgs"`` is L-BFGS on the exact full objective,
        ``optimizer="adam"`` Adam on 256-anchor minibatches for 1000 steps (with 1024 sampled
        impostor candidates per step above 8192 samples), which is also the default above
        100 000 samples, where an exact O(N^2) search per refresh is too slow on a CPU.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LMNN(max_iter=30).fit(X, y).components_.shape
    (4, 4)

    References
    ----------
    K. Q. Weinberger, L. K. Saul. Distance Metric Learning for Large Margin Nearest Neighbor
    Classification. JMLR 10, 2009.
    """

    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints,
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        **LMNN_CONSTRAINTS,
        "solver": [Options({"auto", "gradient", "projected"})],
    }

    def __init__(self, n_components=None, *, n_neighbors=3, mu=0.5, margin=1.0, solver="auto",
                 init="auto", max_iter=None, tol=1e-5, optimizer=None, learning_rate=None,
                 batch_size="auto", n_candidates="auto", devices=None, random_state=None, verbose=0):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.mu = mu
        self.margin = margin
        self.solver = solver
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_candidates = n_candidates
        self.devices = devices
        self.random_state = random_state
        self.verbose = verbose

    def _get_record(self):
        return LMNN_METRIC_METHOD if self.solver == "projected" else LMNN_METHOD

    def _fit_kwargs(self):
        kw = super()._fit_kwargs()
        kw.pop("solver")
        return kw
