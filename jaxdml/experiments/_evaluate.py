"""Scoring a learned transformation with the classifiers of the experiments.

k-NN is evaluated by :func:`jaxdml.classifiers._multidml.knn_batched` (``exact_ties=True``: in NumPy)
with a fixed and documented rule so that results do not depend on a tree structure, BLAS rounding
or the order of the classes in a file:

* distances are squared Euclidean distances of the transformed data computed from the
  differences ``sum_f (a_f - b_f)^2`` in float64 (not ``|a|^2 + |b|^2 - 2ab``, whose rounding makes
  equal distances unequal), so duplicate and lattice-valued samples (balance, monk-2,
  wisconsin) produce exactly equal distances;
* exactly ``k`` neighbours are used; among training samples at equal distance the one that comes
  first in the training data wins (stable sort);
* a tied vote goes to the class with the smallest code, codes following the natural label order
  of :func:`jaxdml.datasets.sort_labels` (numeric labels numerically);
* the training accuracy is leave-one-out: a training sample is classified by the other
  training samples (excluded by index, so its duplicates still count).

Centroid classifiers: nearest class mean is scikit-learn's ``NearestCentroid``; nearest class with
multiple centroids is :class:`jaxdml.NCMCClassifier`. Their training accuracy is resubstitution.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..classifiers._multidml import knn_batched

__all__ = ["knn_predict", "knn_scores", "classifier_scores", "Unavailable"]


class Unavailable(RuntimeError):
    """A method or classifier that this installation of jaxdml does not provide (yet)."""


def knn_predict(Z_train, codes_train, Z_query, k: int, n_classes: int, *, leave_one_out: bool = False):
    """Predicted class codes of ``Z_query`` by the ``k`` nearest rows of ``Z_train``.

    Parameters
    ----------
    Z_train : ndarray (n, d)
    codes_train : int ndarray (n,)
        Class codes ``0..n_classes-1``.
    Z_query : ndarray (m, d)
        With ``leave_one_out=True`` this must be ``Z_train`` itself; row ``i`` then ignores
        training sample ``i``.
    k : int
        Clipped to the number of usable training samples.
    n_classes : int

    Returns
    -------
    ndarray (m,) of int codes
    """
    Zt = np.asarray(Z_train, dtype=np.float64)
    Zq = np.asarray(Z_query, dtype=np.float64)
    n = Zt.shape[0]
    k = int(min(k, n - 1 if leave_one_out else n))
    if k < 1:
        raise ValueError("k-NN needs at least one training sample (two for leave-one-out).")
    proba = knn_batched(Zq[None], Zt[None], np.asarray(codes_train, dtype=np.int64), int(n_classes), k,
                        exclude_self=leave_one_out, exact_ties=True)
    return np.argmax(proba[0], axis=1)  # first maximum: smallest code


def knn_scores(Z_train, codes_train, Z_test, codes_test, k: int, n_classes: int):
    """``(leave-one-out training accuracy, test accuracy)`` of k-NN."""
    train = np.mean(knn_predict(Z_train, codes_train, Z_train, k, n_classes, leave_one_out=True) == codes_train)
    test = np.mean(knn_predict(Z_train, codes_train, Z_test, k, n_classes) == codes_test)
    return float(train), float(test)


def _ncmc_classifier(c: int, seed):
    import jaxdml

    cls = getattr(jaxdml, "NCMCClassifier", None)
    if cls is None:
        raise Unavailable("jaxdml.NCMCClassifier is not available in this installation.")
    kwargs = {"centroids_num": c}
    try:
        if "random_state" in inspect.signature(cls).parameters:
            kwargs["random_state"] = seed
    except (TypeError, ValueError):  # pragma: no cover
        pass
    return cls(**kwargs)


def classifier_scores(classifier: tuple, Z_train, codes_train, Z_test, codes_test, n_classes: int, *, seed=0):
    """``(train accuracy, test accuracy)`` for a classifier spec of :class:`Algorithm`."""
    kind = classifier[0]
    if kind == "knn":
        return knn_scores(Z_train, codes_train, Z_test, codes_test, int(classifier[1]), n_classes)
    if kind == "ncm":
        from sklearn.neighbors import NearestCentroid

        clf = NearestCentroid().fit(Z_train, codes_train)
    elif kind == "ncmc":
        clf = _ncmc_classifier(int(classifier[1]), seed).fit(Z_train, codes_train)
    else:
        raise ValueError(f"Unknown classifier {classifier!r}.")
    train = np.mean(np.asarray(clf.predict(Z_train)) == codes_train)
    test = np.mean(np.asarray(clf.predict(Z_test)) == codes_test)
    return float(train), float(test)
