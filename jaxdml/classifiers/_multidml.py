"""k-NN under several metric learners at once: fit each learner once, classify under all of them.

The k-NN step is batched over the learners: the embeddings of every learner are stacked (padded
with zero coordinates to a common width, which changes no distance) and one jitted float64 program
computes the squared distances, the ``k`` nearest training rows and the votes for all learners
together (queries in row blocks, padded to a bucket size so that new query counts rarely
recompile). Problems of up to ``_HOST_ELEMENTS`` distances (e.g. the folds of a small data set's
tuning grid) run the same computation in NumPy: it answers before XLA would have compiled it.
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._runtime._padding import bucket_size
from .._runtime._device import to_device
from .._validation import Interval, Options, check_params
from ..compilation import ensure_default_cache
from ..config import precise
from ..linalg import pairwise_sq_dists, smallest_k, sq_dists_from_differences

__all__ = ["MultiDML_kNN", "knn_batched"]

#: query rows per block of the batched k-NN, and the largest (learners, block, n_train) distance array
_QUERY_BLOCK = 1024
_BLOCK_ELEMENTS = 2**25
#: up to this many (learners x queries x training rows) distances the k-NN runs in NumPy on the host
_HOST_ELEMENTS = 2**21
#: (learners x queries x training rows x features) differences per block with ``exact_ties``
_EXACT_BLOCK_ELEMENTS = 4_000_000


def _vote(xp, d_k, idx, codes, n_classes, weights):
    """Class probabilities from the ``k`` nearest squared distances ``d_k`` and their rows ``idx``."""
    onehot = (codes[idx][..., None] == xp.arange(n_classes)).astype(d_k.dtype)  # (m, nq, k, C)
    if weights == "uniform":
        w = xp.ones_like(d_k)
    else:  # 1 / distance; rows with an exact match keep only the exact matches (as scikit-learn)
        dist = xp.sqrt(xp.maximum(d_k, 0.0))
        zero = dist == 0.0
        any_zero = xp.any(zero, axis=-1, keepdims=True)
        w = xp.where(any_zero, zero.astype(dist.dtype), 1.0 / xp.where(zero, 1.0, dist))
    scores = xp.sum(onehot * w[..., None], axis=2)
    return scores / xp.sum(scores, axis=-1, keepdims=True)


@functools.partial(jax.jit, static_argnames=("k", "n_classes", "weights", "exclude_self"))
def _knn_block(Zq, Zt, codes, q_index, n_train, *, k, n_classes, weights, exclude_self):
    """Class scores (m, nq, n_classes) of the k nearest rows of ``Zt`` (m, nt, p) for ``Zq`` (m, nq, p);
    rows of ``Zt`` from ``n_train`` on are padding (never a neighbour)."""
    D = pairwise_sq_dists(Zq, Zt, translate="row")  # a training row: integer lattices stay exact
    D = jnp.where((jnp.arange(Zt.shape[1]) < n_train)[None, None, :], D, jnp.inf)
    if exclude_self:  # leave-one-out: a training row is not its own neighbour
        own = q_index[:, None] == jnp.arange(Zt.shape[1])[None, :]
        D = jnp.where(own[None], jnp.inf, D)
    d_k, idx = smallest_k(D, k)
    return _vote(jnp, d_k, idx, codes, n_classes, weights)


def _knn_host(Zq, Zt, codes, k, n_classes, weights, exclude_self, exact_ties=False):
    """:func:`_knn_block` in NumPy, for problems too small to be worth a compilation (``exact_ties``: the
    distances from the differences, in blocks of queries)."""
    if not exact_ties:
        D = pairwise_sq_dists(Zq, Zt, xp=np, translate="row")
        if exclude_self:
            rows = np.arange(D.shape[1])
            D[:, rows, rows] = np.inf  # Zq is Zt: a training row is not its own neighbour
        d_k, idx = smallest_k(D, k, xp=np)
        return _vote(np, d_k, idx, codes, n_classes, weights)
    m, nq, nt = Zq.shape[0], Zq.shape[1], Zt.shape[1]
    block = max(1, _EXACT_BLOCK_ELEMENTS // max(1, m * nt * Zq.shape[2]))
    out = []
    for s in range(0, nq, block):
        D = sq_dists_from_differences(Zq[:, s:s + block], Zt)
        if exclude_self:
            rows = np.arange(D.shape[1])
            D[:, rows, s + rows] = np.inf
        d_k, idx = smallest_k(D, k, xp=np)
        out.append(_vote(np, d_k, idx, codes, n_classes, weights))
    return np.concatenate(out, axis=1)


@precise
def knn_batched(Zq, Zt, codes, n_classes, k, *, weights="uniform", exclude_self=False, exact_ties=False):
    """k-NN class probabilities under several embeddings at once (float64).

    Parameters
    ----------
    Zq : array of shape (n_metrics, n_queries, p)
        Embedded queries, one slice per metric.
    Zt : array of shape (n_metrics, n_train, p)
        Embedded training rows.
    codes : int array of shape (n_train,)
        Training labels as codes ``0 .. n_classes - 1``.
    n_classes, k : int
    weights : {"uniform", "distance"}
    exclude_self : bool
        Leave-one-out on the training set: ``Zq is Zt`` and row ``i`` is not its own neighbour.
    exact_ties : bool
        Compute the squared distances from the differences ``sum_f (a_f - b_f)^2`` on the host, in
        blocks, instead of ``|a|^2 + |b|^2 - 2 a.b`` (whose rounding makes equal distances unequal), so
        that duplicate and lattice-valued rows give exactly equal distances (the experiments' rule,
        :mod:`jaxdml.experiments._evaluate`); slower.

    Neighbours are the ``k`` nearest rows, equal distances in training-row order (the tie rule of
    :mod:`jaxdml.neighbors`); the vote's probabilities are exact, so ``argmax`` breaks a tied vote
    towards the smallest code.

    Returns
    -------
    ndarray of shape (n_metrics, n_queries, n_classes)
    """
    ensure_default_cache()
    Zq = np.asarray(Zq, dtype=np.float64)
    Zt = np.asarray(Zt, dtype=np.float64)
    nq, nt = Zq.shape[1], Zt.shape[1]
    if not 1 <= k <= nt - bool(exclude_self):
        raise ValueError(f"k must be between 1 and the number of training rows ({nt}"
                         f"{', less one for leave-one-out' if exclude_self else ''}); got {k}.")
    if exact_ties or Zq.shape[0] * nq * nt <= _HOST_ELEMENTS:  # small: NumPy answers before XLA compiles
        return _knn_host(Zq, Zt, np.asarray(codes, dtype=np.int64), int(k), int(n_classes), weights,
                         bool(exclude_self), bool(exact_ties))
    # training rows padded to a bucket (masked out of the search): the folds of a cross-validation,
    # whose sizes differ by a row or two, share one compiled program
    width = bucket_size(nt)
    Zt = np.concatenate([Zt, np.zeros((Zt.shape[0], width - nt, Zt.shape[2]))], axis=1)
    codes = np.concatenate([np.asarray(codes, dtype=np.int64), np.zeros(width - nt, np.int64)])
    block = min(_QUERY_BLOCK, bucket_size(nq), max(1, _BLOCK_ELEMENTS // max(1, Zq.shape[0] * width)))
    out = []
    with jax.enable_x64(True):
        zt, cd, n_train = to_device(Zt), to_device(codes), to_device(np.int64(nt))
        for start in range(0, nq, block):
            part = Zq[:, start:start + block]
            rows = part.shape[1]
            if rows < block:
                part = np.concatenate([part, np.zeros((part.shape[0], block - rows, part.shape[2]))], axis=1)
            q_index = to_device(np.arange(start, start + block, dtype=np.int64))
            scores = _knn_block(to_device(part), zt, cd, q_index, n_train, k=int(k), n_classes=int(n_classes),
                                weights=weights, exclude_self=bool(exclude_self))
            out.append(np.asarray(scores)[:, :rows])
    return np.concatenate(out, axis=1)


def _learner_name(dml) -> str:
    if dml is None:
        return "Euclidean"
    if isinstance(dml, str):
        return dml
    return type(dml).__name__


class MultiDML_kNN(BaseEstimator):
    """k-NN under several metric learners: fit each learner once, compare the classifiers.

    ``fit`` fits every learner in ``dmls`` on the training data and embeds it; the ``*_all``
    methods return one entry per learner, in the order of ``dmls``. The k-NN search of all learners
    runs as one batched (vectorised) float64 computation; the leave-one-out variants classify each
    training row by its ``n_neighbors`` nearest *other* training rows.

    Parameters
    ----------
    n_neighbors : int, default=3
    dmls : list, default=None
        Metric learners: jaxdml or scikit-learn transformers with ``fit``/``transform`` (cloned
        before fitting), method names for :func:`jaxdml.fit` (``"nca"``) or None (the Euclidean
        distance). None: ``[None]`` (Euclidean only).
    weights : {"uniform", "distance"}, default="uniform"
        As in scikit-learn's ``KNeighborsClassifier``.
    verbose : bool, default=False
        Print each learner's name as it is fitted.

    Attributes
    ----------
    dmls_ : list
        The fitted learners (None for the Euclidean distance, a :class:`~jaxdml.FittedMetric` for a name).
    classes_ : ndarray of shape (n_classes,)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> multi = jaxdml.MultiDML_kNN(3, dmls=[None, jaxdml.LDA()]).fit(X, y)
    >>> multi.dmls_string()
    ['Euclidean', 'LDA']
    >>> [round(s, 2) for s in multi.score_all(X, y)]
    [0.96, 0.98]
    """

    _parameter_constraints = {
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "dmls": [None, list, tuple],
        "weights": [Options({"uniform", "distance"})],
        "verbose": ["boolean", Interval(numbers.Integral, 0, None)],
    }

    def __init__(self, n_neighbors=3, dmls=None, *, weights="uniform", verbose=False):
        self.n_neighbors = n_neighbors
        self.dmls = dmls
        self.weights = weights
        self.verbose = verbose

    # ------------------------------------------------------------------ fitting
    def _fit_one(self, dml, X, y):
        if dml is None:
            return None
        if isinstance(dml, str):
            from .._fit import fit

            return fit(X, y, loss=dml)
        if hasattr(dml, "fit") and hasattr(dml, "transform"):
            return clone(dml).fit(X, y)
        raise ValueError(f"MultiDML_kNN: each entry of dmls must be None, a method name or an estimator with "
                         f"fit/transform; got {dml!r}.")

    def fit(self, X, y):
        """Fit every learner on ``(X, y)`` and store the embedded training data."""
        check_params(self.get_params(deep=False), self._parameter_constraints, owner="MultiDML_kNN")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, self._codes = np.unique(y, return_inverse=True)
        dmls = [None] if self.dmls is None else list(self.dmls)
        if not dmls:
            raise ValueError("MultiDML_kNN: dmls is empty; give at least one learner (None: Euclidean).")
        self._names = [_learner_name(d) for d in dmls]
        self.dmls_ = []
        for name, dml in zip(self._names, dmls):
            if self.verbose:
                print(f"MultiDML_kNN: fitting {name}")
            self.dmls_.append(self._fit_one(dml, X, y))
        self._Zt = self._embed_all(X)
        return self

    def _embed_all(self, X):
        """(n_learners, n, p) embeddings, zero-padded to the widest one."""
        Zs = [X if d is None else np.asarray(d.transform(X), dtype=np.float64) for d in self.dmls_]
        width = max(Z.shape[1] for Z in Zs)
        out = np.zeros((len(Zs), X.shape[0], width))
        for i, Z in enumerate(Zs):
            out[i, :, : Z.shape[1]] = Z
        return out

    # ------------------------------------------------------------------ names
    def dmls_string(self):
        """The learners' names, in order (the class name, the method name, or "Euclidean")."""
        check_is_fitted(self, "dmls_")
        return list(self._names)

    names = dmls_string

    # ------------------------------------------------------------------ prediction
    def _proba(self, X):
        check_is_fitted(self, "dmls_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return knn_batched(self._embed_all(X), self._Zt, self._codes, len(self.classes_), self.n_neighbors,
                           weights=self.weights)

    def _proba_loo(self):
        check_is_fitted(self, "dmls_")
        if self.n_neighbors >= self._Zt.shape[1]:
            raise ValueError(f"leave-one-out needs n_neighbors={self.n_neighbors} < n_samples={self._Zt.shape[1]}.")
        return knn_batched(self._Zt, self._Zt, self._codes, len(self.classes_), self.n_neighbors,
                           weights=self.weights, exclude_self=True)

    def predict_proba_all(self, X):
        """Class probabilities of ``X`` under each learner: a list of (n_samples, n_classes) arrays."""
        return list(self._proba(X))

    def predict_all(self, X):
        """Predicted labels of ``X`` under each learner: a list of (n_samples,) arrays."""
        return [self.classes_[np.argmax(p, axis=1)] for p in self._proba(X)]

    def score_all(self, X, y):
        """Accuracy on ``(X, y)`` under each learner: a list of floats."""
        y = np.asarray(y)
        return [float(np.mean(p == y)) for p in self.predict_all(X)]

    def predict_proba_loo_all(self):
        """Leave-one-out class probabilities of the training rows under each learner."""
        return list(self._proba_loo())

    def predict_loo_all(self):
        """Leave-one-out predictions of the training rows under each learner."""
        return [self.classes_[np.argmax(p, axis=1)] for p in self._proba_loo()]

    def score_loo_all(self):
        """Leave-one-out accuracy on the training set under each learner."""
        y = self.classes_[self._codes]
        return [float(np.mean(p == y)) for p in self.predict_loo_all()]
