"""pyDML's classifiers over jaxdml's: ``kNN``, ``NCMC_Classifier``, ``MultiDML_kNN``,
``CondensedNearestNeighbors``, ``ReducedNearestNeighbors``.

A call without data (``kNN.predict()``, ``kNN.score()``, ``MultiDML_kNN.score_all()``) classifies
the training samples by leave-one-out, as pyDML does (jaxdml's ``predict_loo``/``score_loo``). A
learner given to ``kNN`` must already be fitted (as in pyDML); ``MultiDML_kNN`` fits its learners
in place, so that they are fitted afterwards as with pyDML.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted

from .. import classifiers as _c
from ._base import check_pydml_params, note

__all__ = ["kNN", "NCMC_Classifier", "MultiDML_kNN", "CondensedNearestNeighbors", "ReducedNearestNeighbors"]


def _frozen(dml):
    """A fitted learner that jaxdml's classifiers use as it is (cloning and ``fit`` leave it alone)."""
    return None if dml is None else FrozenEstimator(dml)


class kNN(BaseEstimator):
    """k-nearest neighbours under the distance of a fitted learner, and under the Euclidean one
    (the ``*_orig`` methods), over :class:`jaxdml.KNN`.

    Parameters
    ----------
    n_neighbors : int
    dml_algorithm : fitted learner (``transform``), or None (the Euclidean distance)
    """

    def __init__(self, n_neighbors, dml_algorithm):
        self.n_neighbors = n_neighbors
        self.dml_algorithm = dml_algorithm

    def fit(self, X, y):
        """Store the training data (embedded by the learner) for both k-NN classifiers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        check_pydml_params(self)
        self.knn_ = _c.KNN(self.n_neighbors, metric_learner=_frozen(self.dml_algorithm)).fit(X, y)
        self.knn_orig_ = _c.KNN(self.n_neighbors).fit(X, y)
        self.X_, self.y_ = np.asarray(X, dtype=np.float64), np.asarray(y)
        return self

    def _pick(self, orig):
        check_is_fitted(self, "knn_")
        return self.knn_orig_ if orig else self.knn_

    def predict(self, X=None):
        """Labels of ``X``; None: the training samples by leave-one-out."""
        knn = self._pick(False)
        return knn.predict_loo() if X is None else knn.predict(X)

    def predict_orig(self, X=None):
        """As :meth:`predict`, under the Euclidean distance."""
        knn = self._pick(True)
        return knn.predict_loo() if X is None else knn.predict(X)

    def predict_proba(self, X=None):
        """Class probabilities of ``X``; None: the training samples by leave-one-out."""
        knn = self._pick(False)
        return knn.predict_proba_loo() if X is None else knn.predict_proba(X)

    def predict_proba_orig(self, X=None):
        """As :meth:`predict_proba`, under the Euclidean distance."""
        knn = self._pick(True)
        return knn.predict_proba_loo() if X is None else knn.predict_proba(X)

    def score(self, X=None, y=None):
        """Accuracy on ``(X, y)``; without ``X``, leave-one-out accuracy on the training set."""
        knn = self._pick(False)
        return knn.score_loo() if X is None else knn.score(X, y)

    def score_orig(self, X=None, y=None):
        """As :meth:`score`, under the Euclidean distance."""
        knn = self._pick(True)
        return knn.score_loo() if X is None else knn.score(X, y)

    def _loo(self, X):
        check_is_fitted(self, "knn_")
        return _c.KNN(self.n_neighbors).fit(X, self.y_)

    def loo_prob(self, X):
        """Leave-one-out class probabilities of the (already transformed) training data ``X``."""
        return self._loo(X).predict_proba_loo()

    def loo_pred(self, X):
        """Leave-one-out predictions of the (already transformed) training data ``X``."""
        return self._loo(X).predict_loo()

    def loo_score(self, X):
        """Leave-one-out accuracy of the (already transformed) training data ``X``."""
        return self._loo(X).score_loo()


class NCMC_Classifier(ClassifierMixin, BaseEstimator):
    """Nearest class with multiple centroids, over :class:`jaxdml.NCMCClassifier`.

    Parameters
    ----------
    centroids_num : int or list of int, default=3
        Centroids per class (a list: one count per class, in the order of the sorted labels).
    **kmeans_kwargs
        k-means arguments: ``n_init`` and ``random_state`` are passed on; the others warn once.
    """

    def __init__(self, centroids_num=3, **kmeans_kwargs):
        self.centroids_num = centroids_num
        self.kmeans_kwargs = dict(kmeans_kwargs)

    def get_params(self, deep=True):
        """``centroids_num`` and the k-means keyword arguments."""
        return {"centroids_num": self.centroids_num, **self.kmeans_kwargs}

    def set_params(self, **params):
        """Set ``centroids_num`` or k-means keyword arguments."""
        for k, v in params.items():
            if k == "centroids_num":
                self.centroids_num = v
            else:
                self.kmeans_kwargs[k] = v
        return self

    def fit(self, X, y):
        """Compute the centroids of every class by k-means.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        check_pydml_params(self)
        kw = dict(self.kmeans_kwargs)
        extra = sorted(set(kw) - {"n_init", "random_state"})
        if extra:
            note("NCMC_Classifier", "kmeans_kwargs", f"k-means arguments {extra} have no counterpart; ignored.")
        n_init = kw.get("n_init", 3)
        cn = self.centroids_num if np.isscalar(self.centroids_num) else list(self.centroids_num)
        self.ncmc_ = _c.NCMCClassifier(cn, n_init=3 if n_init == "auto" else n_init,
                                       random_state=kw.get("random_state")).fit(X, y)
        self.classes_ = self.ncmc_.classes_
        return self

    def predict(self, X):
        """The class of the nearest centroid."""
        check_is_fitted(self, "ncmc_")
        return self.ncmc_.predict(X)

    def predict_proba(self, X):
        """Class probabilities of the multiple-centroid softmax model (:class:`jaxdml.NCMCClassifier`)."""
        check_is_fitted(self, "ncmc_")
        return self.ncmc_.predict_proba(X)


class MultiDML_kNN(BaseEstimator):
    """k-NN under several learners at once, the Euclidean distance first, over :class:`jaxdml.MultiDML_kNN`.

    Parameters
    ----------
    n_neighbors : int
    dmls : learner or list of learners, default=None
        Fitted in place by ``fit`` (as in pyDML).
    verbose : bool, default=False
    **knn_args
        ``weights`` is passed on; a non-Euclidean ``metric`` or ``p`` warns once (jaxdml's batched
        k-NN is Euclidean in each learned space); the other arguments (``algorithm``, ``n_jobs``, ...)
        do not change the result.
    """

    def __init__(self, n_neighbors, dmls=None, verbose=False, **knn_args):
        self.n_neighbors = n_neighbors
        self.dmls = dmls
        self.verbose = verbose
        self.knn_args = dict(knn_args)

    def get_params(self, deep=True):
        """pyDML's parameters, the k-NN keyword arguments included."""
        return {"n_neighbors": self.n_neighbors, "dmls": self.dmls, "verbose": self.verbose, **self.knn_args}

    def set_params(self, **params):
        """Set parameters (unknown names are k-NN keyword arguments, as in the constructor)."""
        for k, v in params.items():
            if k in ("n_neighbors", "dmls", "verbose"):
                setattr(self, k, v)
            else:
                self.knn_args[k] = v
        return self

    def _learners(self):
        return [] if self.dmls is None else list(self.dmls) if isinstance(self.dmls, (list, tuple)) else [self.dmls]

    def add(self, dmls):
        """Add a learner (or a list of learners) to compare."""
        self.dmls = self._learners() + (list(dmls) if isinstance(dmls, (list, tuple)) else [dmls])

    def fit(self, X, y):
        """Fit every learner on ``(X, y)`` (in place, timed) and store the embedded training data."""
        check_pydml_params(self)
        args = dict(self.knn_args)
        if args.get("metric", "minkowski") not in ("minkowski", "euclidean") or args.get("p", 2) != 2:
            note("MultiDML_kNN", "metric", "jaxdml's batched k-NN is Euclidean in each learned space; metric and p "
                                           "are ignored.")
        self.elapsed_ = [0.0]
        for dml in self._learners():
            if self.verbose:
                print("* Training DML ", type(dml).__name__, "...")
            start = time.perf_counter()
            dml.fit(X, y)
            self.elapsed_.append(time.perf_counter() - start)
        self.multi_ = _c.MultiDML_kNN(self.n_neighbors, dmls=[None, *map(_frozen, self._learners())],
                                      weights=args.get("weights", "uniform")).fit(X, y)
        return self

    def elapsed(self):
        """Fit seconds of each learner (0 for the Euclidean distance)."""
        check_is_fitted(self, "multi_")
        return list(self.elapsed_)

    def predict_all(self, X=None):
        """Predicted labels under each learner; None: the training samples by leave-one-out."""
        check_is_fitted(self, "multi_")
        return self.multi_.predict_loo_all() if X is None else self.multi_.predict_all(X)

    def predict_proba_all(self, X=None):
        """Class probabilities under each learner; None: the training samples by leave-one-out."""
        check_is_fitted(self, "multi_")
        return self.multi_.predict_proba_loo_all() if X is None else self.multi_.predict_proba_all(X)

    def score_all(self, X=None, y=None):
        """Accuracy under each learner (an array); None: leave-one-out on the training set."""
        check_is_fitted(self, "multi_")
        if X is not None and y is None:
            raise ValueError("MultiDML_kNN.score_all: y is required with X (the accuracy of predictions needs the true "
                             "labels); call score_all() without X for the leave-one-out accuracy on the training set.")
        return np.asarray(self.multi_.score_loo_all() if X is None else self.multi_.score_all(X, y))

    def dmls_string(self):
        """The learners' names, ``"EUCLIDEAN"`` first."""
        return ["EUCLIDEAN"] + [type(d).__name__ for d in self._learners()]


class CondensedNearestNeighbors(_c.CondensedNearestNeighbors):
    """Condensed nearest neighbours under the Euclidean distance (jaxdml's
    :class:`~jaxdml.CondensedNearestNeighbors`, which also takes a metric learner) with pyDML's accessors."""

    metric_learner = learner_params = None

    def __init__(self):
        pass

    def get_condensed_neighbors(self):
        """The selected samples and their labels."""
        check_is_fitted(self, "sample_indices_")
        return self.prototypes_, self.prototype_labels_

    def get_condensed_neighbor_indexes(self):
        """Indices of the selected samples."""
        check_is_fitted(self, "sample_indices_")
        return self.sample_indices_


class ReducedNearestNeighbors(_c.ReducedNearestNeighbors):
    """Reduced nearest neighbours under the Euclidean distance (jaxdml's
    :class:`~jaxdml.ReducedNearestNeighbors`) with pyDML's accessors."""

    metric_learner = learner_params = None

    def __init__(self):
        pass

    def get_reduced_neighbors(self):
        """The selected samples and their labels."""
        check_is_fitted(self, "sample_indices_")
        return self.prototypes_, self.prototype_labels_

    def get_reduced_neighbor_indexes(self):
        """Indices of the selected samples."""
        check_is_fitted(self, "sample_indices_")
        return self.sample_indices_
