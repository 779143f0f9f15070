"""k-nearest-neighbours classification under a metric learned by any jaxdml method."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import Interval, Options, check_params

__all__ = ["KNN"]


class _MetricMixin:
    """Learn a metric on the training data and embed data with it.

    ``metric_learner`` is one of

    - ``None``: no learning, the Euclidean distance (the embedding is the identity);
    - a method name (``str``) accepted by :func:`jaxdml.fit`, with ``learner_params`` (a dict)
      passed to it as keyword arguments: ``jaxdml.fit(X, y, loss=name, **learner_params)``;
    - an estimator with ``fit``/``transform`` (any jaxdml metric learner, or a scikit-learn
      transformer): it is cloned, given ``learner_params`` with ``set_params`` and fitted.

    The fitted learner is ``metric_learner_`` (a :class:`jaxdml.FittedMetric` for a name).
    """

    _default_learner = None

    def _learner_defaults(self, name: str) -> dict:
        return {}

    def _fit_metric(self, X, y):
        learner = self.metric_learner
        params = dict(self.learner_params or {})
        if learner is None:
            self.metric_learner_ = None
        elif isinstance(learner, str):
            from .._fit import fit

            self.metric_learner_ = fit(X, y, loss=learner, **{**self._learner_defaults(learner), **params})
        elif hasattr(learner, "fit") and hasattr(learner, "transform"):
            est = clone(learner)
            if params:
                est.set_params(**params)
            self.metric_learner_ = est.fit(X, y)
        else:
            raise ValueError(
                f"{type(self).__name__}: metric_learner must be None, a jaxdml method name or an "
                f"estimator with fit/transform; got {learner!r}."
            )

    def _embed(self, X):
        if self.metric_learner_ is None:
            return X
        return np.asarray(self.metric_learner_.transform(X), dtype=np.float64)

    def _validate_fit(self, X, y):
        check_params(self.get_params(deep=False), self._parameter_constraints, owner=type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        return X, y

    def _validate_predict(self, X):
        check_is_fitted(self, "classes_")
        return validate_data(self, X, reset=False, dtype=np.float64)


_LEARNER_CONSTRAINTS = {
    "metric_learner": [None, str, object],
    "learner_params": [None, "dict"],
}


class KNN(_MetricMixin, ClassifierMixin, BaseEstimator):
    """k-nearest-neighbours classifier under a learned distance.

    ``fit`` (1) learns a metric on the training data with ``metric_learner`` (see below),
    (2) embeds the training data with it (its ``transform``: squared Euclidean distances in the
    embedding are the learned Mahalanobis distances) and (3) fits scikit-learn's
    ``KNeighborsClassifier`` on the embedding. ``predict``/``predict_proba`` embed the queries
    with the same map and ask the fitted k-NN. It is equivalent to
    ``Pipeline([("dml", learner), ("knn", KNeighborsClassifier(n_neighbors))])``, in one object.
    ``predict_loo``/``predict_proba_loo``/``score_loo`` classify the stored training samples by
    leave-one-out (each by its ``n_neighbors`` nearest *other* training samples).

    Parameters
    ----------
    n_neighbors : int, default=3
    metric_learner : None, str or estimator, default=None
        ``None``: Euclidean distance. A name such as ``"lmnn"``, ``"nca"``, ``"itml"``: the metric is
        ``jaxdml.fit(X, y, loss=name, **learner_params)``. An estimator (e.g. ``jaxdml.LMNN()``):
        cloned, updated with ``set_params(**learner_params)`` and fitted.
    learner_params : dict, default=None
        Keyword arguments for the learner.
    weights : {"uniform", "distance"}, default="uniform"
        As in ``KNeighborsClassifier``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    metric_learner_ : fitted estimator, FittedMetric or None
    knn_ : the fitted ``KNeighborsClassifier`` on the embedded training data

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> knn = jaxdml.KNN(3, metric_learner="nca", learner_params={"max_iter": 20}).fit(X, y)
    >>> knn.score(X, y) > 0.9
    True
    """

    _parameter_constraints = {
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "weights": [Options({"uniform", "distance"})],
        **_LEARNER_CONSTRAINTS,
    }

    def __init__(self, n_neighbors=3, *, metric_learner=None, learner_params=None, weights="uniform"):
        self.n_neighbors = n_neighbors
        self.metric_learner = metric_learner
        self.learner_params = learner_params
        self.weights = weights

    def fit(self, X, y):
        """Learn the metric, then store the embedded training data for k-NN."""
        X, y = self._validate_fit(X, y)
        self._fit_metric(X, y)
        Z = self._embed(X)
        self.knn_ = KNeighborsClassifier(self.n_neighbors, weights=self.weights).fit(Z, y)
        self.classes_ = self.knn_.classes_
        self._train = (Z, np.searchsorted(self.classes_, y))
        return self

    def embed(self, X):
        """Embed ``X`` with the learned metric."""
        return self._embed(self._validate_predict(X))

    def predict(self, X):
        """Majority label of the ``n_neighbors`` nearest training samples under the learned metric."""
        Z = self.embed(X)
        return self.knn_.predict(Z)

    def predict_proba(self, X):
        """Fraction (or distance weight) of each class among the nearest training samples."""
        Z = self.embed(X)
        return self.knn_.predict_proba(Z)

    # ------------------------------------------------------------------ leave-one-out on the training set
    def predict_proba_loo(self):
        """Leave-one-out class probabilities of the training samples: each one is classified by its
        ``n_neighbors`` nearest *other* training samples (under the learned metric, which was fitted on
        all of them).

        Returns
        -------
        ndarray of shape (n_train, n_classes)
        """
        from ._multidml import knn_batched

        check_is_fitted(self, "classes_")
        Z, codes = self._train
        if self.n_neighbors >= Z.shape[0]:
            raise ValueError(f"leave-one-out needs n_neighbors={self.n_neighbors} < n_samples={Z.shape[0]}.")
        return knn_batched(Z[None], Z[None], codes, len(self.classes_), self.n_neighbors, weights=self.weights,
                           exclude_self=True)[0]

    def predict_loo(self):
        """Leave-one-out predictions of the training samples (see :meth:`predict_proba_loo`)."""
        return self.classes_[np.argmax(self.predict_proba_loo(), axis=1)]

    def score_loo(self):
        """Leave-one-out accuracy on the training set (see :meth:`predict_proba_loo`)."""
        _, codes = self._train
        return float(np.mean(self.predict_loo() == self.classes_[codes]))
