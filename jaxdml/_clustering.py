"""k-means on the device (k-means++ seeding, Lloyd iterations) and the mutual information of two labelings.

The clustering scores of :mod:`jaxdml.retrieval` (NMI, AMI) cluster an embedding with :func:`kmeans`, a
``jax.jit`` program: k-means++ seeding (Arthur & Vassilvitskii, SODA 2007: each next centre drawn with
probability proportional to the squared distance to the nearest centre chosen so far), then Lloyd's
iterations (assign every row to its nearest centre, move each centre to the mean of its rows) until no
centre moves by more than ``tol`` (relative to the data's variance) or ``max_iter``. ``n_init``
restarts run as one vmapped program; the one of least inertia (the sum of squared distances to the
assigned centres) wins. Distances use the GEMM identity on rows centred on the data's mean.

:func:`mutual_info_scores` computes NMI (arithmetic normalisation) and AMI (Vinh, Epps, Bailey, JMLR 2010,
the expected mutual information of the hypergeometric model) from the contingency table, in NumPy.
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln

__all__ = ["kmeans", "mutual_info_scores"]


def _sq_dists(X, C):
    return jnp.maximum(jnp.sum(X * X, 1)[:, None] + jnp.sum(C * C, 1)[None, :] - 2.0 * X @ C.T, 0.0)


def _plus_plus(key, X, k):
    """k-means++ seeding: (k, d) centres."""
    n = X.shape[0]
    first = jax.random.randint(key, (), 0, n)
    C = jnp.zeros((k, X.shape[1]), X.dtype).at[0].set(X[first])
    d2 = jnp.sum((X - X[first]) ** 2, axis=1)

    def pick(carry, i):
        C, d2, key = carry
        key, sub = jax.random.split(key)
        total = jnp.sum(d2)
        # every row already a centre (fewer distinct rows than k): draw uniformly
        p = jnp.where(total > 0, d2 / jnp.where(total > 0, total, 1.0), 1.0 / n)
        j = jax.random.choice(sub, n, p=p)
        C = C.at[i].set(X[j])
        return (C, jnp.minimum(d2, jnp.sum((X - X[j]) ** 2, axis=1)), key), None

    (C, _, _), _ = jax.lax.scan(pick, (C, d2, key), jnp.arange(1, k))
    return C


def _lloyd(X, C, max_iter, tol):
    """Lloyd's iterations from ``C``: (centres, labels, inertia). An empty cluster keeps its centre."""
    k = C.shape[0]

    def assign(C):
        d = _sq_dists(X, C)
        return jnp.argmin(d, axis=1), jnp.min(d, axis=1)

    def body(state):
        C, _, it = state
        labels, _ = assign(C)
        one_hot = jax.nn.one_hot(labels, k, dtype=X.dtype)
        counts = jnp.sum(one_hot, axis=0)
        means = (one_hot.T @ X) / jnp.maximum(counts, 1.0)[:, None]
        new = jnp.where(counts[:, None] > 0, means, C)
        return new, jnp.sum((new - C) ** 2), it + 1

    def go_on(state):
        _, shift, it = state
        return (it < max_iter) & (shift > tol)

    C, _, _ = jax.lax.while_loop(go_on, body, (C, jnp.asarray(jnp.inf, X.dtype), 0))
    labels, d = assign(C)
    return C, labels, jnp.sum(d)


@functools.partial(jax.jit, static_argnames=("k", "n_init", "max_iter"))
def _kmeans(X, key, *, k, n_init, max_iter, tol):
    X = X - jnp.mean(X, axis=0)
    tol = tol * jnp.mean(jnp.var(X, axis=0))  # as scikit-learn: relative to the data's variance

    def one(key):
        return _lloyd(X, _plus_plus(key, X, k), max_iter, tol)

    _, labels, inertia = jax.vmap(one)(jax.random.split(key, n_init))
    best = jnp.argmin(inertia)
    return labels[best], inertia[best]


def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{name} must be a positive int; got {v!r}.")
    return int(v)


def kmeans(X, n_clusters: int, *, n_init: int = 10, max_iter: int = 300, tol: float = 1e-4, random_state=0):
    """k-means++ / Lloyd on the device: ``(labels, inertia)`` of the best of ``n_init`` runs.

    Parameters
    ----------
    X : (n, d) array
    n_clusters : int
        In ``[1, n]``.
    n_init : int, default=10
    max_iter : int, default=300
    tol : float, default=1e-4
        Stop when the centres' squared shift is below ``tol`` times the mean variance of the columns.
    random_state : int, default=0

    Returns
    -------
    labels : (n,) int NumPy array
    inertia : float
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must be a non-empty 2-D array; got shape {X.shape}.")
    k = _positive("n_clusters", n_clusters)
    if k > X.shape[0]:
        raise ValueError(f"n_clusters must be between 1 and the number of rows ({X.shape[0]}); got {k}.")
    if not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol must be a non-negative number; got {tol!r}.")
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(f"random_state must be an int seed; got {random_state!r}.")
    labels, inertia = _kmeans(jnp.asarray(X, jnp.result_type(float)), jax.random.key(int(random_state)), k=k,
                              n_init=_positive("n_init", n_init), max_iter=_positive("max_iter", max_iter),
                              tol=float(tol))
    return np.asarray(labels), float(inertia)


def _entropy(counts):
    p = counts[counts > 0] / counts.sum()
    return float(-np.sum(p * np.log(p)))


def _expected_mutual_info(a, b, n):
    """E[MI] under the hypergeometric model of random labelings with the marginals ``a``, ``b`` (Vinh et al.
    2010, Eq. 24a), summed over every cell and every feasible count ``nij``."""
    total = 0.0
    log_fact = gammaln(np.arange(n + 1) + 1.0)  # log k!
    for ai in a:
        lo = np.maximum(1, ai + b - n)
        hi = np.minimum(ai, b)
        for bj, l, h in zip(b, lo, hi):
            if l > h:
                continue
            nij = np.arange(l, h + 1)
            log_p = (log_fact[ai] + log_fact[bj] + log_fact[n - ai] + log_fact[n - bj] - log_fact[n]
                     - log_fact[nij] - log_fact[ai - nij] - log_fact[bj - nij] - log_fact[n - ai - bj + nij])
            total += float(np.sum(nij / n * np.log(n * nij / (ai * bj)) * np.exp(log_p)))
    return total


def mutual_info_scores(labels_true, labels_pred) -> dict:
    """``nmi`` (MI over the arithmetic mean of the entropies) and ``ami`` (adjusted for chance, arithmetic
    normalisation) of two labelings; both 1.0 when the labelings are one partition (a single cluster
    included, as scikit-learn)."""
    _, t = np.unique(np.asarray(labels_true), return_inverse=True)
    _, p = np.unique(np.asarray(labels_pred), return_inverse=True)
    t, p = t.reshape(-1), p.reshape(-1)
    n = t.size
    table = np.zeros((t.max() + 1, p.max() + 1))
    np.add.at(table, (t, p), 1.0)
    a, b = table.sum(1), table.sum(0)
    if a.size == b.size == 1 or a.size == b.size == n:  # one partition either way: identical labelings
        return {"nmi": 1.0, "ami": 1.0}
    nz = table > 0
    mi = float(np.sum(table[nz] / n * np.log(n * table[nz] / np.outer(a, b)[nz])))
    h_t, h_p = _entropy(a), _entropy(b)
    mean_h = 0.5 * (h_t + h_p)
    nmi = mi / mean_h if mean_h > 0 else 1.0
    emi = _expected_mutual_info(a.astype(int), b.astype(int), n)
    denom = mean_h - emi
    denom = min(denom, -np.finfo(float).eps) if denom < 0 else max(denom, np.finfo(float).eps)
    return {"nmi": float(max(nmi, 0.0)), "ami": float((mi - emi) / denom)}
