"""The solve steps shared by the ordinal metric learners (LODML, KODML, CMOML, KCMOML).

Targets are ordered integer grades. The host side checks them, chooses each anchor's fixed
neighbourhood (by Euclidean distance, or by feature-space distance for the kernel versions),
pads rows to a bucket size and runs the pure loss of :mod:`jaxdml.losses._ordinal` through the
optax driver (L-BFGS). The kernel versions work as KLMNN does (:mod:`jaxdml.methods.gradient._klmnn`): the
loss is minimised over ``B`` on ``Z = U S^{1/2}`` (``K = U S U^T``) and ``A = B P``; then
``tr(B B^T) = tr(A K A^T)`` is the trace of the feature-space metric, and with the linear kernel
the kernel version follows the linear one's trajectory up to an orthogonal change of basis.
"""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np

from ..._runtime._device import to_device
from ..._runtime._padding import bucket_size, pad_neighbourhoods, resolve_bucket
from ..._validation import Interval, Options
from ...kernels import check_kernel_params, feature_space_sq_dists, kernel_matrix
from ...losses._ordinal import OrdinalProblem
from ...neighbors import knn_search, other_class_neighbors, same_class_neighbors
from ...solvers._init import initial_components
from ...solvers._result import KernelFittedMetric
from ..core._landmarks import kernel_basis, landmark_result, nystrom, resolve_landmarks
from ..core._plan import execute, plan
from ..core._record import LossSpec, rows_to_fit

__all__ = ["check_grades", "odml_neighbourhoods", "nearest_neighbourhoods", "odml_search", "nearest_search",
           "solve_linear", "solve_kernel",
           "UNBOUNDED", "LINEAR_SETTINGS", "KERNEL_SETTINGS", "KERNEL_INIT", "ORDINAL_MAX_ROWS", "MAX_ROWS_DOC"]

#: ``max_components`` of the kernel versions: the bound (the rank of K) is only known from the data
UNBOUNDED = 2**62
LINEAR_SETTINGS = frozenset({"init", "optimizer", "learning_rate", "pad_to"})
KERNEL_SETTINGS = frozenset({"init", "optimizer", "learning_rate", "pad_to"})
KERNEL_INIT = [Options({"auto", "identity"})]
POSITIVE_INT = [Interval(numbers.Integral, 1, None)]


#: ``max_rows="auto"`` of the ordinal learners: above this many rows they fit a grade-stratified random
#: subsample of this size. Their neighbourhood search is O(n^2 d) and every L-BFGS step O(n m d) for m
#: neighbours: 200 000 rows did not finish in 10 minutes. On 40 000 rows of 5 grades (16 features),
#: 5 000 / 10 000 / 20 000 fitted rows gave the same 5-NN grade error to 0.015 (LODML 0.287 / 0.302 /
#: 0.290, CMOML 0.295 / 0.298 / 0.302; Euclidean 0.527) at 1 / 1 / 2.2 (LODML) and 1 / 1.05 / 2.9
#: (CMOML) times the 5 000-row time (benchmarks/PROTOCOL.md, round 7).
ORDINAL_MAX_ROWS = 10_000
MAX_ROWS_DOC = """max_rows : "auto", int or None, default="auto"
        Above this many rows the fit runs on a random subsample of this size, stratified by grade
        (``"auto"``: 10 000; None: every row); the map applies to every row.
        ``result_.info["n_fitted_rows"]`` and ``["subsample"]`` say what was fitted."""


def check_grades(y, name: str) -> np.ndarray:
    """Integer grades as float64; a clear error for continuous targets or a single grade."""
    t = np.asarray(y, dtype=np.float64)
    bad = t[t != np.round(t)]
    if bad.size:
        raise ValueError(
            f"{name}: y must hold ordered integer grades (e.g. 1, 2, 3); got non-integer values such as "
            f"{bad[0]!r}. For continuous targets use MLKR; encode ordered categories as integers.")
    if np.unique(t).size < 2:
        raise ValueError(f"{name}: y holds a single grade ({t[0]!r}); ordinal metric learning needs at least 2.")
    return t


def _odml(source, kind, t, n_targets, n_impostors):
    codes = _grade_codes(t)
    same, same_mask = same_class_neighbors(source, codes, n_targets, kind=kind)
    other, other_mask = other_class_neighbors(source, codes, n_impostors, kind=kind)
    return np.concatenate([same, other], axis=1), np.concatenate([same_mask, other_mask], axis=1).astype(np.float64)


def _nearest(source, kind, size):
    n = np.shape(source)[0]
    k = min(size, n - 1)
    idx, _ = knn_search(source, k, kind=kind)
    out = np.tile(np.arange(n)[:, None], (1, size))
    mask = np.zeros((n, size))
    out[:, :k] = np.where(idx >= 0, idx, np.arange(n)[:, None])
    mask[:, :k] = idx >= 0
    return out, mask


def odml_neighbourhoods(D, t, n_targets, n_impostors):
    """Each anchor's ``n_targets`` nearest same-grade samples and ``n_impostors`` nearest samples of other
    grades under the squared distances ``D`` (slots a small grade cannot fill are masked):
    ``(neighbours, mask)`` of width ``n_targets + n_impostors`` (:mod:`jaxdml.neighbors`, ties by lowest
    index)."""
    return _odml(D, "distances", t, n_targets, n_impostors)


def nearest_neighbourhoods(D, t, size):
    """Each anchor's ``size`` nearest samples (any grade) under ``D``: ``(neighbours, mask)`` of width
    ``size`` (slots beyond ``n - 1`` samples are masked, so that the width, and the compiled loss, do not
    depend on ``n``)."""
    return _nearest(D, "distances", size)


def _grade_codes(t):
    return np.unique(t, return_inverse=True)[1].astype(np.int32)


def odml_search(P, t, n_targets, n_impostors):
    """:func:`odml_neighbourhoods` by a search on the points ``P`` (Euclidean; memory ``O(block n)``,
    never ``n x n``)."""
    return _odml(P, "points", t, n_targets, n_impostors)


def nearest_search(P, t, size):
    """:func:`nearest_neighbourhoods` by a search on the points ``P``."""
    return _nearest(P, "points", size)


def _problem(Z, t, D, hood, pad_to):
    """The padded :class:`OrdinalProblem` of ``Z / c`` and the scale ``c``: ``c^2`` is the mean squared
    distance from a sample to its neighbourhood, so that a unit margin means the same on data of any
    scale (the learned map on ``Z`` is the map on ``Z / c`` divided by ``c``)."""
    n = Z.shape[0]
    neigh, mask = hood(D, t)
    c2 = float(np.sum(D[np.arange(n)[:, None], neigh] * mask) / max(np.sum(mask), 1.0))
    return _padded_problem(Z, t, neigh, mask, c2, pad_to)


def _padded_problem(Z, t, neigh, mask, c2, pad_to):
    n = Z.shape[0]
    c = np.sqrt(c2) if c2 > 0 else 1.0
    bucket = resolve_bucket(n, pad_to)
    neigh, mask = pad_neighbourhoods(n, bucket, neigh, mask)
    pad = lambda a: np.concatenate([a, np.zeros((bucket - n,) + a.shape[1:])])  # noqa: E731
    dtype = jnp.result_type(float)
    return OrdinalProblem(X=to_device(pad(Z / c), dtype), grades=to_device(pad(t), dtype),
                          sample_mask=to_device(pad(np.ones(n)), dtype), neighbours=to_device(neigh),
                          neighbour_mask=to_device(mask, dtype)), bucket, c


def _searched_problem(Z, t, P, search, pad_to):
    """:func:`_problem` without distance matrices: the neighbourhoods by ``search(P, t)`` (a blockwise search
    on the points ``P``), the scale from the rows of ``Z`` (memory ``O(n k)``)."""
    neigh, mask = search(P, t)
    d2 = np.zeros(neigh.shape)
    for j in range(neigh.shape[1]):  # one neighbour slot at a time: O(n r) memory
        diff = Z - Z[neigh[:, j]]
        d2[:, j] = np.einsum("ij,ij->i", diff, diff)
    c2 = float(np.sum(d2 * mask) / max(np.sum(mask), 1.0))
    return _padded_problem(Z, t, neigh, mask, c2, pad_to)


def _minimize(loss, params0, problem, rows, bucket, name, *, max_iter, tol, optimizer, learning_rate, verbose,
              hyper):
    """``loss`` from ``params0`` on the ready ``problem`` (built from the host ``rows``, padded to ``bucket``)
    through the one gradient plan (L-BFGS by default, full batch): ``(result, n_iter, loss_history)``, the result
    a FittedMetric whose ``L`` is the parameter."""
    spec = LossSpec(loss, "L", optimizer="lbfgs", max_iter=max_iter)
    res = execute(plan(spec, name, rows, None, 0, n_components=params0.shape[0], random_state=None, max_iter=max_iter,
                       tol=1e-5 if tol is None else float(tol), verbose=verbose, init=np.asarray(params0),
                       optimizer=optimizer, learning_rate=learning_rate, batch_size=None, n_candidates=None,
                       problem_fn=lambda _: (problem, rows.shape[0], bucket), **(hyper or {})))
    return res, res.n_iter, res.loss_history


def _subsample(X, t, max_rows, random_state, min_per_grade):
    """``(X, t, info)`` of the rows fitted under the ``max_rows`` rule (a grade-stratified subsample)."""
    keep = rows_to_fit(_grade_codes(t), max_rows, ORDINAL_MAX_ROWS, random_state, min_per_class=min_per_grade)
    if keep is not None:
        X, t = X[keep], t[keep]
    return X, t, dict(n_fitted_rows=X.shape[0], subsample=keep is not None)


def solve_linear(loss, name, search, X, y, *, n_components, random_state, max_iter, tol, verbose, init="auto",
                 optimizer=None, learning_rate=None, pad_to="auto", default_iter=200, hyper=None, max_rows=None,
                 min_per_grade=1):
    """Learn ``L`` on ``X`` (above ``max_rows`` rows a grade-stratified subsample): neighbourhoods by
    ``search(X, t)`` (Euclidean, blockwise: memory ``O(block n)``, no n x n distance matrix), then ``loss``
    by L-BFGS."""
    X, t, fitted = _subsample(X, check_grades(y, name), max_rows, random_state, min_per_grade)
    problem, bucket, c = _searched_problem(X, t, X, search, pad_to)
    L0 = initial_components(init, X, None, 0, n_components, random_state)
    if not isinstance(init, str):  # a given map keeps its embedding; "identity"/"pca"/"random"
        L0 = L0 * c                        # act on the rescaled data (the Euclidean distance up to scale)
    max_iter = default_iter if max_iter is None else int(max_iter)
    res, n_iter, hist = _minimize(loss, L0, problem, X, bucket, name, max_iter=max_iter, tol=tol, optimizer=optimizer,
                                  learning_rate=learning_rate, verbose=verbose, hyper=hyper)
    return dict(L=np.asarray(res.L, np.float64) / c, n_iter=n_iter, converged=bool(res.converged),
                loss_history=hist, loss=float(res.loss),
                info=dict(failed=bool(res.info["failed"]), padded_rows=bucket - X.shape[0], scale=c, **fitted,
                          **(hyper or {})))


def _kernel_basis(X, t, kernel, kernel_params, n_landmarks, random_state, name, hood, search, pad_to):
    """The coordinates ``Z`` (n, r) of the training rows, the map ``P`` (r, n or m) of kernel columns to them and
    the problem: the kernel's eigenbasis (exact) or the Nystrom features of the landmarks (``lm``)."""
    m = resolve_landmarks(n_landmarks, X.shape[0], name)
    if m is None:
        K = kernel_matrix(X, kernel=kernel, **kernel_params)
        Z, P = kernel_basis(K)
        return Z, P, None, lambda Zp: _problem(Zp, t, feature_space_sq_dists(K), hood, pad_to)
    lm = nystrom(X, kernel, kernel_params, m, random_state)
    # rbf and linear: the feature-space order is the Euclidean one (the search runs on X, exactly)
    points = X if isinstance(kernel, str) and kernel in ("rbf", "linear") else lm.Phi
    return lm.Phi, lm.T.T, lm, lambda Zp: _searched_problem(Zp, t, points, search, pad_to)


def solve_kernel(loss, name, hood, X, y, *, n_components, random_state, max_iter, tol, verbose, kernel, gamma,
                 degree, coef0, init="auto", optimizer=None, learning_rate=None, pad_to="auto", n_landmarks="auto",
                 search=None, default_iter=200, hyper=None, max_rows=None, min_per_grade=1):
    """Learn ``A`` (n_components, n_train) in the kernel's feature space (see the module docstring); on
    landmarks (``n_landmarks``, :mod:`jaxdml.methods.core._landmarks`) on the Nystrom features, with the
    neighbourhoods of ``search(points, t)`` (``hood``'s, by a blockwise search), ``A`` on the landmarks;
    above ``max_rows`` rows on a grade-stratified subsample."""
    X, t, fitted = _subsample(X, check_grades(y, name), max_rows, random_state, min_per_grade)
    n, d = X.shape
    if not (isinstance(init, str) and init in ("auto", "identity")):
        raise ValueError(f"{name}: init must be 'auto' or 'identity' (the feature-space distance); got {init!r}.")
    if not callable(kernel):
        gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, d)
    kernel_params = {} if callable(kernel) else dict(gamma=gamma, degree=degree, coef0=coef0)
    Z, P, lm, make_problem = _kernel_basis(X, t, kernel, kernel_params, n_landmarks, random_state, name, hood,
                                           search, pad_to)
    r = Z.shape[1]
    if n_components not in (None, UNBOUNDED) and n_components > r:
        raise ValueError(f"jaxdml.fit(loss={name!r}): n_components={n_components} exceeds the rank of the kernel "
                         f"matrix ({r}); use n_components <= {r}.")
    n_out = r if n_components in (None, UNBOUNDED) else int(n_components)
    # columns (and, at the default dimension, rows of B) padded to a bucket: padded entries stay zero
    r_pad = bucket_size(r) if pad_to is not None else r
    rows = r_pad if n_components in (None, UNBOUNDED) else n_out
    Zp = np.zeros((n, r_pad))
    Zp[:, :r] = Z
    B0 = np.eye(rows, r_pad)  # "auto"/"identity": the feature-space distance (KPCA directions below r)
    B0[n_out:] = 0.0
    B0[:, r:] = 0.0
    problem, bucket, c = make_problem(Zp)
    max_iter = default_iter if max_iter is None else int(max_iter)
    res, n_iter, hist = _minimize(loss, B0, problem, Zp, bucket, name, max_iter=max_iter, tol=tol,
                                  optimizer=optimizer, learning_rate=learning_rate, verbose=verbose, hyper=hyper)
    B = np.asarray(res.L, dtype=np.float64)[:n_out, :r]
    info = dict(failed=bool(res.info["failed"]), kernel_rank=r, padded_rows=bucket - n, scale=c, **fitted,
                **(hyper or {}))
    fields = dict(method=name, n_iter=n_iter, converged=bool(res.converged), loss_history=hist, loss=float(res.loss))
    if lm is not None:
        return landmark_result(B / c, lm, n_out, kernel, kernel_params, info, **fields)
    return KernelFittedMetric(L=B @ P / c, info=info, X_fit=np.asarray(X, dtype=np.float64), kernel=kernel,
                              kernel_params=kernel_params, **fields)
