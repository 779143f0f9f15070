"""ANMM and its kernel form KANMM: records, solve steps (neighbourhoods on the host, the margin's
eigenvectors by :func:`jaxdml.eigen.anmm_components` / :func:`jaxdml.eigen.kanmm_components`) and
estimators."""

from __future__ import annotations

import numbers

import numpy as np

from ..._runtime._device import x64_call
from ..._runtime._padding import pad_neighbourhoods, pad_rows, pad_square, resolve_bucket
from ..._validation import Interval
from ...eigen import anmm_components, kanmm_components
from ...eigen._anmm import kanmm_components_truncated
from ...eigen._truncated import use_truncated
from ..core._base import BaseMetricLearner, KernelMetricLearner
from ..core._landmarks import N_LANDMARKS_DOC, landmark_result, resolve_landmarks
from ..core._neighbourhoods import (
    KERNEL_ATTRIBUTES,
    KERNEL_DOC,
    MAX_ANCHORS_DOC,
    anchor_rows,
    anchored_rows,
    kernel_neighbourhoods,
    kernel_parameters,
    kernel_result,
    landmark_problem,
    linear_neighbourhoods,
    training_kernel,
)
from ..core._record import (
    EIGEN_SOLVER,
    EIGEN_SOLVER_DOC,
    KERNEL_CONSTRAINTS,
    KERNEL_DEFAULTS,
    MAX_ROWS,
    POSITIVE_INT,
    Method,
)

_N_COMPONENTS = [Interval(numbers.Integral, 1, None), None]

__all__ = ["ANMM", "KANMM", "ANMM_METHOD", "KANMM_METHOD"]


def _margin_info(w, n_components, n, anchors):
    """ANMM's ``info``: eigenvalues of ``S - C`` and the margin, as estimates of the sums over all ``n``
    rows when only the ``anchors`` were summed (scaled by ``n / len(anchors)``)."""
    if anchors is None:
        return dict(eigenvalues=w, margin=float(w[:n_components].sum()))
    w = np.asarray(w) * (n / anchors.size)
    return dict(eigenvalues=w, margin=float(w[:n_components].sum()), n_anchors=int(anchors.size))


def _anmm(X, codes, n_classes, *, n_components, n_friends, n_enemies, max_anchors="auto", pad_to="auto",
          random_state=None, max_iter=None, tol=None, verbose=0):
    n, d = X.shape
    anchors = anchor_rows(codes, max_anchors, random_state)
    rows, nb = anchored_rows(linear_neighbourhoods(X, codes, n_friends, n_enemies, ("n_friends", "n_enemies"), "ANMM",
                                                   anchors), anchors)
    Xs = X if rows is None else X[rows]
    bucket = resolve_bucket(Xs.shape[0], pad_to)
    friends, fmask, enemies, emask = pad_neighbourhoods(Xs.shape[0], bucket, *nb)
    # all d rows are computed, then sliced: one compiled program serves every n_components
    L, w = x64_call(anmm_components, pad_rows(Xs, bucket), friends, enemies, d, fmask, emask)
    return dict(L=L[:n_components], info=_margin_info(w, n_components, n, anchors))


def _kanmm_landmarks(X, codes, m, *, n_components, n_friends, n_enemies, kernel, params, pad_to, random_state,
                     anchors):
    """KANMM for the Nystrom kernel of ``m`` landmarks: ANMM on the features, as the dense path on the
    kernel coordinates (:func:`jaxdml.eigen.kanmm_components`)."""
    lm, Phi, keep, (friends, fmask, enemies, emask) = landmark_problem(
        X, codes, kernel, params, m, n_friends, n_enemies, ("n_friends", "n_enemies"), "KANMM", anchors, pad_to,
        random_state)
    L, w = x64_call(anmm_components, Phi, friends, enemies, Phi.shape[1], fmask, emask, keep, slotwise=True)
    return landmark_result(L, lm, n_components, kernel, params,
                           dict(_margin_info(w, n_components, X.shape[0], anchors), eigen_solver=dict(solver="dense")))


def _kanmm(X, codes, n_classes, *, n_components, n_friends, n_enemies, kernel, gamma, degree,
           coef0, eigen_solver="auto", n_landmarks="auto", max_anchors="auto", pad_to="auto", random_state=None,
           max_iter=None, tol=None, verbose=0):
    n = X.shape[0]
    m = resolve_landmarks(n_landmarks, n, "KANMM")
    anchors = anchor_rows(codes, max_anchors, random_state)
    if m is not None:
        return _kanmm_landmarks(X, codes, m, n_components=n_components, n_friends=n_friends, n_enemies=n_enemies,
                                kernel=kernel, params=kernel_parameters(X, kernel, gamma, degree, coef0),
                                pad_to=pad_to, random_state=random_state, anchors=anchors)
    K, params = training_kernel(X, kernel, gamma, degree, coef0)
    nb = kernel_neighbourhoods(K, codes, n_friends, n_enemies, ("n_friends", "n_enemies"), "KANMM", anchors)
    bucket = resolve_bucket(n, pad_to)
    friends, fmask, enemies, emask = pad_neighbourhoods(n, bucket, *nb)
    if use_truncated(eigen_solver, bucket, n_components):
        rows = np.r_[np.ones(n), np.zeros(bucket - n)]
        A, w, how = x64_call(kanmm_components_truncated, pad_square(K, bucket), friends, enemies, n_components,
                             fmask, emask, rows, solver="truncated")
        if not w[-1] > 1e-8 * abs(w[0]):  # a non-positive margin competes with the null space of K: dense
            A, w = x64_call(kanmm_components, pad_square(K, bucket), friends, enemies, bucket, fmask, emask)
            how = dict(solver="dense (a leading eigenvalue is not positive)")
        return kernel_result(A, n_components, X, kernel, params,
                             dict(_margin_info(w, n_components, n, anchors), eigen_solver=how))
    # all rows are computed, then sliced: the compiled program depends on the bucket size only
    A, w = x64_call(kanmm_components, pad_square(K, bucket), friends, enemies, bucket, fmask, emask)
    return kernel_result(A, n_components, X, kernel, params,
                         dict(_margin_info(w, n_components, n, anchors), eigen_solver=dict(solver="dense")))


ANMM_METHOD = Method("anmm", "L", _anmm, defaults=dict(n_friends=3, n_enemies=1, max_anchors="auto"),
                     constraints={"n_friends": POSITIVE_INT, "n_enemies": POSITIVE_INT, "max_anchors": MAX_ROWS},
                     settings=frozenset({"pad_to"}), estimator="ANMM")
KANMM_METHOD = Method("kanmm", "A", _kanmm, defaults=dict(n_friends=3, n_enemies=1, eigen_solver="auto",
                                                         max_anchors="auto", **KERNEL_DEFAULTS),
                      constraints={**KERNEL_CONSTRAINTS, "n_friends": POSITIVE_INT, "n_enemies": POSITIVE_INT,
                                   "eigen_solver": EIGEN_SOLVER, "max_anchors": MAX_ROWS},
                      settings=frozenset({"pad_to"}), estimator="KANMM")


class ANMM(BaseMetricLearner):
    __doc__ = r"""Average Neighborhood Margin Maximization.

    Learns ``L`` with orthonormal rows maximising the average neighbourhood margin
    :math:`\operatorname{tr}(L(S - C)L^T)`: the summed squared distance of every sample to its
    ``n_enemies`` nearest other-class samples (scatter ``S``) minus that to its ``n_friends``
    nearest classmates (compactness ``C``), each averaged per sample
    (:func:`jaxdml.eigen.anmm_components`). Rows are the leading eigenvectors of ``S - C``.

    ANMM is a dimensionality reduction method: at full dimension ``L`` is orthogonal, so distances
    are Euclidean (a rotation). Set ``n_components`` below ``n_features`` to change the metric.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default: n_features).
    n_friends : int, default=3
        Size :math:`\xi` of the homogeneous neighbourhoods (compactness). Three same-class
        neighbours match the 3-NN classifier the metric is evaluated with.
    n_enemies : int, default=1
        Size :math:`\zeta` of the heterogeneous neighbourhoods (scatter). The nearest other-class
        sample defines the local margin; more enemies average in farther, less informative ones.
        A class too small for ``n_friends`` (or too large for ``n_enemies``) makes its samples
        use every classmate (every other-class sample), with a warning.""" + MAX_ANCHORS_DOC + r"""
    random_state : int, RandomState or None, default=None
        Seeds the choice of anchors above ``max_anchors`` rows (None: deterministic, seed 0).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)
    result_ : FittedMetric (``info["eigenvalues"]`` of ``S - C``, ``info["margin"]``)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.ANMM(n_components=2).fit(X, y).transform(X).shape
    (150, 2)

    References
    ----------
    F. Wang, C. Zhang. Feature extraction by maximizing the average neighborhood margin. CVPR 2007.
    """

    _record = ANMM_METHOD
    _parameter_constraints = {"n_components": _N_COMPONENTS, "n_friends": POSITIVE_INT, "n_enemies": POSITIVE_INT,
                              "max_anchors": MAX_ROWS, "random_state": ["random_state"]}

    def __init__(self, n_components=None, *, n_friends=3, n_enemies=1, max_anchors="auto", random_state=None):
        self.n_components = n_components
        self.n_friends = n_friends
        self.n_enemies = n_enemies
        self.max_anchors = max_anchors
        self.random_state = random_state


class KANMM(KernelMetricLearner):
    __doc__ = r"""Kernel ANMM: ANMM in the feature space of a kernel.

    Neighbourhoods use feature-space distances :math:`K_{ii} + K_{jj} - 2K_{ij}`; the map
    :math:`L\phi(x) = A k(x)` maximises the feature-space average neighbourhood margin subject
    to :math:`LL^T = AKA^T = I` (:func:`jaxdml.eigen.kanmm_components`). With the linear kernel it
    reproduces :class:`ANMM`.

    On landmarks (``n_landmarks``; by default above 4096 training rows) it is ANMM on the Nystrom
    features (the dense path's problem for the Nystrom kernel); the neighbourhoods are the exact
    feature-space ones for the rbf and linear kernels (searched in input space, where the order is the
    same), the features' for the others.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default and maximum: n_features).
    n_friends : int, default=3
    n_enemies : int, default=1
        As in :class:`ANMM`.
    """ + KERNEL_DOC + EIGEN_SOLVER_DOC + N_LANDMARKS_DOC + MAX_ANCHORS_DOC + r"""
    random_state : int, RandomState or None, default=None
        Seeds the choice of landmarks and anchors (None: deterministic, seed 0).""" + KERNEL_ATTRIBUTES + r"""
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.KANMM(n_components=2).fit(X, y).transform(X).shape
    (150, 2)

    References
    ----------
    F. Wang, C. Zhang. Feature extraction by maximizing the average neighborhood margin. CVPR 2007.
    """

    _record = KANMM_METHOD
    _parameter_constraints = {**KernelMetricLearner._parameter_constraints, "n_components": _N_COMPONENTS,
                              "n_friends": POSITIVE_INT, "n_enemies": POSITIVE_INT, "eigen_solver": EIGEN_SOLVER,
                              "max_anchors": MAX_ROWS}

    def __init__(self, n_components=None, *, n_friends=3, n_enemies=1, kernel="rbf", gamma=None, degree=3,
                 coef0=1, eigen_solver="auto", n_landmarks="auto", max_anchors="auto", random_state=None):
        self.n_components = n_components
        self.n_friends = n_friends
        self.n_enemies = n_enemies
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.eigen_solver = eigen_solver
        self.n_landmarks = n_landmarks
        self.max_anchors = max_anchors
        self.random_state = random_state
