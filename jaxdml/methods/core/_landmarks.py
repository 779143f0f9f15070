"""The landmark (Nystrom) path of the kernel methods: when it is taken, its features, its result.

Every kernel method (KDA, KANMM, KDMLMJ, KLLDA, KLMNN, KODML, KCMOML) takes ``n_landmarks``:

* ``"auto"`` (default): the exact method up to :data:`AUTO_EXACT_MAX` training rows; above,
  ``m = min(2000, n_budget)`` landmarks, ``n_budget`` the most whose ``n x m`` float64 features fit the
  library memory budget (:func:`jaxdml.config.set_memory_budget`, 1 GiB by default: 2000 landmarks up
  to 67 000 rows, 671 at 200 000). Fewer than :data:`MIN_AUTO_LANDMARKS` raises up front.
* an int ``m``: ``min(m, n)`` landmarks (all training rows when ``m >= n``: then the landmark path
  is the exact method, up to round-off);
* ``None``: always the exact method (``n x n`` kernel matrices; raises up front when they cannot fit
  the machine's memory).

Landmarks are chosen by k-means++ seeding in the kernel's feature space, seeded by ``random_state``
(:func:`jaxdml.kernels.kmeanspp_landmarks`). The training rows get the Nystrom features
``Phi = K(X, Z) T`` (:func:`jaxdml.kernels.nystrom_features`, ``T = W^{-1/2}`` on the kept
eigenvalues of ``W = K(Z, Z)``), and the method runs on them as the exact method runs on its kernel
coordinates: it is the exact method for the Nystrom kernel ``Phi Phi^T``. The learned coefficients live
on the landmarks, ``A = L T^T`` (n_components, m), and the fitted result keeps only the landmarks:
``transform(X_new) = K(X_new, Z) A^T`` needs ``O(n_new m)``. Nothing ``n x n`` is formed: memory
``O(n m)``; neighbourhoods are searched blockwise (:mod:`jaxdml.neighbors`).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from ..._runtime._padding import bucket_size
from ..._validation import seed_from
from ...config import get_memory_budget
from ...kernels import kernel_matrix
from ...kernels._landmarks import kmeanspp_landmarks, nystrom_features, nystrom_map
from ...solvers._result import KernelFittedMetric

__all__ = ["Landmarks", "resolve_landmarks", "landmark_rows", "nystrom", "padded_features", "landmark_result",
           "N_LANDMARKS_DOC", "AUTO_EXACT_MAX", "AUTO_LANDMARKS", "MIN_AUTO_LANDMARKS"]

#: ``n_landmarks="auto"``: the exact kernel method up to this many training rows
AUTO_EXACT_MAX = 4096
#: ``n_landmarks="auto"``: at most this many landmarks
AUTO_LANDMARKS = 2000
#: ``n_landmarks="auto"``: fewer landmarks than this (a memory budget too small) raises
MIN_AUTO_LANDMARKS = 100
#: ``n x n`` float64 matrices an exact kernel method holds at once (kernel, coordinates, their map,
#: padded copies): the estimate its up-front memory check uses
_EXACT_MATRICES = 6
#: ``n x m`` float64 arrays the landmark path holds at once (features, a gathered or scaled copy)
_LANDMARK_ARRAYS = 4

N_LANDMARKS_DOC = """
    n_landmarks : "auto", int or None, default="auto"
        Landmarks of the Nystrom approximation (:mod:`jaxdml.methods.core._landmarks`): the method runs on
        the features ``Phi = K(X, Z) K(Z, Z)^{-1/2}`` of ``m`` landmark rows ``Z`` (k-means++ seeding in
        the feature space, seeded by ``random_state``), so memory is ``O(n m)`` and no ``n x n`` kernel
        is formed; the fitted coefficients and ``X_fit_`` are then the landmarks' (``components_`` has
        ``m`` columns). ``"auto"``: exact up to 4096 training rows, above ``min(2000, n_budget)``
        landmarks, ``n_budget`` the most whose ``n x m`` float64 features fit the memory budget
        (:func:`jaxdml.config.set_memory_budget`, 1 GiB: 2000 up to 67 000 rows); an int: that many
        (all rows when it is at least ``n``, which equals the exact method up to round-off); ``None``: the
        exact method (raises up front when its ``n x n`` matrices cannot fit in memory)."""


def _physical_memory():
    """Bytes of physical memory of this machine, or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _gib(nbytes) -> str:
    return f"{nbytes / 2**30:.3g} GiB"


def resolve_landmarks(n_landmarks, n: int, owner: str):
    """The number of landmarks for ``n`` training rows, or None for the exact method (module docstring).

    Raises ``ValueError`` before any work when the choice cannot fit: the exact method's ``n x n``
    matrices, or the ``n x m`` features, beyond the machine's physical memory; ``"auto"`` under a
    memory budget that leaves fewer than :data:`MIN_AUTO_LANDMARKS` landmarks.
    """
    memory = _physical_memory()
    if n_landmarks is None:
        need = _EXACT_MATRICES * 8 * n * n
        if memory is not None and need > memory:
            raise ValueError(
                f"{owner}: the exact kernel method (n_landmarks=None) on {n} training rows needs about {_gib(need)} "
                f"({_EXACT_MATRICES} n x n float64 matrices) and O(n^3) = {float(n) ** 3:.2g} flops of dense "
                f"factorisations; this machine has {_gib(memory)}. Use n_landmarks='auto' or an int (Nystrom "
                "landmarks: memory O(n m)).")
        return None
    if isinstance(n_landmarks, str):  # "auto"
        if n <= AUTO_EXACT_MAX:
            return None
        budget = get_memory_budget()
        m = min(AUTO_LANDMARKS, n, budget // (8 * n))
        if m < MIN_AUTO_LANDMARKS:
            raise ValueError(
                f"{owner}: n_landmarks='auto' keeps the n x m float64 Nystrom features within the memory budget "
                f"({_gib(budget)}); for {n} training rows that allows {m} landmarks, fewer than the "
                f"{MIN_AUTO_LANDMARKS} it accepts (they would need {_gib(8 * n * MIN_AUTO_LANDMARKS)}). Raise the "
                "budget (jaxdml.config.set_memory_budget) or pass n_landmarks=<int>.")
        return int(m)
    m = min(int(n_landmarks), n)
    need = _LANDMARK_ARRAYS * 8 * n * m
    if memory is not None and need > memory:
        fit = max(1, memory // (_LANDMARK_ARRAYS * 8 * n))
        raise ValueError(
            f"{owner}: n_landmarks={n_landmarks} on {n} training rows needs about {_gib(need)} ({_LANDMARK_ARRAYS} "
            f"n x m float64 arrays, m = {m}); this machine has {_gib(memory)}. Use at most {fit} landmarks "
            "(or n_landmarks='auto').")
    return m


class Landmarks(NamedTuple):
    """The landmark rows and the Nystrom features of the training rows."""

    Z: np.ndarray  # (m, d) landmark rows
    T: np.ndarray  # (m, r) W^{-1/2} on the kept eigenvalues of W = K(Z, Z)
    Phi: np.ndarray  # (n, r) features of the training rows, K(X, Z) T
    index: np.ndarray  # (m,) their row numbers in the training data, ascending


def landmark_rows(X, kernel, params, m: int, random_state):
    """``(Z, index)``: ``m`` landmark rows of ``X`` (k-means++ in feature space, seeded; every row, in
    order, when ``m = n``) and their row numbers."""
    n = X.shape[0]
    idx = np.arange(n) if m >= n else kmeanspp_landmarks(X, m, kernel=kernel, kernel_params=params,
                                                         random_state=seed_from(random_state))
    return np.ascontiguousarray(X[idx]), idx


def nystrom(X, kernel, params, m: int, random_state) -> Landmarks:
    """Landmarks (:func:`landmark_rows`) and the Nystrom features of the training rows."""
    Z, idx = landmark_rows(X, kernel, params, m, random_state)
    W = kernel_matrix(Z, kernel=kernel, **params)  # a callable's Gram matrix is checked (symmetric, PSD)
    T, _ = nystrom_map(W)
    return Landmarks(Z, T, nystrom_features(X, Z, T, kernel=kernel, kernel_params=params), idx)


def padded_features(Phi, bucket: int):
    """The features padded with zero rows to ``bucket`` and zero columns to a bucket size of their rank
    (so that folds whose landmark kernels differ in rank share compiled programs), and the mask of the
    real columns (the dense eigen-solvers rank the padding directions last, as the dropped directions
    of the exact kernel coordinates)."""
    n, r = Phi.shape
    cols = bucket_size(r)
    out = np.zeros((bucket, cols))
    out[:n, :r] = Phi
    return out, (np.arange(cols) < r).astype(np.float64)


def landmark_result(L, lm: Landmarks, n_components: int, kernel, params, info, *, on_features: bool = True,
                    **fields) -> KernelFittedMetric:
    """A :class:`KernelFittedMetric` on the landmarks: ``A = L T^T`` for a map ``L`` of the features
    (``on_features=False``: ``L`` is ``A`` already), ``n_components`` rows (rows beyond those of ``L`` are
    zero), ``X_fit`` the landmark rows; ``fields`` go to the result (``n_iter``, ``loss``, ...)."""
    L = np.asarray(L, dtype=np.float64)
    A = np.zeros((n_components, lm.Z.shape[0]))
    k = min(n_components, L.shape[0])
    A[:k] = L[:k, :lm.T.shape[1]] @ lm.T.T if on_features else L[:k, :lm.Z.shape[0]]
    info = dict(info, n_landmarks=int(lm.Z.shape[0]), landmark_rank=int(lm.T.shape[1]), landmarks=lm.index)
    return KernelFittedMetric(L=A, X_fit=lm.Z, kernel=kernel, kernel_params=params, info=info, **fields)


#: eigenvalues of K below this fraction of the largest are treated as zero
_EIG_RTOL = 1e-10


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
