"""KLMNN: LMNN on kernel columns (record, host-side preparation, solve step, estimator).

By the representer theorem ``L phi(x) = A k(x)`` with ``k(x) = (K(x_1, x), ..., K(x_N, x))``.
Target neighbours are the nearest same-class samples in the feature space,
``|phi(x_i) - phi(x_j)|^2 = K_ii + K_jj - 2 K_ij``. ``A`` is parametrised as ``A = B P`` with
``P = S^{-1/2} U^T`` from the eigendecomposition ``K = U S U^T`` (eigenvalues above a relative
tolerance), so the optimiser works on the kernel columns expressed in an orthonormal basis of
their span, ``Z = K P^T = U S^{1/2}`` (whose Euclidean distances are the feature-space
distances). :func:`jaxdml.losses.lmnn` is minimised over ``B`` on
``make_problem(Z, y, targets=...)``. This is the same objective as LMNN in ``A`` on the raw
kernel columns, but well conditioned, and L-BFGS is invariant to the orthogonal change of basis:
with the linear kernel KLMNN follows LMNN's trajectory (``B0 = I`` gives ``A0 K = X^T``, i.e. the
starting map is LMNN's identity).
"""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._padding import bucket_size
from ..._validation import Interval, Options
from ...kernels import check_kernel_params, kernel_matrix
from ...neighbors import other_class_neighbors, same_class_neighbors
from ...problems import make_problem
from ...solvers._result import KernelFittedMetric
from ..core._base import GradientMetricLearner, KernelMetricLearner
from ..core._gradient import solve_loss
from ..core._landmarks import kernel_basis, landmark_result, nystrom, resolve_landmarks
from ..core._plan import execute, plan
from ..core._record import KERNEL_CONSTRAINTS, Method, check_neighbour_count
from ._lmnn import LMNN_CONSTRAINTS, LMNN_DEFAULTS, LMNN_METHOD

__all__ = ["KLMNN", "KLMNN_METHOD"]

#: ``max_components`` for kernel methods: the bound (the rank of K) is only known from the data.
_UNBOUNDED = 2**62

def _dimension(n_components, r):
    if n_components == _UNBOUNDED or n_components is None:
        return r
    if n_components > r:
        raise ValueError(
            f"jaxdml.fit(loss='klmnn'): n_components={n_components} exceeds the rank of the kernel "
            f"matrix ({r}); use n_components <= {r}."
        )
    return int(n_components)


def _initial_B(init, rows, r_pad, n_out, r, n, Z, random_state):
    """Initial ``B`` (rows x r_pad): identity in the eigenbasis, random, or ``A0 Z`` for an array."""
    if isinstance(init, str):
        if init not in ("auto", "identity", "random"):
            raise ValueError("KLMNN: init must be 'auto', 'identity', 'random' or an array "
                             f"(n_components, n_samples); got {init!r}.")
        if init == "random":
            B0 = np.zeros((rows, r_pad))
            B0[:n_out, :r] = check_random_state(random_state).standard_normal((n_out, r)) / np.sqrt(r)
        else:  # identity in the eigenbasis: the feature-space distance (KPCA directions if n_out < r)
            B0 = np.eye(rows, r_pad)
            B0[n_out:] = 0.0
            B0[:, r:] = 0.0
        return B0
    A0 = np.asarray(init, dtype=np.float64)
    if A0.shape != (n_out, n):
        raise ValueError(f"KLMNN: init array must have shape ({n_out}, {n}) (n_components, n_samples); "
                         f"got {A0.shape}.")
    B0 = np.zeros((rows, r_pad))
    B0[:n_out, :r] = A0 @ Z  # A = B P  <=>  B = A U S^{1/2} = A Z on the span of K
    return B0


def _kernel_problem(Zp, K, codes, n_neighbors, n_impostors, pad_to):
    """The problem on the coordinates ``Zp``, with target neighbours (and ``n_impostors`` impostor
    candidates) nearest in the feature space of the kernel matrix ``K``."""
    n = Zp.shape[0]
    targets, _ = same_class_neighbors(K, codes, int(n_neighbors), kind="kernel")
    bucket = bucket_size(n) if pad_to == "auto" else (n if pad_to is None else int(pad_to))
    problem = make_problem(Zp, codes, targets=targets, pad_to=bucket, validate=False)
    if n_impostors is not None:
        imp, imp_mask = other_class_neighbors(K, codes, int(n_impostors), kind="kernel")
        extra = bucket - n
        imp = np.concatenate([imp, np.tile(np.arange(n, bucket)[:, None], (1, imp.shape[1]))]).astype(np.int32)
        imp_mask = np.concatenate([imp_mask, np.zeros((extra, imp.shape[1]))])
        problem = problem._replace(impostors=jnp.asarray(imp), impostor_mask=jnp.asarray(imp_mask, problem.X.dtype))
    return problem, bucket


def _klmnn_landmarks(X, codes, n_classes, m, *, n_components, kernel, kernel_params, init, random_state, hyper,
                     **settings):
    """KLMNN for the Nystrom kernel of ``m`` landmarks: LMNN's solve step (with its large-data policy) on
    the features, the map carried to the landmarks."""
    lm = nystrom(X, kernel, kernel_params, m, random_state)
    r = lm.Phi.shape[1]
    n_out = _dimension(n_components, r)
    if not isinstance(init, str):  # coefficients on the training rows: A0 k(x) ~ (A0 Phi) phi(x)
        init = np.asarray(init, dtype=np.float64)
        if init.shape != (n_out, X.shape[0]):
            raise ValueError(f"KLMNN: init array must have shape ({n_out}, {X.shape[0]}) (n_components, n_samples); "
                             f"got {init.shape}.")
        init = init @ lm.Phi
    elif init == "auto":  # the feature-space distance itself, as the exact path
        init = "identity"
    if isinstance(init, str) and init not in ("identity", "random"):
        raise ValueError("KLMNN: init must be 'auto', 'identity', 'random' or an array "
                         f"(n_components, n_samples); got {init!r}.")
    res = solve_loss(LMNN_METHOD.loss, "klmnn", lm.Phi, codes, n_classes, n_components=n_out,
                     random_state=random_state, init=init, route=LMNN_METHOD.route, **settings,
                     **{k: v for k, v in hyper.items() if v is not None})
    return landmark_result(res.L, lm, n_out, kernel, kernel_params, dict(res.info, kernel_rank=r), method="klmnn",
                           n_iter=res.n_iter, converged=res.converged, loss_history=res.loss_history, loss=res.loss)


def _klmnn(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, kernel, gamma, degree,
           coef0, n_neighbors, mu, margin, n_impostors, n_landmarks="auto", init="auto", optimizer=None,
           learning_rate=None, pad_to="auto"):
    n, d = X.shape
    tol = 1e-5 if tol is None else tol
    if not callable(kernel):
        gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, d)
    kernel_params = {} if callable(kernel) else dict(gamma=gamma, degree=degree, coef0=coef0)
    check_neighbour_count(n_neighbors, n, "jaxdml.fit(loss='klmnn')")
    m = resolve_landmarks(n_landmarks, n, "KLMNN")
    if m is not None:
        return _klmnn_landmarks(X, codes, n_classes, m, n_components=n_components, kernel=kernel,
                                kernel_params=kernel_params, init=init, random_state=random_state,
                                hyper=dict(mu=float(mu), margin=float(margin), n_impostors=n_impostors),
                                max_iter=max_iter, tol=tol, verbose=verbose, optimizer=optimizer,
                                learning_rate=learning_rate, n_neighbors=int(n_neighbors), pad_to=pad_to)
    K = kernel_matrix(X, kernel=kernel, **kernel_params)  # raises on non-finite values
    Z, P = kernel_basis(K)
    r = Z.shape[1]
    n_out = _dimension(n_components, r)
    # Pad columns (and, at the default dimension, rows of B) to a bucket, so that folds whose
    # kernel ranks differ reuse one executable. Padded columns of Z are zero, the matching entries
    # of B get zero gradient and stay zero.
    r_pad = bucket_size(r) if pad_to is not None else r
    rows = r_pad if n_components in (None, _UNBOUNDED) else n_out
    Zp = np.zeros((n, r_pad))
    Zp[:, :r] = Z
    B0 = _initial_B(init, rows, r_pad, n_out, r, n, Z, random_state)
    problem, bucket = _kernel_problem(Zp, K, codes, n_neighbors, n_impostors, pad_to)
    # the one gradient plan, on the kernel coordinates: LMNN's loss and optimisation defaults, full batch (the
    # exact path is the small-data one; large data take the landmark path and LMNN's own policy)
    res = execute(plan(KLMNN_SPEC, "klmnn", Zp, codes, n_classes, n_components=rows, random_state=random_state,
                       max_iter=max_iter, tol=tol, verbose=verbose, init=B0, optimizer=optimizer,
                       learning_rate=learning_rate, n_neighbors=int(n_neighbors), batch_size=None, n_candidates=None,
                       problem_fn=lambda _: (problem, n, bucket), mu=float(mu), margin=float(margin),
                       info=dict(kernel_rank=r, n_neighbors=int(n_neighbors), mu=float(mu), margin=float(margin))))
    return KernelFittedMetric(
        L=res.L[:n_out, :r] @ P, method="klmnn", n_iter=res.n_iter, converged=res.converged,
        loss_history=res.loss_history, loss=res.loss, info=res.info,
        X_fit=np.asarray(X, dtype=np.float64), kernel=kernel, kernel_params=kernel_params,
    )


#: KLMNN's exact path: LMNN's loss and optimisation defaults without the large-data switch
KLMNN_SPEC = LMNN_METHOD.loss._replace(large_n=None, large=None, batch_size=None, candidates_above=None)

KLMNN_METHOD = Method(
    "klmnn", "A", _klmnn,
    defaults=dict(kernel="linear", gamma=None, degree=3, coef0=1.0, n_neighbors=3, n_impostors=None, n_landmarks="auto",
                  **LMNN_DEFAULTS),
    constraints={**KERNEL_CONSTRAINTS, **LMNN_CONSTRAINTS, "n_neighbors": [Interval(numbers.Integral, 1, None)],
                 "n_impostors": [Interval(numbers.Integral, 1, None), None]},
    settings=frozenset({"n_neighbors", "init", "optimizer", "learning_rate", "pad_to"}),
    max_components=lambda d, c: _UNBOUNDED,  # the bound is the rank of K, checked in the solve step
    estimator="KLMNN",
)


class KLMNN(KernelMetricLearner):
    """Kernel Large Margin Nearest Neighbours.

    LMNN in the feature space of a kernel: ``transform(X) = K(X, X_fit_) @ components_.T`` with
    the coefficient matrix ``A = components_`` (n_components, n_train) of the representer theorem.
    Target neighbours are the nearest same-class samples in the feature space; the LMNN loss
    (:func:`jaxdml.losses.lmnn`) is minimised by L-BFGS over ``A`` in an orthonormal basis of the
    kernel columns' span (see :mod:`jaxdml.methods.gradient._klmnn`). With ``kernel="linear"`` it
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
    n_landmarks : "auto", int or None, default="auto"
        As the other kernel methods' (see :class:`KDA`): on landmarks, KLMNN is LMNN (its solve step,
        with its large-data policy: the active set of impostors from 4097 rows) on the Nystrom features,
        the feature-space distance of the Nystrom kernel; with the linear kernel that is LMNN on a
        rotation of the data. Target neighbours and impostors are searched among the features.
    max_iter : int, default=None (200)
    tol : float, default=1e-5
    optimizer : str or optax.GradientTransformation, default=None (L-BFGS)
    learning_rate : float, default=None
    random_state : int, RandomState or None
        Seeds ``init="random"`` and the choice of landmarks.
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

    _record = KLMNN_METHOD
    _parameter_constraints = {
        **GradientMetricLearner._parameter_constraints, **KernelMetricLearner._parameter_constraints,
        **KLMNN_METHOD.constraints,
        "init": [Options({"auto", "identity", "random"}), "array-like"],
    }

    def __init__(self, n_components=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0,
                 n_neighbors=3, mu=0.5, margin=1.0, init="auto", max_iter=None, tol=1e-5,
                 optimizer=None, learning_rate=None, n_landmarks="auto", random_state=None, verbose=0):
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
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose
