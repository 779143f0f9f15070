"""k-nearest-neighbours prediction of ordered integer grades under a learned distance."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import Interval, check_params
from ..neighbors import knn_search
from ._knn import _LEARNER_CONSTRAINTS, _MetricMixin

__all__ = ["KNeighborsOrdinal", "median_grade"]


def median_grade(grades) -> np.ndarray:
    """The lower median of each row of neighbour grades (n_queries, k): a grade that occurs.

    The median minimises the summed absolute deviation from the neighbours' grades, so it is the
    k-NN estimate for the mean absolute error; it uses only the order of the grades, not their
    spacing (the mean would treat the grades as numbers on an interval scale). For even k any value
    between the two middle grades is a median; the lower one is taken.
    """
    g = np.sort(np.asarray(grades), axis=1)
    return g[:, (g.shape[1] - 1) // 2]


class KNeighborsOrdinal(_MetricMixin, BaseEstimator):
    """k-NN ordinal predictor: the median grade of the ``n_neighbors`` nearest training samples.

    ``fit`` learns a metric with ``metric_learner`` (``None``: Euclidean; a method name such as
    ``"lodml"`` for :func:`jaxdml.fit`; or an estimator such as ``jaxdml.CMOML()``), embeds the
    training data with it and keeps them (an exact search, :func:`jaxdml.neighbors.knn_search`). ``predict`` returns
    :func:`median_grade` of the neighbours' grades; ``score`` is minus the mean absolute error
    (greater is better, scikit-learn's ``neg_mean_absolute_error`` convention).

    Parameters
    ----------
    n_neighbors : int, default=5
    metric_learner : None, str or estimator, default=None
    learner_params : dict, default=None

    Attributes
    ----------
    grades_ : ndarray of the training grades
    metric_learner_ : fitted estimator, FittedMetric or None
    train_embedding_ : ndarray of shape (n_samples, n_components), the embedded training data

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.arange(20.0)[:, None]; y = np.repeat([1, 2, 3, 4], 5)
    >>> jaxdml.KNeighborsOrdinal(3).fit(X, y).predict([[0.5], [18.0]]).tolist()
    [1, 4]
    """

    _parameter_constraints = {"n_neighbors": [Interval(numbers.Integral, 1, None)], **_LEARNER_CONSTRAINTS}

    def __init__(self, n_neighbors=5, *, metric_learner=None, learner_params=None):
        self.n_neighbors = n_neighbors
        self.metric_learner = metric_learner
        self.learner_params = learner_params

    def fit(self, X, y):
        """Learn the metric, then index the embedded training data."""
        check_params(self.get_params(deep=False), self._parameter_constraints, owner=type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        t = np.asarray(y, dtype=np.float64)
        if np.any(t != np.round(t)):
            raise ValueError("KNeighborsOrdinal: y must hold integer grades; got non-integer values such as "
                             f"{t[t != np.round(t)][0]!r}.")
        if self.n_neighbors > X.shape[0]:
            raise ValueError(f"KNeighborsOrdinal: n_neighbors={self.n_neighbors} exceeds n_samples={X.shape[0]}.")
        self._fit_metric(X, y)
        self.grades_ = np.asarray(y)
        self.train_embedding_ = np.asarray(self._embed(X), dtype=np.float64)
        return self

    def kneighbors(self, X):
        """Indices of the ``n_neighbors`` nearest training samples under the learned metric (equal distances:
        the earlier training sample first, :mod:`jaxdml.neighbors`)."""
        check_is_fitted(self, "grades_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        idx, _ = knn_search(np.asarray(self._embed(X), dtype=np.float64), self.n_neighbors, Y=self.train_embedding_)
        return idx

    def predict(self, X):
        """The median grade of the nearest training samples."""
        idx = self.kneighbors(X)
        return median_grade(self.grades_[idx])

    def score(self, X, y):
        """Minus the mean absolute error of :meth:`predict` (greater is better)."""
        return -float(np.mean(np.abs(self.predict(X) - np.asarray(y, dtype=np.float64))))
