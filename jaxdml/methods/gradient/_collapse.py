"""The convex softmax/logistic methods in the metric ``M``: MCML and LDML (records, estimators)."""

from __future__ import annotations

import numbers

from ..._runtime._padding import bucket_size
from ..._validation import Interval
from ...losses import ldml, mcml
from ...losses._ldml import ldml_pairs
from ...problems import make_pairs_problem
from ..core._base import GradientMetricLearner
from ..core._gradient import BLOCK_ELEMENTS, gradient_method
from ..core._plan import execute, plan
from ..core._record import LossSpec
from ..core._tuple_classifiers import _PairsClassifierMixin

__all__ = ["MCML", "LDML", "MCML_METHOD", "LDML_METHOD", "COLLAPSE_LARGE_N"]

# Convex in M over the PSD cone: projected Adagrad (each step followed by the projection). Its
# decaying per-entry steps converge on convex problems in any dimension; projected Adam's fixed
# per-entry steps overshoot as d grows (digits: objective 0.57 vs 1.12), and projected L-BFGS
# needs the driver to re-evaluate at the projected point. KEEL basic average: 0.860.
#
# Large data (above COLLAPSE_LARGE_N = 4096 samples, where each full-batch step costs O(N^2 d)):
# 1000 minibatch steps of 256 anchors against 1024 sampled rows; the threshold was chosen by the defaults
# protocol's full-size tier (benchmarks/PROTOCOL.md, round 10: the same mean 3-NN accuracy at 8-50x less time).
COLLAPSE_LARGE_N = 4096
_LARGE = dict(large_n=COLLAPSE_LARGE_N, large=dict(batch_size=256, max_iter=1000), candidates_above=COLLAPSE_LARGE_N,
              n_candidates=1024)
MCML_METHOD = gradient_method(
    "mcml", LossSpec(mcml, "M", optimizer="adagrad", learning_rate=0.3, max_iter=300, projection="psd", **_LARGE),
    constraints=BLOCK_ELEMENTS, estimator="MCML",
)
# As MCML: projected Adagrad (digits: objective 0.147 vs 0.30 with projected Adam). KEEL: 0.846.
LDML_METHOD = gradient_method(
    "ldml", LossSpec(ldml, "M", optimizer="adagrad", learning_rate=0.3, max_iter=300, projection="psd", **_LARGE),
    defaults=dict(b=1.0), constraints={**BLOCK_ELEMENTS, "b": [Interval(numbers.Real, None, None)]},
    estimator="LDML",
)


class MCML(GradientMetricLearner):
    """Maximally Collapsing Metric Learning.

    Minimises the KL divergence from the distribution that collapses every class to a point to
    the metric's softmax neighbour distribution (:func:`jaxdml.losses.mcml`), a convex problem
    in the metric ``M``, by Adagrad steps each followed by a projection onto the PSD cone.

    The target collapses each class to one point, so on classes made of several separated
    clusters the optimum squeezes the directions that separate a class's clusters, whatever N; it
    is a population optimum that more rows estimate better, not a neighbourhood rule, and the k-NN
    gain it brings does not grow with N as Euclidean k-NN's does. Measured (synth-d16-c26, 26
    classes of two clusters each, 3-NN on the same 2 000 held-out rows, defaults): 0.7635 vs
    Euclidean 0.7990 at 2 000 rows (full batch), 0.8700 vs 0.8980 at 18 000 (minibatch, 1024
    candidates; 4096 candidates: also 0.8700, so the sampled normaliser is not the cause).

    Parameters
    ----------
    n_components : int, default=None
        ``M`` is full rank; a smaller dimension projects onto the leading principal components
        first.
    init : {"auto", "identity", "pca", "lda", "random"} or ndarray, default="auto"
        Initial ``L``; the metric starts at ``L^T L`` (identity: Euclidean).
    max_iter : int, default=None (300; 1000 minibatch steps above 4096 samples)
        The budget usually ends the run (Adagrad's steps shrink; the stopping test rarely fires
        before): expect a ConvergenceWarning.
    tol : float, default=1e-5
    optimizer : str or optax.GradientTransformation, default=None (Adagrad)
    learning_rate : float, default=None (0.3)
    batch_size : "auto", int or None, default="auto"
        Anchors per step ("auto": full batch; 256 above 4096 samples).
    n_candidates : "auto", int or None, default="auto"
        Compare each anchor with this many sampled rows instead of every sample (a stochastic
        approximation for very large data; needs ``batch_size``). "auto": exact; 1024 rows
        above 4096 samples.
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

    _record = MCML_METHOD
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


class LDML(_PairsClassifierMixin, GradientMetricLearner):
    """Logistic Discriminant Metric Learning.

    Maximises the log-likelihood of the logistic model
    :math:`P(y_i = y_j) = \\sigma(b - \\|x_i - x_j\\|_M^2)` over all pairs
    (:func:`jaxdml.losses.ldml`), a convex problem in ``M``, by Adagrad steps each followed by a
    projection onto the PSD cone.

    ``fit(X, y)`` learns from class labels (all pairs); ``fit(pairs, y)`` from given pairs
    (n_pairs, 2, n_features) with ``y`` in {-1, +1} (or 1/0, or booleans), or integer index pairs with
    ``preprocessor`` (the same per-pair likelihood over the given pairs, from the identity; ``init``,
    ``batch_size``, ``n_candidates`` and ``devices`` serve the labelled fit only). Fitted on pairs,
    it is a pair classifier (``predict``, ``decision_function``, ``score``, ``calibrate_threshold``).

    Parameters
    ----------
    n_components : int, default=None
        As in :class:`MCML`.
    b : float, default=1.0
        Threshold of the logistic model on squared distances.
    preprocessor : array-like or callable, default=None
        Rows for integer index pairs (``fit(idx_pairs, y)``).
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

    _record = LDML_METHOD
    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints,
        "b": [Interval(numbers.Real, None, None)],
        "preprocessor": ["array-like", "callable", None],
    }

    def __init__(self, n_components=None, *, b=1.0, init="auto", max_iter=None, tol=1e-5,
                 optimizer=None, learning_rate=None, batch_size="auto", n_candidates="auto", devices=None,
                 random_state=None, verbose=0, preprocessor=None):
        self.preprocessor = preprocessor
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

    def _run_tuples(self, data):
        """Fit on pairs in canonical form (:func:`ldml_from_pairs`)."""
        from ..._validation import check_n_components

        n_components = check_n_components(self.n_components, data.X.shape[1], owner="LDML")
        return ldml_from_pairs(data.X, data.idx, data.y, b=self.b, n_components=n_components,
                               max_iter=self.max_iter, tol=self.tol, learning_rate=self.learning_rate,
                               optimizer=self.optimizer, verbose=self.verbose)


def ldml_from_pairs(X, pairs, labels, *, b, n_components, max_iter, tol, learning_rate, optimizer, verbose):
    """LDML's solve step on given pairs (rows of ``X``, checked int64 indices) with their +1/-1 labels (as
    :func:`jaxdml.methods.core._tuples.prepare_tuples` returns them): the gradient plan (:mod:`._plan`) of
    :func:`jaxdml.losses._ldml.ldml_pairs` over the PSD cone from the identity, with LDML's optimisation
    defaults (no large-data switch: the pairs are the data)."""
    spec = LDML_METHOD.loss._replace(fn=ldml_pairs, large_n=None)

    def pairs_problem(Xr):  # the rows after the PCA pre-projection a smaller n_components asks for
        bucket = bucket_size(len(pairs))
        prob = make_pairs_problem(Xr, pairs, labels, pad_to=bucket, owner="LDML", validate=False)  # checked at the door
        return prob, len(pairs), bucket

    p = plan(spec, "ldml", X, None, 0, n_components=n_components, random_state=None, max_iter=max_iter, tol=tol,
             verbose=verbose, init="identity", optimizer=optimizer, learning_rate=learning_rate, batch_size=None,
             n_candidates=None, problem_fn=pairs_problem, info=dict(n_pairs=len(pairs)), b=float(b))
    return execute(p)
