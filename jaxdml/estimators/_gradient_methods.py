"""Estimators of the gradient-trained methods NCMML, NCMC, MCML, LDML and the kernel method KLMNN."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.validation import validate_data

from .._validation import Interval, Options, check_params
from ._base import GradientMetricLearner, KernelMetricLearner

__all__ = ["NCMML", "NCMC", "MCML", "LDML", "KLMNN"]


class _SolverRoute:
    """Fit through the method's registered solver, handing it *every* constructor parameter.

    ``jaxdml.fit`` keeps ``init``, ``optimizer``, ``learning_rate``, ``batch_size``, ... for its
    own gradient path; a registered solver (``"ncmc"``, ``"klmnn"``) receives them through this
    route.
    """

    def fit(self, X, y=None):
        """Learn the metric from ``X`` (n_samples, n_features) and labels ``y``."""
        from .._threads import single_threaded_blas
        from ..solvers._api import _fit_solver

        check_params(self.get_params(deep=False), self._parameter_constraints, owner=type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2, y_numeric=False)
        kw = self._fit_kwargs()
        core = {k: kw.pop(k, None) for k in ("n_components", "max_iter", "random_state")}
        with single_threaded_blas():  # as jaxdml.fit: OpenBLAS threads would fight XLA's pool
            result = _fit_solver(
                self._method, X, y, tol=kw.pop("tol", None), verbose=kw.pop("verbose", 0), hyper=kw, **core,
            )
        self._store(result)
        return self


class NCMML(GradientMetricLearner):
    """Nearest Class Mean Metric Learning.

    Learns the linear map ``L`` that maximises the log-likelihood of the nearest-class-mean
    softmax :math:`p_L(c|x) \\propto \\exp(-\\tfrac12 \\|L(x - \\mu_c)\\|^2)`
    (:func:`jaxdml.losses.ncmml`), by L-BFGS. Use it with a nearest class mean classifier
    (``sklearn.neighbors.NearestCentroid`` or ``jaxdml.NCMCClassifier(centroids_num=1)``) or k-NN.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default: n_features).
    init : {"auto", "identity", "pca", "lda", "random"} or ndarray, default="auto"
    max_iter : int, default=None (100)
    tol : float, default=1e-5
    optimizer : str or optax.GradientTransformation, default=None (L-BFGS)
    learning_rate : float, default=None
        For first-order optimizers.
    batch_size : "auto", int or None, default="auto"
        Anchors per step for minibatch training with a first-order optimizer ("auto": full batch).
    n_candidates : None or "auto", default="auto"
        Not applicable (samples are compared with class means).
    devices : None, "all" or list of jax devices, default=None
        Split each step's anchors across several devices (data parallelism).
    random_state : int, RandomState or None
    verbose : int, default=0

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)
    n_iter_ : int
    loss_curve_ : ndarray

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.neighbors import NearestCentroid
    >>> from sklearn.pipeline import make_pipeline
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> make_pipeline(jaxdml.NCMML(max_iter=30), NearestCentroid()).fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    T. Mensink, J. Verbeek, F. Perronnin, G. Csurka. Metric Learning for Large Scale Image
    Classification: Generalizing to New Classes at Near-Zero Cost. ECCV 2012.
    """

    _method = "ncmml"
    _parameter_constraints = {**GradientMetricLearner._parameter_constraints}

    def __init__(self, n_components=None, *, init="auto", max_iter=None, tol=1e-5, optimizer=None,
                 learning_rate=None, batch_size="auto", n_candidates="auto", devices=None, random_state=None,
                 verbose=0):
        self.n_components = n_components
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


class NCMC(_SolverRoute, GradientMetricLearner):
    """Nearest Class with Multiple Centroids metric learning.

    k-means finds ``centroids_num`` centroids in each class (once, before learning); the linear
    map ``L`` then maximises the log-likelihood of the multiple-centroid softmax
    :math:`p_L(c|x) = \\sum_j p_L(m_{c_j}|x)` (:func:`jaxdml.losses.ncmc`), by L-BFGS. Pair it
    with :class:`jaxdml.NCMCClassifier`.

    Parameters
    ----------
    n_components : int, default=None
    centroids_num : int, default=2
        Centroids per class; must not exceed the size of the smallest class (ValueError).
    tol : float, default=1e-3
        Stop when the loss improves by less than ``tol * max(|loss|, 1)``. Once the centroids
        separate the training classes the likelihood keeps growing as the map stretches, and the
        stretched map over-fits (and no longer matches a k-means run in the embedding, which is
        what a nearest-centroid classifier fitted on transformed data does); the looser default
        tolerance stops early (``jaxdml.fit(loss="ncmc")`` has the same default).
    init, max_iter, optimizer, learning_rate, batch_size, n_candidates, devices, verbose
        As in :class:`NCMML`.
    random_state : int, RandomState or None
        Seeds k-means.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.NCMC(centroids_num=2, max_iter=20, random_state=0).fit(X, y).components_.shape
    (4, 4)

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    centroids_ : ndarray of shape (n_classes * centroids_num, n_features)
        The k-means centroids the map was trained with (input space).
    centroid_labels_ : ndarray of shape (n_classes * centroids_num,)

    References
    ----------
    T. Mensink, J. Verbeek, F. Perronnin, G. Csurka. Metric Learning for Large Scale Image
    Classification: Generalizing to New Classes at Near-Zero Cost. ECCV 2012.
    """

    _method = "ncmc"
    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints,
        "centroids_num": [Interval(numbers.Integral, 1, None)],
    }

    def __init__(self, n_components=None, *, centroids_num=2, init="auto", max_iter=None, tol=1e-3,
                 optimizer=None, learning_rate=None, batch_size="auto", n_candidates="auto", devices=None,
                 random_state=None, verbose=0):
        self.n_components = n_components
        self.centroids_num = centroids_num
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

    def _store(self, result):
        super()._store(result)
        self.centroids_ = np.asarray(result.info["centroids"])
        self.centroid_labels_ = self.classes_[np.asarray(result.info["centroid_labels"])]


class MCML(GradientMetricLearner):
    """Maximally Collapsing Metric Learning.

    Minimises the KL divergence from the distribution that collapses every class to a point to
    the metric's softmax neighbour distribution (:func:`jaxdml.losses.mcml`), a convex problem
    in the metric ``M``, by Adagrad steps each followed by a projection onto the PSD cone.

    Parameters
    ----------
    n_components : int, default=None
        ``M`` is full rank; a smaller dimension projects onto the leading principal components
        first.
    init : {"auto", "identity", "pca", "lda", "random"} or ndarray, default="auto"
        Initial ``L``; the metric starts at ``L^T L`` (identity: Euclidean).
    max_iter : int, default=None (300)
        The budget usually ends the run (Adagrad's steps shrink; the stopping test rarely fires
        before): expect a ConvergenceWarning.
    tol : float, default=1e-5
    optimizer : str or optax.GradientTransformation, default=None (Adagrad)
    learning_rate : float, default=None (0.3)
    batch_size : "auto", int or None, default="auto"
        Anchors per step ("auto": full batch).
    n_candidates : "auto", int or None, default="auto"
        Compare each anchor with this many sampled rows instead of every sample (a stochastic
        approximation for very large data; needs ``batch_size``). "auto": exact.
    devices : None, "all" or list of jax devices, default=None
        Split each step's anchors across several devices (data parallelism).
    random_state : int, RandomState or None
    verbose : int, default=0

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.MCML(max_iter=30).fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    A. Globerson, S. Roweis. Metric Learning by Collapsing Classes. NIPS 2006.
    """

    _method = "mcml"
    _parameter_constraints = {**GradientMetricLearner._parameter_constraints}

    def __init__(self, n_components=None, *, init="auto", max_iter=None, tol=1e-5, optimizer=None,
                 learning_rate=None, batch_size="auto", n_candidates="auto", devices=None, random_state=None,
                 verbose=0):
        self.n_components = n_components
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


class LDML(GradientMetricLearner):
    """Logistic Discriminant Metric Learning.

    Maximises the log-likelihood of the logistic model
    :math:`P(y_i = y_j) = \\sigma(b - \\|x_i - x_j\\|_M^2)` over all pairs
    (:func:`jaxdml.losses.ldml`), a convex problem in ``M``, by Adagrad steps each followed by a
    projection onto the PSD cone.

    Parameters
    ----------
    n_components : int, default=None
        As in :class:`MCML`.
    b : float, default=1.0
        Threshold of the logistic model on squared distances.
    init, max_iter, tol, optimizer, learning_rate, batch_size, n_candidates, devices, random_state, verbose
        As in :class:`MCML`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LDML(b=2.0, max_iter=30).fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    M. Guillaumin, J. Verbeek, C. Schmid. Is that you? Metric Learning Approaches for Face
    Identification. ICCV 2009.
    """

    _method = "ldml"
    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints,
        "b": [Interval(numbers.Real, None, None)],
    }

    def __init__(self, n_components=None, *, b=1.0, init="auto", max_iter=None, tol=1e-5,
                 optimizer=None, learning_rate=None, batch_size="auto", n_candidates="auto", devices=None,
                 random_state=None, verbose=0):
        self.n_components = n_components
        self.b = b
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


class KLMNN(_SolverRoute, KernelMetricLearner):
    """Kernel Large Margin Nearest Neighbours.

    LMNN in the feature space of a kernel: ``transform(X) = K(X, X_fit_) @ components_.T`` with
    the coefficient matrix ``A = components_`` (n_components, n_train) of the representer theorem.
    Target neighbours are the nearest same-class samples in the feature space; the LMNN loss
    (:func:`jaxdml.losses.lmnn`) is minimised by L-BFGS over ``A`` in an orthonormal basis of the
    kernel columns' span (see ``jaxdml.solvers._gradient_methods``). With ``kernel="linear"`` it
    reproduces :class:`jaxdml.LMNN`.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default: the numerical rank of the kernel matrix).
    kernel : {"linear", "poly", "rbf", "laplacian"} or callable, default="linear"
    gamma : float, default=None (1 / n_features)
    degree : int, default=3
    coef0 : float, default=1.0
    n_neighbors : int, default=3
        Target neighbours per sample.
    mu : float, default=0.5
        Weight of the push term; in (0, 1).
    margin : float, default=1.0
    init : {"auto", "identity", "random"} or ndarray (n_components, n_samples), default="auto"
        "auto"/"identity" starts from the feature-space distance itself.
    max_iter : int, default=None (200)
    tol : float, default=1e-5
    optimizer : str or optax.GradientTransformation, default=None (L-BFGS)
    learning_rate : float, default=None
    random_state : int, RandomState or None
    verbose : int, default=0

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_train)
        The matrix ``A``.
    X_fit_ : ndarray of shape (n_train, n_features)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.KLMNN(kernel="rbf", gamma=0.5, max_iter=20).fit(X, y).transform(X[:3]).shape[0]
    3

    References
    ----------
    K. Q. Weinberger, L. K. Saul. Distance Metric Learning for Large Margin Nearest Neighbor
    Classification. JMLR 10, 2009. L. Torresani, K. Lee. Large Margin Component Analysis. NIPS 2007.
    """

    _method = "klmnn"
    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints, **KernelMetricLearner._parameter_constraints,
        "init": [Options({"auto", "identity", "random"}), "array-like"],
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "mu": [Interval(numbers.Real, 0, 1, closed="neither")],
        "margin": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(self, n_components=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0,
                 n_neighbors=3, mu=0.5, margin=1.0, init="auto", max_iter=None, tol=1e-5,
                 optimizer=None, learning_rate=None, random_state=None, verbose=0):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_neighbors = n_neighbors
        self.mu = mu
        self.margin = margin
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.verbose = verbose
