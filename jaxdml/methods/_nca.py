"""NCA: the record (loss, defaults, large-data policy) and the estimator."""

from __future__ import annotations

from ..losses import nca
from ..losses._registry import LossSpec
from ._base import GradientMetricLearner
from ._gradient import BLOCK_ELEMENTS, gradient_method

__all__ = ["NCA", "NCA_METHOD"]

# NCA: small Adam steps on minibatches of 256 anchors (full batch on small data). The bounded
# step budget (learning_rate * max_iter ~ 1) regularises: fully converged NCA overfits small, noisy
# data sets (see README, "Defaults").
# Large data (more than 4096 samples): more and larger steps (overfitting is less of a concern
# than under-fitting), and above 8192 samples each step compares its 256 anchors with 1024
# uniformly sampled rows (a sampled softmax) instead of every sample.
NCA_METHOD = gradient_method(
    "nca",
    LossSpec(nca, "L", optimizer="adam", learning_rate=1e-2, max_iter=100, batch_size=256,
             large_n=4096, large=dict(learning_rate=2e-2, max_iter=1000), candidates_above=8192, n_candidates=1024),
    constraints=BLOCK_ELEMENTS, estimator="NCA",
)


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

    _record = NCA_METHOD

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
