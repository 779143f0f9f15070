"""The estimators of the core methods: PCA, LDA, NCA, LMNN."""

from __future__ import annotations

import numbers

from .._validation import Interval, Options
from ._base import BaseMetricLearner, GradientMetricLearner

__all__ = ["Euclidean", "PCA", "LDA", "NCA", "LMNN"]


class Euclidean(BaseMetricLearner):
    """The identity map: the Euclidean distance, as a baseline with the estimator API."""

    _method = "euclidean"
    _supervised = False

    def __init__(self):
        pass


class PCA(BaseMetricLearner):
    """Principal Component Analysis as a metric learner (unsupervised).

    The rows of ``components_`` are the eigenvectors of the covariance matrix with the largest
    eigenvalues, so ``L L^T = I``: at full dimension the learned distance is still Euclidean
    (a rotation); with ``n_components < n_features`` it is the distance after projection onto the
    principal subspace. ``transform`` does not centre (distances are translation invariant).

    Parameters
    ----------
    n_components : int, default=None
        Number of principal directions (default: all).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)
    explained_variance_ratio_ : ndarray of shape (n_components,)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.PCA(n_components=2).fit(X).transform(X).shape
    (150, 2)
    """

    _method = "pca"
    _supervised = False
    _parameter_constraints = {"n_components": [Interval(numbers.Integral, 1, None), None]}

    def __init__(self, n_components=None):
        self.n_components = n_components

    def _store(self, result):
        super()._store(result)
        self.explained_variance_ = result.info["explained_variance"]
        self.explained_variance_ratio_ = result.info["explained_variance_ratio"]


class LDA(BaseMetricLearner):
    """Linear Discriminant Analysis as a metric learner.

    Rows of ``components_`` are the generalised eigenvectors of ``S_b v = lambda S_w v`` with the
    largest eigenvalues (at most ``n_classes - 1``), scaled to unit within-class variance. A
    singular ``S_w`` is regularised (eigenvalues floored at ``reg`` times the largest).

    Parameters
    ----------
    n_components : int, default=None
        Default and maximum: ``min(n_features, n_classes - 1)``.
    reg : float, default=1e-6
        Relative eigenvalue floor for ``S_w``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LDA().fit(X, y).transform(X).shape
    (150, 2)
    """

    _method = "lda"
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None), None],
        "reg": [Interval(numbers.Real, 0, 1, closed="left")],
    }

    def __init__(self, n_components=None, *, reg=1e-6):
        self.n_components = n_components
        self.reg = reg


class NCA(GradientMetricLearner):
    """Neighbourhood Components Analysis.

    Maximises the expected leave-one-out accuracy of the stochastic nearest-neighbour rule
    (:func:`jaxdml.losses.nca`) over the linear map ``L``, by L-BFGS by default.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default: n_features).
    init : {"auto", "identity", "pca", "lda", "random"} or ndarray, default="auto"
        "auto" is the identity at full dimension, LDA when n_components < n_classes, PCA otherwise.
    max_iter : int, default=None
        Optimizer steps (None: 100; 1000 on more than 4096 samples).
    tol : float, default=1e-5
        Stop when the loss improves by less than ``tol * max(|loss|, 1)``.
    optimizer : str or optax.GradientTransformation, default=None
        None: Adam (learning rate 0.01; 0.02 on more than 4096 samples).
    learning_rate : float, default=None
        For first-order optimizers.
    batch_size : "auto", int or None, default="auto"
        Anchors per step ("auto": 256; full batch on small data; None: always full batch).
    n_candidates : "auto", int or None, default="auto"
        Compare anchors with this many sampled rows instead of every sample ("auto": 1024 above
        8192 samples, exact below; None: always exact).
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
    converged_ : bool

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from sklearn.pipeline import Pipeline
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> pipe = Pipeline([("dml", jaxdml.NCA(max_iter=20)), ("knn", KNeighborsClassifier(3))])
    >>> pipe.fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    J. Goldberger, G. Hinton, S. Roweis, R. Salakhutdinov. Neighbourhood Components Analysis.
    NIPS 2005.
    """

    _method = "nca"

    def __init__(self, n_components=None, *, init="auto", max_iter=None, tol=1e-5, optimizer=None,
                 learning_rate=None, batch_size="auto", n_candidates="auto", devices=None,
                 random_state=None, verbose=0):
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


class LMNN(GradientMetricLearner):
    """Large Margin Nearest Neighbours.

    Pulls each sample towards its ``n_neighbors`` target neighbours (same class, Euclidean
    nearest) and pushes differently-labelled samples out of the margin they define.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension; only the gradient solver can reduce it.
    n_neighbors : int, default=3
        Target neighbours per sample (use the k of the k-NN classifier).
    mu : float, default=0.5
        Weight of the push term (the pull term gets ``1 - mu``); in (0, 1).
    margin : float, default=1.0
    solver : {"auto", "gradient", "projected"}, default="auto"
        "gradient": L-BFGS on the linear map ``L`` (:func:`jaxdml.losses.lmnn`);
        "projected": projected sub-gradient on the metric ``M`` over the PSD cone
        (:func:`jaxdml.losses.lmnn_metric`, convex). "auto" is "gradient".
    init, max_iter, tol, optimizer, learning_rate, batch_size, n_candidates, devices, random_state, verbose
        As in :class:`NCA`. Defaults: L-BFGS for 200 iterations on the full objective; above 4096
        samples (and up to 100 000) the active-set solver (Weinberger & Saul, 2009, Section 5):
        the impostors inside the margin (plus a slack) are found exactly with a blockwise search,
        refreshed every 50 L-BFGS steps on the objective restricted to them, for at most 500
        steps; converged only when a refresh finds no new violating impostor. Setting
        ``optimizer``, ``batch_size`` or ``n_candidates`` (or ``devices``) selects the former
        paths instead: e.g. ``optimizer="lbfgs"`` is L-BFGS on the exact full objective,
        ``optimizer="adam"`` Adam on 256-anchor minibatches for 1000 steps (with 1024 sampled
        impostor candidates per step above 8192 samples), which is also the default above
        100 000 samples, where an exact O(N^2) search per refresh is too slow on a CPU.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LMNN(max_iter=30).fit(X, y).components_.shape
    (4, 4)

    References
    ----------
    K. Q. Weinberger, L. K. Saul. Distance Metric Learning for Large Margin Nearest Neighbor
    Classification. JMLR 10, 2009.
    """

    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints,
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "mu": [Interval(numbers.Real, 0, 1, closed="neither")],
        "margin": [Interval(numbers.Real, 0, None, closed="neither")],
        "solver": [Options({"auto", "gradient", "projected"})],
    }

    def __init__(self, n_components=None, *, n_neighbors=3, mu=0.5, margin=1.0, solver="auto",
                 init="auto", max_iter=None, tol=1e-5, optimizer=None, learning_rate=None,
                 batch_size="auto", n_candidates="auto", devices=None, random_state=None, verbose=0):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.mu = mu
        self.margin = margin
        self.solver = solver
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

    @property
    def _method(self):
        return "lmnn_metric" if self.solver == "projected" else "lmnn"

    def _fit_kwargs(self):
        kw = self.get_params(deep=False)
        kw.pop("solver")
        return kw
