"""Gradient methods that need more than a registered loss: NCMC (``centroids_num``) and KLMNN.

Both are registered with :func:`register_solver`, so ``jaxdml.fit(X, y, loss="ncmc" | "klmnn")``
reaches them; the optimisation itself is still the one optax driver (:func:`minimize`) on a pure
loss of :mod:`jaxdml.losses`.

- ``"ncmc"`` checks ``centroids_num`` against the class sizes, then runs the ``ncmc`` loss through
  the ordinary gradient path of :func:`jaxdml.fit` with ``n_centroids=centroids_num`` (k-means
  centroids per class, built once by :func:`jaxdml.make_problem`), with its own default
  ``tol`` (:data:`NCMC_TOL`), and reports the centroids in ``info``.
- ``"klmnn"`` is LMNN on kernel columns. By the representer theorem ``L phi(x) = A k(x)`` with
  ``k(x) = (K(x_1, x), ..., K(x_N, x))``. Target neighbours are the nearest same-class samples in
  the feature space, ``|phi(x_i) - phi(x_j)|^2 = K_ii + K_jj - 2 K_ij``. ``A`` is parametrised as
  ``A = B P`` with ``P = S^{-1/2} U^T`` from the eigendecomposition ``K = U S U^T`` (eigenvalues
  above a relative tolerance), so the optimiser works on the kernel columns expressed in an
  orthonormal basis of their span, ``Z = K P^T = U S^{1/2}`` (whose Euclidean distances are the
  feature-space distances). :func:`jaxdml.losses.lmnn` is minimised over ``B`` on
  ``make_problem(Z, y, targets=...)``. This is the same objective as LMNN in ``A`` on the raw
  kernel columns, but well conditioned, and L-BFGS is invariant to the orthogonal change of
  basis: with the linear kernel KLMNN follows LMNN's trajectory (``B0 = I`` gives ``A0 K = X^T``,
  i.e. the starting map is LMNN's identity).
"""

from __future__ import annotations

import numbers
import warnings

import jax.numpy as jnp
import numpy as np
from sklearn.utils import check_random_state

from .. import losses as _losses
from .._validation import Interval, Options
from ..exceptions import ConvergenceWarning
from ..kernels import check_kernel_params, feature_space_sq_dists, kernel_matrix
from ..problems import bucket_size, class_centroids, make_problem
from ._api import SolverSpec, check_budget, fit, register_solver
from ._driver import make_optimizer, minimize
from ._result import KernelFittedMetric

__all__ = ["check_centroids_num"]

#: ``max_components`` for kernel methods: the bound (the rank of K) is only known from the data.
_UNBOUNDED = 2**62

#: eigenvalues of K below this fraction of the largest are treated as zero
_EIG_RTOL = 1e-10


# --------------------------------------------------------------------------- NCMC
#: NCMC's default tolerance. Once the centroids separate the training classes, the likelihood keeps
#: growing as the map stretches; the stretched map over-fits and no longer matches a k-means run in
#: the embedding (what a nearest-centroid classifier fitted on transformed data does). Stopping at
#: a relative improvement of 1e-3 acts as early stopping: KEEL ncm experiment, 3 centroids, 0.820
#: instead of 0.783 (Euclidean + NCMC: 0.786).
NCMC_TOL = 1e-3


def check_centroids_num(y, centroids_num, *, owner: str = "NCMC") -> int:
    """Validate ``centroids_num`` (centroids per class) against the class sizes of ``y``.

    Raises a ``ValueError`` naming the smallest class when ``centroids_num`` exceeds its size
    (k-means cannot find more centroids than a class has samples).
    """
    if isinstance(centroids_num, bool) or not isinstance(centroids_num, numbers.Integral) or centroids_num < 1:
        raise ValueError(f"{owner}: centroids_num must be a positive int; got {centroids_num!r}.")
    classes, counts = np.unique(np.asarray(y), return_counts=True)
    small = counts < centroids_num
    if np.any(small):
        bad = [(c.item() if hasattr(c, "item") else c, int(n)) for c, n in zip(classes[small], counts[small])]
        raise ValueError(
            f"{owner}: centroids_num={int(centroids_num)} is larger than the number of samples of "
            f"{len(bad)} class(es) (class, size: {bad[:5]}); k-means cannot find more centroids "
            f"than a class has samples. Use centroids_num <= {int(counts.min())}."
        )
    return int(centroids_num)


def _ncmc_solver(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose,
                 centroids_num=2, init="auto", optimizer=None, learning_rate=None, pad_to="auto",
                 batch_size="auto", n_candidates="auto", devices=None, **hyper):
    if "n_centroids" in hyper:  # make_problem's name for the same thing
        centroids_num = hyper.pop("n_centroids")
    tol = check_budget("ncmc", max_iter, tol, NCMC_TOL)
    k = check_centroids_num(codes, centroids_num, owner="jaxdml.fit(loss='ncmc')")
    # one integer seed, so that the centroids reported below are exactly those make_problem uses
    seed = random_state if isinstance(random_state, numbers.Integral) else \
        int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    # A one-entry combination {"ncmc": 1} takes the plain gradient path of fit (not this solver).
    result = fit(
        X, codes, loss={"ncmc": 1.0}, n_components=n_components, max_iter=max_iter, tol=tol,
        optimizer=optimizer, learning_rate=learning_rate, init=init, random_state=seed,
        pad_to=pad_to, verbose=verbose, batch_size=batch_size, n_candidates=n_candidates,
        devices=devices, n_centroids=k, **hyper,
    )
    C, labels, _ = class_centroids(X, codes, n_classes, k, seed)
    result.info.update(centroids_num=k, centroids=C, centroid_labels=labels)
    return result


register_solver(
    "ncmc",
    SolverSpec(_ncmc_solver, constraints={"centroids_num": [Interval(numbers.Integral, 1, None)]}),
)


# --------------------------------------------------------------------------- KLMNN
def _kernel_targets(D: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` nearest same-class rows under the (feature-space) squared distances ``D``.

    Slots a small class cannot fill point at the row itself (``make_problem`` masks them).
    """
    n = D.shape[0]
    targets = np.tile(np.arange(n)[:, None], (1, k))
    for c in np.unique(codes):
        idx = np.flatnonzero(codes == c)
        kc = min(k, idx.size - 1)
        if kc <= 0:
            continue
        Dc = D[np.ix_(idx, idx)].copy()
        np.fill_diagonal(Dc, np.inf)
        order = np.argsort(Dc, axis=1, kind="stable")[:, :kc]
        targets[idx, :kc] = idx[order]
    return targets


def _kernel_impostors(D: np.ndarray, codes: np.ndarray, m: int):
    """The ``m`` nearest differently-labelled rows under ``D``, and their mask."""
    n = D.shape[0]
    out = np.tile(np.arange(n)[:, None], (1, m))
    mask = np.zeros((n, m))
    for c in np.unique(codes):
        inside, outside = np.flatnonzero(codes == c), np.flatnonzero(codes != c)
        mc = min(m, outside.size)
        if mc == 0:
            continue
        order = np.argsort(D[np.ix_(inside, outside)], axis=1, kind="stable")[:, :mc]
        out[inside, :mc] = outside[order]
        mask[inside, :mc] = 1.0
    return out, mask


def kernel_basis(K: np.ndarray):
    """``(Z, P)`` with ``K ~= Z Z^T``, ``Z = K P^T = U S^{1/2}`` and ``P = S^{-1/2} U^T``.

    Eigenvalues of the symmetrised ``K`` at or below ``1e-10`` times the largest are dropped, so
    ``P`` (rank x N) is bounded. Raises if ``K`` has no positive eigenvalue.
    """
    K = 0.5 * (K + K.T)
    w, U = np.linalg.eigh(K)
    w, U = w[::-1], U[:, ::-1]
    if not w.size or not w[0] > 0:
        raise ValueError("The kernel matrix has no positive eigenvalue (it is zero or not PSD); check the kernel.")
    keep = w > _EIG_RTOL * w[0]
    w, U = w[keep], U[:, keep]
    Z = U * np.sqrt(w)
    P = (U / np.sqrt(w)).T
    return Z, P


def _klmnn_solver(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose,
                  kernel="linear", gamma=None, degree=3, coef0=1.0, n_neighbors=3, mu=0.5, margin=1.0,
                  n_impostors=None, init="auto", optimizer=None, learning_rate=None, pad_to="auto"):
    n, d = X.shape
    tol = check_budget("klmnn", max_iter, tol, 1e-5)
    if not callable(kernel):
        gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, d)
    kernel_params = {} if callable(kernel) else dict(gamma=gamma, degree=degree, coef0=coef0)
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, numbers.Integral) or n_neighbors < 1:
        raise ValueError(f"jaxdml.fit(loss='klmnn'): n_neighbors must be a positive int; got {n_neighbors!r}.")
    if n_neighbors >= n:
        raise ValueError(f"jaxdml.fit(loss='klmnn'): n_neighbors={n_neighbors} must be smaller than n_samples={n}.")
    K = kernel_matrix(X, kernel=kernel, **kernel_params)  # raises on non-finite values
    Z, P = kernel_basis(K)
    r = Z.shape[1]
    if n_components == _UNBOUNDED or n_components is None:
        n_out = r
    elif n_components > r:
        raise ValueError(
            f"jaxdml.fit(loss='klmnn'): n_components={n_components} exceeds the rank of the kernel "
            f"matrix ({r}); use n_components <= {r}."
        )
    else:
        n_out = int(n_components)
    default_dim = n_components in (None, _UNBOUNDED)

    # Pad columns (and, at the default dimension, rows of B) to a bucket, so that folds whose
    # kernel ranks differ reuse one executable. Padded columns of Z are zero, the matching entries
    # of B get zero gradient and stay zero.
    r_pad = bucket_size(r) if pad_to is not None else r
    rows = r_pad if default_dim else n_out
    Zp = np.zeros((n, r_pad))
    Zp[:, :r] = Z

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
    else:
        A0 = np.asarray(init, dtype=np.float64)
        if A0.shape != (n_out, n):
            raise ValueError(f"KLMNN: init array must have shape ({n_out}, {n}) (n_components, n_samples); "
                             f"got {A0.shape}.")
        B0 = np.zeros((rows, r_pad))
        B0[:n_out, :r] = A0 @ Z  # A = B P  <=>  B = A U S^{1/2} = A Z on the span of K

    D = feature_space_sq_dists(K)
    targets = _kernel_targets(D, codes, int(n_neighbors))
    bucket = bucket_size(n) if pad_to == "auto" else (n if pad_to is None else int(pad_to))
    problem = make_problem(Zp, codes, targets=targets, pad_to=bucket)
    if n_impostors is not None:
        imp, imp_mask = _kernel_impostors(D, codes, int(n_impostors))
        extra = bucket - n
        imp = np.concatenate([imp, np.tile(np.arange(n, bucket)[:, None], (1, imp.shape[1]))]).astype(np.int32)
        imp_mask = np.concatenate([imp_mask, np.zeros((extra, imp.shape[1]))])
        problem = problem._replace(impostors=jnp.asarray(imp), impostor_mask=jnp.asarray(imp_mask, problem.X.dtype))

    spec = _losses.get("lmnn")
    if optimizer is None or isinstance(optimizer, str):
        optimizer = make_optimizer(optimizer or spec.optimizer)
    max_iter = spec.max_iter if max_iter is None else max_iter
    res = minimize(
        spec.fn, jnp.asarray(B0, problem.X.dtype), problem, optimizer=optimizer, max_iter=max_iter,
        tol=tol, learning_rate=learning_rate if learning_rate is not None else spec.learning_rate,
        hyper=dict(mu=float(mu), margin=float(margin)), verbose=verbose,
    )
    n_iter = int(res.n_iter)
    hist = np.asarray(res.loss_history, dtype=np.float64)[: n_iter + 1]
    hist = hist[np.isfinite(hist)]
    if bool(res.failed):
        if n_iter == 0 or hist.size == 0:
            raise FloatingPointError("klmnn: the loss is not finite at the initial point; check the kernel parameters.")
        warnings.warn(f"klmnn: the loss became non-finite after {n_iter} iterations; returning the best finite "
                      "iterate.", RuntimeWarning, stacklevel=3)
    elif not bool(res.converged):
        warnings.warn(f"klmnn: the optimisation did not converge in max_iter={max_iter} iterations (tol={tol}); "
                      "increase max_iter.", ConvergenceWarning, stacklevel=3)
    B = np.asarray(res.params, dtype=np.float64)[:n_out, :r]
    A = B @ P
    return KernelFittedMetric(
        L=A, method="klmnn", n_iter=n_iter, converged=bool(res.converged), loss_history=hist,
        loss=float(res.loss),
        info=dict(failed=bool(res.failed), kernel_rank=r, padded_rows=bucket - n, n_neighbors=int(n_neighbors),
                  mu=float(mu), margin=float(margin)),
        X_fit=np.asarray(X, dtype=np.float64), kernel=kernel, kernel_params=kernel_params,
    )


register_solver(
    "klmnn",
    SolverSpec(
        _klmnn_solver,
        max_components=lambda d, c: _UNBOUNDED,  # the bound is the rank of K, checked in the solver
        constraints={
            "kernel": [Options({"linear", "poly", "rbf", "laplacian"}), "callable"],
            "gamma": [Interval(numbers.Real, 0, None, closed="neither"), None],
            "degree": [Interval(numbers.Integral, 1, None)],
            "coef0": [Interval(numbers.Real, None, None)],
            "n_neighbors": [Interval(numbers.Integral, 1, None)],
            "mu": [Interval(numbers.Real, 0, 1, closed="neither")],
            "margin": [Interval(numbers.Real, 0, None, closed="neither")],
            "n_impostors": [Interval(numbers.Integral, 1, None), None],
        },
    ),
)
