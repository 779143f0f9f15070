"""MLKR: metric learning for kernel regression (record, solve step on continuous targets, estimator)."""

from __future__ import annotations

import functools
import numbers
import threading

import jax.numpy as jnp
import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._device import to_device
from ..._runtime._executable_cache import cached_jit
from ..._runtime._padding import resolve_bucket
from ..._runtime._warnings import warn_not_converged
from ..._validation import Interval, Options
from ...linalg import centred_rows
from ...losses._mlkr import RegressionProblem, mlkr
from ...solvers._driver import minimize
from ...solvers._result import FittedMetric
from ..core._base import BaseMetricLearner
from ..core._plan import execute, plan
from ..core._record import MAX_ROWS, LossSpec, Method, Route, rows_to_fit

__all__ = ["MLKR", "MLKR_METHOD", "MLKR_MAX_ITER", "MLKR_MAX_ROWS"]

#: L-BFGS iterations by default
MLKR_MAX_ITER = 200
#: early stopping: L-BFGS restarts every so many iterations (to look at the held-out error)
MLKR_CHECK_EVERY = 10
#: early stopping: iterations without a lower held-out error before stopping
MLKR_PATIENCE = 10
#: ``max_rows="auto"``: above this many rows the fit runs on a random subsample of this size. An
#: L-BFGS step costs O(n^2 d) (every row predicts every other), so the full objective does not
#: scale, and the d x d map is pinned down by far fewer rows: make_friedman1 (40 000 training rows,
#: 5-NN regression R^2 on 2 000 held out) 2 500 / 5 000 / 10 000 fitted rows give 0.9453 / 0.9462 /
#: 0.9468 with 10 features and 0.909 / 0.9276 / 0.9299 with 40, at 2-2.5x the time per doubling
#: (benchmarks/PROTOCOL.md, round 7).
MLKR_MAX_ROWS = 5_000


def regression_problem(X, t, pad_to="auto") -> RegressionProblem:
    """The padded :class:`RegressionProblem` of ``X`` and targets ``t`` (standardised: the leave-one-out
    predictions are affine-equivariant, so the minimiser is unchanged and ``tol`` is scale-free)."""
    n = X.shape[0]
    std = float(np.std(t))
    if not std > 0:
        raise ValueError("MLKR: the targets y are constant; there is nothing to regress.")
    t = (np.asarray(t, np.float64) - np.mean(t)) / std
    bucket = resolve_bucket(n, pad_to)
    dtype = jnp.result_type(float)
    pad = lambda a: np.concatenate([a, np.zeros((bucket - n,) + a.shape[1:])])  # noqa: E731
    # cast on the host (jnp.asarray with a dtype compiles a conversion program per shape)
    return RegressionProblem(X=to_device(pad(X), dtype), t=to_device(pad(t), dtype),
                             sample_mask=to_device(pad(np.ones(n)), dtype))


def _split(n, fraction, rng):
    """Random (fit, validation) row indices; None when there are too few rows to hold any out."""
    n_val = int(round(fraction * n))
    if n_val < 5 or n - n_val < 10:
        return None
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


class _Iterates:
    """Host-side sink of the driver's per-iteration callback (one module-level callable, so that the
    compiled runner is shared by every early-stopped fit): the held-out error of each iterate.
    ``lock`` serialises the early-stopped fits of one process (a fit owns ``watch`` while it runs)."""

    def __init__(self):
        self.watch = None
        self.lock = threading.Lock()

    def __call__(self, params, n_iter, loss):
        if self.watch is not None:
            self.watch(np.asarray(params, np.float64))


_ITERATES = _Iterates()

#: the objective at the returned map, as one compiled program through the executable cache (op by op
#: it dispatches every primitive of the blockwise log-sum-exp separately: seconds in a fresh process)
_mlkr_value = cached_jit(mlkr)


def _heldout_error_np(L, Xf, tf, Xv, tv, block_elements: int = 1 << 22):
    """Nadaraya-Watson squared error of the rows ``Xv`` predicted from ``Xf`` under ``L`` (in blocks of
    validation rows: at most ``block_elements`` pairwise entries at once)."""
    Zf, Zv = Xf @ L.T, Xv @ L.T
    sf = np.sum(Zf**2, 1)[None, :]
    step = max(1, block_elements // max(len(Zf), 1))
    total = 0.0
    for i in range(0, len(Zv), step):
        z = Zv[i:i + step]
        logits = -np.maximum(np.sum(z**2, 1)[:, None] + sf - 2.0 * z @ Zf.T, 0.0)
        w = np.exp(logits - logits.max(1, keepdims=True))
        total += float(np.sum((tv[i:i + step] - (w @ tf) / w.sum(1)) ** 2))
    return total / len(Zv)


def _early_stopped(X, t, L0, split, opt, *, max_iter, tol, learning_rate, verbose, pad_to):
    """L-BFGS on the fit rows (restarted every :data:`MLKR_CHECK_EVERY` iterations); the
    kernel-regression error of the validation rows, predicted from the fit rows, is measured at
    every iterate; stops once it has not improved for :data:`MLKR_PATIENCE` iterations. Returns
    the iterate with the lowest validation error."""
    fit, val = split
    mean, std = float(np.mean(t[fit])), float(np.std(t[fit]))
    if not std > 0:
        raise ValueError("MLKR: the targets y are constant; there is nothing to regress.")
    problem = regression_problem(X[fit], t[fit], pad_to)
    Xf, tf, Xv, tv = X[fit], (t[fit] - mean) / std, X[val], (t[val] - mean) / std
    track = dict(best=_heldout_error_np(L0, Xf, tf, Xv, tv), L=np.asarray(L0, np.float64), since=0, seen=0)
    val_hist = [track["best"]]

    def watch(L):
        v = _heldout_error_np(L, Xf, tf, Xv, tv)
        val_hist.append(v)
        track["seen"] += 1
        if v < track["best"]:
            track.update(best=v, L=L, since=0)
        else:
            track["since"] += 1

    L, hist = to_device(L0, problem.X.dtype), []
    with _ITERATES.lock:
        _ITERATES.watch = watch
        try:
            return _run_watched(L, problem, opt, track, val_hist, hist, max_iter=max_iter, tol=tol,
                                learning_rate=learning_rate, verbose=verbose)
        finally:
            _ITERATES.watch = None


def _run_watched(L, problem, opt, track, val_hist, hist, *, max_iter, tol, learning_rate, verbose):
    """The restarted L-BFGS loop of :func:`_early_stopped` while ``_ITERATES.watch`` records iterates."""
    done = 0
    while done < max_iter and track["since"] < MLKR_PATIENCE:
        res = minimize(mlkr, L, problem, optimizer=opt, max_iter=min(MLKR_CHECK_EVERY, max_iter - done), tol=tol,
                       learning_rate=learning_rate, verbose=verbose, callback=_ITERATES)
        n_iter = int(res.n_iter)  # minimize returns once every iterate's callback has run
        hist.extend(np.asarray(res.loss_history, np.float64)[: n_iter + 1].tolist())
        done, L = done + max(n_iter, 1), res.params
        if bool(res.converged) or bool(res.failed):
            break
    stopped = track["since"] >= MLKR_PATIENCE or bool(res.converged)
    return track["L"], done, stopped, np.asarray(hist), dict(validation_error=np.asarray(val_hist),
                                                             failed=bool(res.failed))


def _solve_early_stopped(p, *, X, t, validation_fraction, pad_to):
    """The solve step of :func:`early_stopping_route` on the plan ``p`` (its optimizer, initial map,
    ``max_iter``, ``tol``): held-out early stopping on the host rows ``X`` (centred) and targets ``t``; with
    too few rows to hold any out, the plan's plain driver run."""
    split = _split(X.shape[0], validation_fraction, check_random_state(p.random_state))
    if split is None:
        return execute(p._replace(route=None))
    L0 = np.asarray(p.params0, np.float64)
    L, n_iter, converged, hist, info = _early_stopped(X, t, L0, split, p.optimizer, max_iter=p.max_iter, tol=p.tol,
                                                      learning_rate=p.learning_rate, verbose=p.verbose,
                                                      pad_to=pad_to)
    if not converged:
        warn_not_converged(p.name, p.max_iter, p.tol)
    loss = float(_mlkr_value(to_device(L, p.problem.X.dtype), p.problem))
    return FittedMetric(L=np.asarray(L, np.float64), method=p.name, n_iter=n_iter, converged=converged,
                        loss_history=hist, loss=loss, info=dict(p.info, solver="early_stopping", **info))


def early_stopping_route(X, t, validation_fraction, pad_to) -> Route:
    """MLKR's held-out early stopping as a :class:`Route` of the one gradient plan: its solver restarts the
    plan's driver (``driver=True``: the plan resolves the optimizer and ``max_iter`` as for a plain fit) and
    watches the error of held-out rows of ``X`` (host rows, centred) and ``t``."""
    solve = functools.partial(_solve_early_stopped, X=X, t=t, validation_fraction=validation_fraction,
                              pad_to=pad_to)
    return Route("early_stopping", lambda *_, **__: True, solve, driver=True)


#: MLKR's loss and defaults as the gradient plan reads them
MLKR_SPEC = LossSpec(mlkr, "L", optimizer="lbfgs", max_iter=MLKR_MAX_ITER)


def _mlkr(X, targets, n_classes, *, n_components, random_state, max_iter, tol, verbose, early_stopping,
          validation_fraction, max_rows="auto", init="auto", optimizer=None, learning_rate=None, pad_to="auto",
          **_):
    """Minimise the leave-one-out kernel regression error through the one gradient plan (L-BFGS); by
    default stop early on the error of held-out rows (:func:`early_stopping_route`); above ``max_rows``
    rows, on a random subsample."""
    t = np.asarray(targets, np.float64)
    keep = rows_to_fit(np.zeros(X.shape[0], int), max_rows, MLKR_MAX_ROWS, random_state)
    if keep is not None:
        X, t = X[keep], t[keep]
    X = centred_rows(X)  # distances are unchanged; float32 keeps the differences of rows far from 0
    route = early_stopping_route(X, t, validation_fraction, pad_to) if early_stopping else None

    def problem_fn(Xc):
        problem = regression_problem(Xc, t, pad_to)
        return problem, Xc.shape[0], problem.X.shape[0]

    res = execute(plan(MLKR_SPEC, "mlkr", X, None, 0, n_components=n_components, random_state=random_state,
                       max_iter=max_iter, tol=1e-5 if tol is None else float(tol), verbose=verbose, init=init,
                       optimizer=optimizer, learning_rate=learning_rate, batch_size=None, n_candidates=None,
                       route=route, problem_fn=problem_fn,
                       info=dict(n_fitted_rows=X.shape[0], subsample=keep is not None)))
    return dict(L=res.L, n_iter=res.n_iter, converged=res.converged, loss_history=res.loss_history, loss=res.loss,
                info=res.info)


_CONSTRAINTS = {"early_stopping": ["boolean"],
                "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
                "max_rows": MAX_ROWS}

MLKR_METHOD = Method("mlkr", "L", _mlkr, settings=frozenset({"init", "optimizer", "learning_rate", "pad_to"}),
                     defaults=dict(early_stopping=True, validation_fraction=0.2, max_rows="auto"),
                     constraints=_CONSTRAINTS, estimator="MLKR", labels=False)

_INIT = [Options({"auto", "identity", "pca", "random"}), "array-like"]


class MLKR(BaseMetricLearner):
    r"""Metric Learning for Kernel Regression (Weinberger and Tesauro, 2007): continuous targets.

    Minimises the leave-one-out error of Nadaraya-Watson regression with the Gaussian kernel of
    the learned distance,

    .. math::

        \min_L \frac1n \sum_i \Big(y_i - \frac{\sum_{j\ne i} y_j e^{-\|L(x_i - x_j)\|^2}}
        {\sum_{j\ne i} e^{-\|L(x_i - x_j)\|^2}}\Big)^2

    (log-sum-exp stabilised; targets standardised internally) with full-batch L-BFGS
    (:func:`jaxdml.losses.mlkr`, :func:`jaxdml.minimize`). ``y`` holds real-valued targets.

    Run to convergence, this objective overfits: the leave-one-out error of the training targets
    keeps falling while the kernel sharpens (``||L||`` grows from 3 to 60-100 on diabetes) and the
    metric stops generalising. By default (``early_stopping=True``) a random
    ``validation_fraction`` of the rows is held out: L-BFGS fits the others and, at every
    iterate, the Nadaraya-Watson error of the held-out targets (predicted from the fitted rows)
    is measured; the fit stops once it has not improved for 10 iterations and returns the
    iterate with the lowest held-out error (early stopping as scikit-learn's MLP does it; the
    returned map is trained on the other rows).

    Parameters
    ----------
    n_components : int, default=None
    init : {"auto", "identity", "pca", "random"} or ndarray, default="auto"
        ``"auto"``: identity at full dimension, PCA below.
    max_iter : int, default=None
        L-BFGS iterations (None: 200).
    tol : float, default=1e-5
        Relative loss improvement below which it stops.
    early_stopping : bool, default=True
        Stop on the error of held-out rows (above); False minimises the objective on all rows.
    validation_fraction : float in (0, 1), default=0.2
        Share of the rows held out for early stopping (ignored below 5 held-out or 10 fitted rows).
    max_rows : "auto", int or None, default="auto"
        The fit runs on a random subsample of this many rows when there are more (``"auto"``:
        5 000; None: every row). Each step of the objective compares every row with every other,
        O(n^2 d); the map is applied to all rows. ``info["n_fitted_rows"]`` and
        ``info["subsample"]`` say what was fitted.
    random_state : int, RandomState or None
        Seeds the subsample, the held-out split and ``init="random"``.
    verbose : int, default=0
    preprocessor : array-like or callable, default=None
        metric-learn's preprocessor: with it, a 1-D ``X`` in ``fit`` and ``transform`` holds sample
        identifiers, read as ``preprocessor[X]`` (an array: integer indices) or ``preprocessor(X)`` (a
        callable: any identifiers it maps to rows, e.g. file names).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)

    Notes
    -----
    On scikit-learn's diabetes (min-max scaled, 5-fold CV, shuffled with seed 0) 5-NN regression
    scores R^2 0.41 after the default fit, against 0.39 with the Euclidean distance, 0.29 with
    ``early_stopping=False`` (the objective minimised on all rows) and 0.34 with metric-learn's
    MLKR (which minimises it too).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> import jaxdml
    >>> X, y = load_diabetes(return_X_y=True)
    >>> jaxdml.MLKR(n_components=3, max_iter=20).fit(X, y).transform(X).shape
    (442, 3)

    References
    ----------
    K. Q. Weinberger, G. Tesauro. Metric learning for kernel regression. AISTATS 2007.
    """

    _record = MLKR_METHOD
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None), None],
        "preprocessor": ["array-like", "callable", None],
        "init": _INIT,
        "max_iter": [Interval(numbers.Integral, 1, None), None],
        "tol": [Interval(numbers.Real, 0, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
        **_CONSTRAINTS,
    }

    def __init__(self, n_components=None, *, init="auto", max_iter=None, tol=1e-5, early_stopping=True,
                 validation_fraction=0.2, max_rows="auto", random_state=None, verbose=0, preprocessor=None):
        self.preprocessor = preprocessor
        self.n_components = n_components
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.max_rows = max_rows
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        return tags
