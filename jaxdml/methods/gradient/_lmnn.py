"""LMNN: the records of its two parametrisations (``L``: "lmnn", ``M``: "lmnn_metric") and the
estimator."""

from __future__ import annotations

import numbers
import time

import numpy as np

from ..._validation import Interval, Options, check_params
from ...losses import lmnn, lmnn_metric
from ...solvers._lmnn_active import ACTIVE_SET_DEFAULTS, minimize_active_set
from ...solvers._result import FittedMetric
from ..core._base import GradientMetricLearner
from ..core._gradient import BLOCK_ELEMENTS, gradient_method
from ..core._plan import finish
from ..core._record import LossSpec, Route
from ..core._sampling import stratified_subsample

__all__ = ["LMNN", "LMNN_METHOD", "LMNN_METRIC_METHOD", "LMNN_CONSTRAINTS", "LMNN_DEFAULTS", "ACTIVE_SET_ROUTE"]

LMNN_DEFAULTS = dict(mu=0.5, margin=1.0)
LMNN_CONSTRAINTS = {
    "mu": [Interval(numbers.Real, 0, 1, closed="neither")],
    "margin": [Interval(numbers.Real, 0, None, closed="neither")],
}


def _active_set_applies(spec, n: int, *, optimizer, batch_size, n_candidates, devices, callback, problem_kw) -> bool:
    """LMNN's routing policy: the active-set solver replaces the large-data path above ``spec.large_n``
    samples when the user left the optimisation settings at their defaults (no ``optimizer``,
    ``batch_size``, ``n_candidates``, ``devices``, ``callback``, ``n_impostors``). Setting one keeps the
    driver's paths (``optimizer="lbfgs"``: full-batch L-BFGS on the exact objective; ``batch_size=256``:
    minibatch Adam)."""
    return (callback is None and spec.param == "L" and spec.large_n is not None and spec.large_n < n
            and optimizer is None and isinstance(batch_size, str) and isinstance(n_candidates, str)
            and devices is None and not problem_kw)


def _active_set_rows(codes, n_neighbors, random_state):
    """Above ``ACTIVE_SET_DEFAULTS["max_n"]`` samples the active set runs on a stratified subsample."""
    if codes.shape[0] <= ACTIVE_SET_DEFAULTS["max_n"]:
        return None
    return stratified_subsample(codes, ACTIVE_SET_DEFAULTS["subsample"], random_state, min_per_class=n_neighbors + 1)


def _solve_active_set(p) -> FittedMetric:
    """The active-set solver (:mod:`jaxdml.solvers._lmnn_active`) on a plan, as a :class:`FittedMetric`;
    ``p.n`` rows of ``p.n_total`` (a stratified subsample above ``ACTIVE_SET_DEFAULTS["max_n"]``)."""
    d = ACTIVE_SET_DEFAULTS
    max_iter = d["max_iter"] if p.max_iter is None else p.max_iter
    t_solve = time.perf_counter()
    chunked = p.n > d["chunked_above"]
    res = minimize_active_set(p.params0, p.problem, max_iter=max_iter, tol=p.tol, verbose=p.verbose,
                              random_state=p.random_state, refresh_every=d["refresh_every"], slack=d["slack"],
                              cand_slack=d["chunk_cand_slack" if chunked else "cand_slack"],
                              first_cand_slack=None if chunked else d["first_cand_slack"],
                              chunk_rows=d["chunk_rows"] if chunked else None,
                              chunks_per_refresh=1 if chunked else None, **p.hyper)
    n_iter, hist = finish(res, p.name, max_iter, p.tol)
    t_end = time.perf_counter()
    return FittedMetric(
        L=np.asarray(res.params, dtype=np.float64), method=p.name, n_iter=n_iter, converged=bool(res.converged),
        loss_history=hist, loss=float(res.loss),
        info=dict(p.info, failed=bool(res.failed), padded_rows=p.bucket - p.n, batch_size=None, n_candidates=None,
                  devices=1, setup_seconds=t_solve - p.t_start, solve_seconds=t_end - t_solve, n_fitted_rows=p.n,
                  subsample=p.n < p.n_total, **res.info),
    )


#: LMNN's large-data route (Weinberger & Saul, 2009, Section 5): exact active set of impostors + full-batch L-BFGS
ACTIVE_SET_ROUTE = Route("active_set", _active_set_applies, _solve_active_set, _active_set_rows)

# LMNN: L-BFGS on the full objective; on large data (more than 4096 samples) the active-set solver
# (the record's route, ACTIVE_SET_ROUTE above; jaxdml/solvers/_lmnn_active.py: exact impostor search
# refreshed every 50 L-BFGS steps). A user
# who sets optimizer/batch_size/n_candidates gets the former large-data path: minibatch Adam, with
# impostors sampled uniformly (an unbiased estimate of the push term) above 8192 samples.
LMNN_METHOD = gradient_method(
    "lmnn",
    LossSpec(lmnn, "L", needs=frozenset({"targets"}), max_iter=200, large_n=4096,
             large=dict(optimizer="adam", learning_rate=1e-2, max_iter=1000, batch_size=256),
             candidates_above=8192, n_candidates=1024),
    defaults=LMNN_DEFAULTS, constraints={**LMNN_CONSTRAINTS, **BLOCK_ELEMENTS}, estimator="LMNN",
    route=ACTIVE_SET_ROUTE,
)
# the convex problem in M: projected Adam steps; above 4096 samples 1000 steps of 256 anchors (each
# step's cost no longer grows with N), with impostors sampled as LMNN's minibatch path samples them
LMNN_METRIC_METHOD = gradient_method(
    "lmnn_metric",
    LossSpec(lmnn_metric, "M", needs=frozenset({"targets"}), optimizer="adam", learning_rate=1e-2, max_iter=300,
             projection="psd", large_n=4096, large=dict(max_iter=1000, batch_size=256), candidates_above=8192,
             n_candidates=1024),
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
        impostor candidates per step above 8192 samples). Above 100 000 samples the active set
        runs on a class-stratified subsample of 50 000 rows (an exact O(N^2) search per refresh is
        too slow on a CPU; ``result_.info["subsample"]``). ``solver="projected"``: 300 projected
        Adam steps on the full objective; above 4096 samples 1000 steps of 256 anchors (with 1024
        sampled impostor candidates per step above 8192 samples).
    preprocessor : array-like or callable, default=None
        metric-learn's preprocessor: with it, a 1-D ``X`` in ``fit`` and ``transform`` holds sample
        identifiers, read as ``preprocessor[X]`` (an array: integer indices) or ``preprocessor(X)`` (a
        callable: any identifiers it maps to rows, e.g. file names).
    regularization : float, default=None
        metric-learn's name for the weight of the *pull* term, in (0, 1): ``mu = 1 - regularization``
        (metric-learn's default 0.5 is ``mu=0.5``). Give it or ``mu``, not both.
    convergence_tol : float, default=None
        metric-learn's stopping tolerance: when given, it is ``tol`` (the solver stops when the
        objective changes by at most ``convergence_tol`` relative to its value and the step is
        small; metric-learn compares the absolute change of its unnormalised objective). Give it
        or ``tol``, not both.
    learn_rate : float, default=None
        metric-learn's initial step of its gradient descent (which then grows by 1 % after each
        accepted step and halves after a rejected one). Accepted for metric-learn's code and not
        used: the default L-BFGS chooses every step by its line search. For a fixed-step
        optimiser set ``optimizer`` and ``learning_rate``.
    min_iter : int, default=None
        metric-learn's minimum number of steps before its convergence test. Accepted for
        metric-learn's code and not used: jaxdml's test (the objective *and* the step settled,
        or a vanishing gradient) does not stop on the slow first steps of a small fixed step,
        which is what ``min_iter`` guards against in metric-learn.

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
        "preprocessor": ["array-like", "callable", None],
        "regularization": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "convergence_tol": [Interval(numbers.Real, 0, None), None],
        "learn_rate": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "min_iter": [Interval(numbers.Integral, 0, None), None],
    }
    #: metric-learn's parameters: translated by :meth:`_fit_kwargs`, never arguments of :func:`jaxdml.fit`
    _input_params = ("preprocessor", "regularization", "convergence_tol", "learn_rate", "min_iter")

    def __init__(self, n_components=None, *, n_neighbors=3, mu=0.5, margin=1.0, solver="auto",
                 init="auto", max_iter=None, tol=1e-5, optimizer=None, learning_rate=None,
                 batch_size="auto", n_candidates="auto", devices=None, random_state=None, verbose=0,
                 preprocessor=None, regularization=None, convergence_tol=None, learn_rate=None, min_iter=None):
        self.preprocessor = preprocessor
        self.regularization = regularization
        self.convergence_tol = convergence_tol
        self.learn_rate = learn_rate
        self.min_iter = min_iter
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

    def _validate_params(self):
        # metric-learn's parameters first: _fit_kwargs translates them (regularization -> mu)
        check_params({k: getattr(self, k) for k in self._input_params}, self._parameter_constraints,
                     owner=type(self).__name__)
        super()._validate_params()

    def _get_record(self):
        return LMNN_METRIC_METHOD if self.solver == "projected" else LMNN_METHOD

    def _fit_kwargs(self):
        kw = super()._fit_kwargs()
        kw.pop("solver")
        owner = type(self).__name__
        if self.regularization is not None:  # metric-learn's pull weight
            if self.mu != 0.5:
                raise ValueError(f"{owner}: give mu (the push weight) or regularization (metric-learn's pull weight, "
                                 f"mu = 1 - regularization), not both; got mu={self.mu!r} and "
                                 f"regularization={self.regularization!r}.")
            kw["mu"] = 1.0 - float(self.regularization)
        if self.convergence_tol is not None:
            if self.tol != 1e-5:
                raise ValueError(f"{owner}: give tol or convergence_tol (metric-learn's name for it), not both; got "
                                 f"tol={self.tol!r} and convergence_tol={self.convergence_tol!r}.")
            kw["tol"] = float(self.convergence_tol)
        return kw
