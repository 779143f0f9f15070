"""Any registered method as a scikit-learn estimator (for methods without a class of their own)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.validation import validate_data

from .._validation import Interval, check_params
from ._registry import get_method
from .core._base import BaseMetricLearner
from .core._engine import run
from .core._record import SETTINGS

__all__ = ["MetricLearner"]


class MetricLearner(BaseMetricLearner):
    """A scikit-learn transformer for any method of :func:`jaxdml.methods`, by name.

    Parameters
    ----------
    method : str, default="nca"
        A registered method name (built-in or added with :func:`jaxdml.register_method`).
    params : dict, default=None
        The method's hyper-parameters and :func:`jaxdml.fit` settings (``max_iter``, ``init``, ...).
    n_components : int, default=None
    random_state : int, RandomState or None

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.MetricLearner("lmnn", params={"max_iter": 20}).fit(X, y).components_.shape
    (4, 4)
    """

    _parameter_constraints = {
        "method": [str],
        "params": [dict, None],
        "n_components": [Interval(numbers.Integral, 1, None), None],
        "random_state": ["random_state"],
    }

    def __init__(self, method="nca", *, params=None, n_components=None, random_state=None):
        self.method = method
        self.params = params
        self.n_components = n_components
        self.random_state = random_state

    def _get_record(self):
        return get_method(self.method)

    def fit(self, X, y=None):
        """Learn the metric of ``self.method`` from ``X`` and (if it needs them) labels ``y``."""
        check_params(self.get_params(deep=False), self._parameter_constraints, owner=type(self).__name__)
        record = self._get_record()
        if record.supervised or y is not None:
            X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2, y_numeric=False)
        else:
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        kw = dict(self.params or {})
        core = {k: kw.pop(k) for k in ("max_iter", "tol", "verbose") if k in kw}
        settings = {k: kw.pop(k) for k in list(kw) if k in SETTINGS}
        # the parameters in ``params`` are the method's: checked here, once, by the record
        result = run(record, X, y, n_components=self.n_components, random_state=self.random_state,
                     settings=settings, hyper=kw, **core)
        self._store(result)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags
