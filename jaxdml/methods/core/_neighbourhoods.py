"""Host-side preparation shared by the closed-form (eigen-solver) methods: neighbourhoods of every
sample (by Euclidean or feature-space distance) and the training kernel matrix.

Validation, neighbourhood search and the kernel matrix cannot be traced; the maths are the pure
``jnp`` functions of :mod:`jaxdml.eigen`, run in float64 through :func:`jaxdml._runtime._device.x64_call`
on rows padded to a bucket size (:mod:`jaxdml._runtime._padding`), so that folds of similar size reuse one
executable.
"""

from __future__ import annotations

import numpy as np

from ..._runtime._padding import pad_neighbourhoods, resolve_bucket
from ..._runtime._warnings import warn as _warn
from ...kernels import check_kernel_params, kernel_matrix
from ...neighbors import other_class_neighbors, same_class_neighbors
from ...solvers._result import KernelFittedMetric
from ._landmarks import nystrom, padded_features
from ._record import rows_to_fit

__all__ = ["anchor_rows", "anchored_rows", "landmark_problem", "NEIGHBOURHOOD_MAX_ANCHORS", "MAX_ANCHORS_DOC",
           "linear_neighbourhoods", "kernel_neighbourhoods", "landmark_neighbourhoods", "kernel_parameters",
           "training_kernel", "kernel_result",
           "KERNEL_DOC", "KERNEL_ATTRIBUTES"]


#: ``max_anchors="auto"`` of the neighbourhood methods (ANMM, DMLMJ and their kernel forms): above this
#: many training rows their scatter matrices sum over a class-stratified random subset of this many
#: anchor rows, each with its exact neighbourhood among *all* rows (an unbiased estimate of the full
#: sums; the O(N^2 d) search of every row's neighbours becomes O(anchors N d)). Chosen by
#: ``benchmarks/PROTOCOL.md``, round 8.
NEIGHBOURHOOD_MAX_ANCHORS = 20_000

MAX_ANCHORS_DOC = """
    max_anchors : "auto", int or None, default="auto"
        Above this many training rows (``"auto"``: 20 000) the neighbourhood scatter matrices are
        summed over a class-stratified random subset of ``max_anchors`` anchor rows, each with its
        exact neighbourhoods among all rows (seeded by ``random_state``): the search costs
        O(max_anchors N d) instead of O(N^2 d). None: every row is an anchor.
        ``result_.info["n_anchors"]`` reports the number used."""


def anchor_rows(codes, max_anchors, random_state):
    """Sorted anchor rows of a neighbourhood method under its ``max_anchors`` rule (None: every row)."""
    return rows_to_fit(codes, max_anchors, NEIGHBOURHOOD_MAX_ANCHORS, random_state)


def anchored_rows(nb, anchors):
    """``(rows, nb)``: the rows the neighbourhood sums involve (the anchors and their neighbours, sorted)
    and the neighbourhoods ``(same, same_mask, diff, diff_mask)`` restricted and re-indexed to them, so
    that the scatter is computed over those rows only; ``(None, nb)`` when every row is an anchor."""
    if anchors is None:
        return None, nb
    same, same_mask, diff, diff_mask = nb
    rows = np.unique(np.concatenate([anchors, same[anchors].ravel(), diff[anchors].ravel()]))
    at = np.full(same.shape[0], -1, np.int64)
    at[rows] = np.arange(rows.size)  # a non-anchor row's slots point at itself, which is kept
    return rows, (at[same[rows]], same_mask[rows], at[diff[rows]], diff_mask[rows])


def _warn_small(codes, n_same, n_diff, names, owner):
    """Warn when a class cannot provide ``n_same`` classmates or ``n_diff`` other-class samples."""
    counts = np.bincount(codes)
    counts = counts[counts > 0]
    n = codes.size
    if n_same is not None and np.any(counts - 1 < n_same):
        _warn(
            f"{owner}: {names[0]}={n_same} but the smallest class has {counts.min()} sample(s); samples of "
            f"classes with at most {n_same} members use all their classmates (average over fewer neighbours).",
            UserWarning
        )
    if n_diff is not None and np.any(n - counts < n_diff):
        _warn(
            f"{owner}: {names[1]}={n_diff} but the largest class leaves only {n - counts.max()} sample(s) of "
            "other classes; its samples use all of them.",
            UserWarning
        )


def _neighbourhoods(source, kind, codes, n_same, n_diff, names, owner, anchors=None):
    """Nearest neighbours of every sample: ``n_same`` classmates (self excluded) and ``n_diff``
    samples of other classes, as ``(same_idx, same_mask, diff_idx, diff_mask)`` of shape (n, k),
    by the one search (:mod:`jaxdml.neighbors`, ties by lowest index). A sample whose class cannot
    provide the neighbours gets all there are (the remaining slots point at the sample itself with
    mask 0), with a warning. ``anchors`` (row indices, :func:`anchor_rows`): only those rows get
    neighbourhoods (searched among all rows); the others have all-zero masks.
    """
    _warn_small(codes, n_same, n_diff, names, owner)
    same, same_mask = same_class_neighbors(source, codes, n_same, kind=kind, queries=anchors)
    diff, diff_mask = other_class_neighbors(source, codes, n_diff, kind=kind, queries=anchors)
    return same, same_mask.astype(np.float64), diff, diff_mask.astype(np.float64)


def linear_neighbourhoods(X, codes, n_same, n_diff, names, owner, anchors=None):
    """Neighbourhoods by Euclidean distance."""
    return _neighbourhoods(X, "points", codes, n_same, n_diff, names, owner, anchors)


def kernel_neighbourhoods(K, codes, n_same, n_diff, names, owner, anchors=None):
    """Neighbourhoods by feature-space distances ``K_ii + K_jj - 2 K_ij``."""
    return _neighbourhoods(K, "kernel", codes, n_same, n_diff, names, owner, anchors)


def landmark_neighbourhoods(X, Phi, codes, kernel, n_same, n_diff, names, owner, anchors=None):
    """Neighbourhoods as :func:`kernel_neighbourhoods` returns them, for the landmark path, never forming
    the ``n x n`` kernel (memory ``O(block n)``). For the rbf and linear kernels the feature-space distance
    increases with the Euclidean one, so the search runs on ``X`` and the neighbourhoods are the exact
    feature-space ones; for the others it runs on the Nystrom features ``Phi`` (their distances approximate
    the feature-space ones)."""
    P = X if isinstance(kernel, str) and kernel in ("rbf", "linear") else Phi
    return _neighbourhoods(P, "points", codes, n_same, n_diff, names, owner, anchors)


def landmark_problem(X, codes, kernel, params, m, n_same, n_diff, names, owner, anchors, pad_to, random_state):
    """The landmark paths' problem: ``(lm, Phi, keep, (same, same_mask, diff, diff_mask))`` with the
    Nystrom map ``lm`` of ``m`` landmarks (its features dropped), the padded features ``Phi`` of the
    rows the sums involve (every row, or the anchors and their neighbours), their feature mask ``keep``
    and the padded neighbourhoods (:func:`landmark_neighbourhoods`) re-indexed to those rows."""
    lm = nystrom(X, kernel, params, m, random_state)
    rows, nb = anchored_rows(landmark_neighbourhoods(X, lm.Phi, codes, kernel, n_same, n_diff, names, owner, anchors),
                             anchors)
    Phi = lm.Phi if rows is None else lm.Phi[rows]
    lm = lm._replace(Phi=None)  # only the features of the rows involved are kept (memory: one n x r array less)
    bucket = resolve_bucket(Phi.shape[0], pad_to)
    nb = pad_neighbourhoods(Phi.shape[0], bucket, *nb)
    Phi, keep = padded_features(Phi, bucket)
    return lm, Phi, keep, nb


def kernel_parameters(X, kernel, gamma, degree, coef0) -> dict:
    """The resolved ``gamma``, ``degree``, ``coef0`` of a named kernel (clear errors); ``{}`` for a callable."""
    if callable(kernel):
        return {}
    g, dg, c0 = check_kernel_params(kernel, gamma, degree, coef0, X.shape[1])
    return dict(gamma=g, degree=dg, coef0=c0)


def training_kernel(X, kernel, gamma, degree, coef0):
    """Kernel matrix of the training data and the resolved kernel parameters (clear errors)."""
    params = kernel_parameters(X, kernel, gamma, degree, coef0)
    # raises ValueError on non-finite values and on a callable that is not symmetric (or not PSD); the
    # built-in kernels' Gram matrices come out exactly symmetric
    K = kernel_matrix(X, kernel=kernel, **params)
    return (0.5 * (K + K.T) if callable(kernel) else K), params


def kernel_result(A, n_components, X, kernel, params, info):
    """A :class:`KernelFittedMetric` with ``n_components`` rows of ``A`` (padding columns removed).

    Rows beyond the number of feature-space directions the data span (at most ``n_samples``)
    are zero.
    """
    n = X.shape[0]
    out = np.zeros((n_components, n))
    m = min(n_components, A.shape[0])
    out[:m] = A[:m, :n]
    return KernelFittedMetric(L=out, X_fit=np.array(X, dtype=np.float64), kernel=kernel, kernel_params=params,
                              info=info)


KERNEL_DOC = """kernel : {"rbf", "linear", "poly", "laplacian"} or callable, default="rbf"
        ``k(x, y)``; a callable gets two arrays and returns their kernel matrix (it must be
        symmetric and finite, else ``fit`` raises ``ValueError``).
    gamma : float, default=None
        For rbf, poly and laplacian; None means ``1 / n_features``.
    degree : int, default=3
        For poly.
    coef0 : float, default=1
        For poly."""

KERNEL_ATTRIBUTES = """

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_train) or (n_components, n_landmarks)
        The coefficients ``A``: ``transform(X) = K(X, X_fit_) @ components_.T``.
    X_fit_ : ndarray of shape (n_train, n_features) or (n_landmarks, n_features)
        The training rows, or on the landmark path the landmarks (``result_.info["landmarks"]``: their
        row numbers).
    kernel_params_ : dict
        The resolved ``gamma``, ``degree``, ``coef0``.
    result_ : KernelFittedMetric
"""
