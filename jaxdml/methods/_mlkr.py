"""MLKR: metric learning for kernel regression (record, solve step on continuous targets, estimator)."""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from .._padding import resolve_bucket
from .._validation import Interval, Options
from ..losses._mlkr import RegressionProblem, mlkr
from ..solvers._driver import make_optimizer, minimize
from ..solvers._init import initial_components
from ._base import BaseMetricLearner
from ._gradient import finish
from ._record import Method

__all__ = ["MLKR", "MLKR_METHOD", "MLKR_MAX_ITER"]

#: L-BFGS iterations by default
MLKR_MAX_ITER = 200


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
    return RegressionProblem(X=jnp.asarray(pad(X), dtype), t=jnp.asarray(pad(t), dtype),
                             sample_mask=jnp.asarray(pad(np.ones(n)), dtype))


def _mlkr(X, targets, n_classes, *, n_components, random_state, max_iter, tol, verbose, init="auto",
          optimizer=None, learning_rate=None, pad_to="auto", **_):
    """Minimise the leave-one-out kernel regression error with the optax driver (L-BFGS)."""
    problem = regression_problem(X, targets, pad_to)
    L0 = initial_components(init, X, None, 0, n_components, random_state)
    max_iter = MLKR_MAX_ITER if max_iter is None else int(max_iter)
    tol = 1e-5 if tol is None else float(tol)
    opt = make_optimizer(optimizer or "lbfgs") if optimizer is None or isinstance(optimizer, str) else optimizer
    res = minimize(mlkr, jnp.asarray(L0, problem.X.dtype), problem, optimizer=opt, max_iter=max_iter, tol=tol,
                   learning_rate=learning_rate, verbose=verbose)
    n_iter, hist = finish(res, "mlkr", max_iter, tol)
    return dict(L=np.asarray(res.params, np.float64), n_iter=n_iter, converged=bool(res.converged),
                loss_history=hist, loss=float(res.loss), info=dict(failed=bool(res.failed)))


MLKR_METHOD = Method("mlkr", "L", _mlkr, settings=frozenset({"init", "optimizer", "learning_rate", "pad_to"}),
                     estimator="MLKR", labels=False)

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

    Parameters
    ----------
    n_components : int, default=None
    init : {"auto", "identity", "pca", "random"} or ndarray, default="auto"
        ``"auto"``: identity at full dimension, PCA below.
    max_iter : int, default=None
        L-BFGS iterations (None: 200).
    tol : float, default=1e-5
        Relative loss improvement below which it stops.
    random_state : int, RandomState or None
        Seeds ``init="random"``.
    verbose : int, default=0

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)

    Notes
    -----
    Run to convergence, MLKR can overfit: the leave-one-out error of the training targets keeps
    falling as the kernel sharpens. On scikit-learn's diabetes (min-max scaled, 5-fold CV) 5-NN
    regression after the default fit scores R^2 0.26 against 0.39 with the Euclidean distance
    (metric-learn's MLKR: 0.34); a small budget (``max_iter=5``: 0.42) or a loose ``tol``
    (``1e-2``: 0.40) acts as early stopping. Choose the budget by cross-validation.

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
        "init": _INIT,
        "max_iter": [Interval(numbers.Integral, 1, None), None],
        "tol": [Interval(numbers.Real, 0, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
    }

    def __init__(self, n_components=None, *, init="auto", max_iter=None, tol=1e-5, random_state=None, verbose=0):
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        return tags
