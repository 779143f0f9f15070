"""MMC: Xing et al.'s Mahalanobis Metric for Clustering under metric-learn's name - the LSI method
(one implementation, two names; LSI's solve step with metric-learn's parameter names)."""

from __future__ import annotations

from ._lsi import LSI_METHOD
from ._pairs import ESTIMATOR_CONSTRAINTS, PairsMetricLearner

__all__ = ["MMC", "MMC_METHOD"]

_MAX_PROJ = {"max_proj": LSI_METHOD.constraints["proj_iter"]}
#: LSI's defaults (MMC follows them, whatever LSI chooses)
_LSI = LSI_METHOD.defaults


def _mmc(X, codes, n_classes, *, max_proj, **kw):
    """LSI's solve step; metric-learn's ``max_proj`` is LSI's ``proj_iter``."""
    return LSI_METHOD.solve(X, codes, n_classes, proj_iter=max_proj, name="mmc", **kw)


_DEFAULTS = {k: v for k, v in LSI_METHOD.defaults.items() if k != "proj_iter"}
MMC_METHOD = LSI_METHOD._replace(
    name="mmc", solve=_mmc, estimator="MMC",
    defaults={**_DEFAULTS, "max_proj": LSI_METHOD.defaults["proj_iter"]},
    constraints={**{k: v for k, v in LSI_METHOD.constraints.items() if k != "proj_iter"}, **_MAX_PROJ},
)


class MMC(PairsMetricLearner):
    r"""Mahalanobis Metric for Clustering (Xing, Ng, Jordan and Russell, 2002): metric-learn's name for LSI.

    .. math::

        \max_{M \succeq 0} \sum_{(i,j)\in D} \|x_i - x_j\|_M \quad\text{s.t.}\quad
        \sum_{(i,j)\in S}\|x_i - x_j\|_M^2 \le 1

    The same implementation as :class:`jaxdml.LSI` (see there for the solver, the defaults and
    ``reg``), with metric-learn's parameter names: ``max_proj`` is LSI's ``proj_iter`` (Dykstra
    projection rounds per step). ``fit(X, y)`` builds the pairs from labels
    (metric-learn's ``MMC_Supervised``); ``fit(pairs, y)`` takes formed pairs (n_pairs, 2, n_features)
    with ``y`` in {-1, +1} (or 1/0, or booleans; or index pairs with ``preprocessor``), metric-learn's ``MMC``; and
    ``fit(X, pairs=..., similar=...)`` index pairs into ``X``.

    Parameters
    ----------
    max_iter : int, default=None
        Gradient steps (None: LSI's early-stopping budget of 50).
    max_proj : int
        Projection rounds per step (default: LSI's ``proj_iter``).
    tol : float, default=1e-5
    learning_rate : float, default: LSI's
    reg : float, default: LSI's
    n_constraints : int, default=None
    n_components : int, default=None
        Rank-``n_components`` eigen-truncation of the learned metric (as :class:`jaxdml.LSI`).
    preprocessor : array-like or callable, default=None
        Rows for integer index pairs (``fit(idx_pairs, y)``), as in metric-learn.
    random_state : int, RandomState or None
    verbose : int, default=0

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.MMC().fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan, S. Russell. Distance metric learning with application to
    clustering with side-information. NIPS 2002.
    """

    _record = MMC_METHOD
    _parameter_constraints = {**ESTIMATOR_CONSTRAINTS, **_MAX_PROJ,
                              **{k: LSI_METHOD.constraints[k] for k in ("learning_rate", "reg")}}

    def __init__(self, max_iter=None, max_proj=_LSI["proj_iter"], tol=1e-5, *, learning_rate=_LSI["learning_rate"],
                 reg=_LSI["reg"], n_constraints=None, random_state=None, verbose=0, n_components=None,
                 preprocessor=None):
        self.max_iter = max_iter
        self.n_components = n_components
        self.preprocessor = preprocessor
        self.max_proj = max_proj
        self.tol = tol
        self.learning_rate = learning_rate
        self.reg = reg
        self.n_constraints = n_constraints
        self.random_state = random_state
        self.verbose = verbose
