"""Constraints from (partial) labels, with metric-learn's API: pairs, chunklets, k-NN triplets.

Memory is linear in the number of samples plus the size of the output: pairs are sampled
without enumerating all N^2 of them (all pairs of a kind are enumerated only when at least half
of them are asked for, so the enumeration is at most twice the output), chunklets are drawn by
:func:`jaxdml.methods.weak._rca.chunks_from_labels`, and the k-NN searches are exact and blockwise
(:func:`jaxdml.problems.target_neighbors` / :func:`jaxdml.problems.impostor_candidates`).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._warnings import warn as _warn
from ..._validation import check_class_labels, labelled
from ...problems import impostor_candidates, target_neighbors
from ._rca import chunks_from_labels

__all__ = ["Constraints"]

#: rounds of rejection sampling before giving up on more distinct pairs
_MAX_ROUNDS = 20


def _positive_int(value, name, owner="Constraints"):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int; got {value!r}.")
    return int(value)


class Constraints:
    """Constraints built from labels, with metric-learn's methods.

    Parameters
    ----------
    partial_labels : array-like of shape (n_samples,)
        Class labels. Integer labels below 0 (e.g. -1) mark unlabelled samples, which take part in
        no constraint (metric-learn's convention); string labels are all known.

    Attributes
    ----------
    partial_labels : ndarray of shape (n_samples,)
    known_ : ndarray of int, the indices of the labelled samples.
    codes_ : ndarray of int, class codes of the labelled samples (aligned with ``known_``).

    Notes
    -----
    Every method returns indices into the full ``partial_labels`` array (unlabelled samples
    included); metric-learn's ``generate_knntriplets`` returns indices into the labelled subset.
    Pairs are distinct as unordered pairs.

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> c = jaxdml.Constraints(np.repeat([0, 1, 2], 10))
    >>> a, b, c_, d = c.positive_negative_pairs(20, random_state=0)
    >>> len(a), len(c_)
    (20, 20)
    """

    def __init__(self, partial_labels):
        y = np.asarray(partial_labels)
        if y.ndim != 1 or y.size == 0:
            raise ValueError(f"Constraints: partial_labels must be a non-empty 1-D array; got shape {y.shape}.")
        known = labelled(y)
        if not known.any():
            raise ValueError("Constraints: every label is negative (unlabelled); no constraint can be formed.")
        check_class_labels(y[known], "Constraints")
        self.partial_labels = y
        self.known_ = np.flatnonzero(known)
        _, self.codes_ = np.unique(y[known], return_inverse=True)

    # ------------------------------------------------------------------ pairs
    def _pairs(self, n_constraints, same, rng):
        codes = self.codes_
        n = codes.size
        counts = np.bincount(codes)
        if same:
            available = int(np.sum(counts * (counts - 1) // 2))
        else:
            available = int((n * (n - 1) // 2) - np.sum(counts * (counts - 1) // 2))
        kind = "positive" if same else "negative"
        if n_constraints >= available:
            if n_constraints > available:
                _warn(f"Only generated {available} {kind} constraints (requested {n_constraints}): the labels "
                      f"provide no more distinct {'same' if same else 'different'}-label pairs.", UserWarning)
            i, j = self._all_pairs(same)
            p = rng.permutation(i.size)
            return i[p], j[p]
        if 2 * n_constraints >= available:  # enumeration costs at most twice the output
            i, j = self._all_pairs(same)
            p = rng.choice(i.size, size=n_constraints, replace=False)
            return i[p], j[p]
        keys = np.zeros(0, np.int64)
        first = np.zeros(0, np.int64)
        ii, jj = np.zeros(0, np.int64), np.zeros(0, np.int64)
        for _ in range(_MAX_ROUNDS):
            need = n_constraints - keys.size
            i, j = self._draw(same, need + need // 4 + 16, rng)
            ii, jj = np.concatenate([ii, i]), np.concatenate([jj, j])
            allkeys = np.minimum(ii, jj) * n + np.maximum(ii, jj)
            keys, first = np.unique(allkeys, return_index=True)
            if keys.size >= n_constraints:
                break
        first = np.sort(first)[:n_constraints]
        if first.size < n_constraints:
            _warn(f"Only generated {first.size} {kind} constraints (requested {n_constraints}).", UserWarning)
        return ii[first], jj[first]

    def _draw(self, same, m, rng):
        """``m`` pairs drawn uniformly (as unordered pairs) among same- or different-label pairs."""
        codes = self.codes_
        n = codes.size
        counts = np.bincount(codes)
        order = np.argsort(codes, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        if same:
            w = counts * (counts - 1.0)
            c = rng.choice(counts.size, size=m, p=w / w.sum())
            i = rng.randint(0, counts[c])
            j = (i + 1 + rng.randint(0, counts[c] - 1)) % counts[c]
            return order[starts[c] + i], order[starts[c] + j]
        wi = (n - counts[codes]).astype(np.float64)
        i = rng.choice(n, size=m, p=wi / wi.sum())
        ci = codes[i]
        k = rng.randint(0, n - counts[ci])  # position among the rows outside class ci
        j = order[np.where(k < starts[ci], k, k + counts[ci])]
        return i, j

    def _all_pairs(self, same):
        codes = self.codes_
        out_i, out_j = [], []
        for c in range(codes.max() + 1):
            members = np.flatnonzero(codes == c)
            if same:
                a, b = np.triu_indices(members.size, k=1)
                out_i.append(members[a]), out_j.append(members[b])
            else:
                later = np.flatnonzero(codes > c)
                out_i.append(np.repeat(members, later.size)), out_j.append(np.tile(later, members.size))
        return np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64)

    def positive_negative_pairs(self, n_constraints, same_length=False, random_state=None):
        """``n_constraints`` similar pairs ``(a, b)`` and dissimilar pairs ``(c, d)``.

        Pairs are drawn uniformly without replacement among the distinct unordered pairs of
        labelled samples with equal (different) labels. When the labels provide fewer, a
        ``UserWarning`` says so and all of them are returned. ``same_length=True`` truncates the
        longer set to the length of the shorter. Deterministic for a given ``random_state``.

        Returns
        -------
        a, b, c, d : ndarrays of int64, indices into ``partial_labels``.
        """
        n_constraints = _positive_int(n_constraints, "n_constraints")
        rng = check_random_state(random_state)
        if np.unique(self.codes_).size < 2:
            raise ValueError("Constraints: the labelled samples all have one class; no negative pair can be formed.")
        a, b = self._pairs(n_constraints, True, rng)
        c, d = self._pairs(n_constraints, False, rng)
        if same_length and a.size != c.size:
            m = min(a.size, c.size)
            a, b, c, d = a[:m], b[:m], c[:m], d[:m]
        k = self.known_
        return k[a], k[b], k[c], k[d]

    # ------------------------------------------------------------------ chunklets
    def chunks(self, n_chunks=100, chunk_size=2, random_state=None):
        """Chunk ids per sample: ``n_chunks`` chunklets of ``chunk_size`` same-label samples (-1: none).

        Each sample is in at most one chunklet; unlabelled samples are in none. Raises a
        ``ValueError`` (as metric-learn) when the classes cannot provide ``n_chunks`` chunklets,
        naming the most they can. (:class:`jaxdml.RCA` fitted from labels instead warns and uses
        fewer.)
        """
        n_chunks = _positive_int(n_chunks, "n_chunks")
        chunk_size = _positive_int(chunk_size, "chunk_size")
        if chunk_size < 2:
            raise ValueError("Constraints: chunk_size must be at least 2 (a chunklet relates two or more samples).")
        most = int(np.sum(np.bincount(self.codes_) // chunk_size))
        if most < n_chunks:
            raise ValueError(f"Not enough possible chunks of {chunk_size} elements in each class to form expected "
                             f"{n_chunks} chunks - maximum number of chunks is {most}.")
        out = -np.ones(self.partial_labels.size, dtype=np.int64)
        out[self.known_] = chunks_from_labels(self.codes_, n_chunks, chunk_size, random_state)
        return out

    # ------------------------------------------------------------------ triplets
    def generate_knntriplets(self, X, k_genuine, k_impostor):
        """Triplets ``(anchor, genuine, impostor)`` from nearest neighbours (Euclidean).

        For every labelled sample: each of its ``k_genuine`` nearest same-class samples with each
        of its ``k_impostor`` nearest other-class samples (``n * k_genuine * k_impostor``
        triplets; anchor by anchor, nearest first). A class too small for ``k_genuine`` genuine
        (or ``k_impostor`` impostor) neighbours warns and uses as many as it has, as metric-learn
        does. The searches are exact and memory-bounded (never all N^2 distances at once).

        Returns
        -------
        triplets : ndarray of int64 of shape (n_triplets, 3), indices into ``X``.
        """
        k_genuine = _positive_int(k_genuine, "k_genuine")
        k_impostor = _positive_int(k_impostor, "k_impostor")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != self.partial_labels.size:
            raise ValueError(f"Constraints.generate_knntriplets: X must be 2-D with one row per label "
                             f"({self.partial_labels.size}); got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("Constraints.generate_knntriplets: X contains NaN or infinity.")
        codes, Xk = self.codes_.astype(np.int32), X[self.known_]
        n, counts = codes.size, np.bincount(self.codes_)
        labels = np.unique(self.partial_labels[self.known_])
        for c, nc in enumerate(counts):
            if nc - 1 < k_genuine:
                _warn(f"The class {labels[c]!r} has {nc} elements, which is not sufficient to generate "
                      f"{k_genuine} genuine neighbors; using {nc - 1}.", UserWarning)
            if n - nc < k_impostor:
                _warn(f"The class {labels[c]!r} has {n - nc} elements of other classes, which is not sufficient "
                      f"to generate {k_impostor} impostor neighbors; using {n - nc}.", UserWarning)
        gen, gmask = target_neighbors(Xk, codes, k_genuine, warn=False)
        imp, imask = impostor_candidates(Xk, codes, k_impostor)
        a = np.broadcast_to(np.arange(n)[:, None, None], (n, k_genuine, k_impostor))
        g = np.broadcast_to(np.asarray(gen)[:, :, None], a.shape)
        i = np.broadcast_to(np.asarray(imp)[:, None, :], a.shape)
        ok = (np.asarray(gmask)[:, :, None] > 0) & (np.asarray(imask)[:, None, :] > 0)
        T = np.stack([a[ok], g[ok], i[ok]], axis=1)
        if T.shape[0] == 0:
            raise ValueError("Constraints.generate_knntriplets: no triplet can be formed (every class has a single "
                             "labelled sample, or there is a single class).")
        return self.known_[T].astype(np.int64)
