"""Batch samplers for deep metric learning: P classes x K rows per batch (host-side, NumPy).

A pair- or triplet-based loss learns nothing from a batch whose classes have one row each; the P x K
("M per class") sampler makes every batch hold ``p`` distinct classes with ``k`` rows of each. It
yields index arrays into the training set, for any training loop (plain JAX, flax, PyTorch data):

    sampler = PKSampler(y_train, p=16, k=4, seed=0)
    for epoch in range(10):
        for idx in sampler:               # (p * k,) int64 row indices, class by class
            loss = step(X_train[idx], y_train[idx])

Classes are visited in shuffled cycles (every class once before any class twice); within a class,
rows in shuffled cycles (every row once before any row twice). ``class_weights="size"`` draws classes
in proportion to their number of rows instead (every row as likely as any other), for data with many
classes of very different sizes. A class with fewer than ``k`` rows repeats its rows within a batch.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["PKSampler"]


class _Cycle:
    """Items in shuffled cycles: every item once before any item again."""

    def __init__(self, items: np.ndarray, rng: np.random.Generator):
        self.items, self.rng, self.order, self.pos = items, rng, np.empty(0, items.dtype), 0

    def take(self, m: int) -> np.ndarray:
        """``m`` items (``m <= len(items)``), all distinct: a take that crosses into a new cycle puts the
        items it already holds at the end of that cycle."""
        out = []
        while m > 0:
            if self.pos == len(self.order):
                order = self.rng.permutation(self.items)
                if out:
                    held = np.isin(order, np.concatenate(out))
                    order = np.concatenate([order[~held], order[held]])
                self.order, self.pos = order, 0
            step = min(m, len(self.order) - self.pos)
            out.append(self.order[self.pos:self.pos + step])
            self.pos += step
            m -= step
        return np.concatenate(out)


class PKSampler:
    """Batches of ``p`` classes x ``k`` rows (the "M per class" sampler of deep metric learning).

    Parameters
    ----------
    labels : (n,) array-like
        Class labels of the training rows (any type the estimators accept).
    p : int
        Classes per batch (at most the number of classes).
    k : int
        Rows per class in a batch (a class with fewer rows repeats its rows within the batch).
    n_batches : int or "cover", optional
        Batches per epoch (one ``for idx in sampler`` loop). Default ``ceil(n / (p k))``, about one
        pass over the rows; ``"cover"``: enough batches that every row is drawn at least once in the
        epoch (classes of very different sizes then repeat the small ones).
    class_weights : {"uniform", "size"}, default="uniform"
        How classes are chosen: in shuffled cycles, each equally often ("uniform", class-balanced), or
        at random in proportion to their sizes ("size").
    seed : int, optional
        The sampler's random generator (reproducible epochs; each epoch continues the stream).

    Attributes
    ----------
    classes_ : ndarray, the distinct labels; ``batch_size``: ``p * k``.

    Examples
    --------
    >>> import numpy as np
    >>> from jaxdml.losses.deep import PKSampler
    >>> y = np.repeat(np.arange(10), 7)
    >>> idx = next(iter(PKSampler(y, p=4, k=3, seed=0)))
    >>> idx.shape, len(set(y[idx]))
    ((12,), 4)
    """

    def __init__(self, labels, p: int, k: int, *, n_batches=None, class_weights="uniform", seed=None):
        y = np.asarray(labels)
        if y.ndim != 1 or y.size == 0:
            raise ValueError(f"PKSampler: labels must be a non-empty 1-D array; got shape {y.shape}.")
        try:
            self.classes_, codes = np.unique(y, return_inverse=True)
        except TypeError:
            raise TypeError(f"PKSampler: labels must be comparable values (class labels); got dtype {y.dtype}.") \
                from None
        for name, v in (("p", p), ("k", k)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"PKSampler: {name} must be a positive int; got {v!r}.")
        if p > len(self.classes_):
            raise ValueError(f"PKSampler: p={p} classes per batch, but the labels hold {len(self.classes_)} classes.")
        if class_weights not in ("uniform", "size"):
            raise ValueError(f"PKSampler: class_weights must be 'uniform' or 'size'; got {class_weights!r}.")
        n = y.size
        self.p, self.k, self.class_weights = int(p), int(k), class_weights
        self._members = [np.flatnonzero(codes == c) for c in range(len(self.classes_))]
        self._sizes = np.array([len(m) for m in self._members], dtype=np.float64)
        if n_batches is None:
            n_batches = -(-n // (self.p * self.k))
        elif isinstance(n_batches, str) and n_batches == "cover":
            # every row drawn once: the largest class needs ceil(n_c / k) visits; classes are visited
            # p per batch, each equally often (uniform) or in proportion to size (then ~ n / (p k))
            visits = np.ceil(self._sizes / self.k).max()
            n_batches = int(np.ceil(visits * len(self.classes_) / self.p)) if class_weights == "uniform" else None
            if n_batches is None:
                raise ValueError("PKSampler: n_batches='cover' needs class_weights='uniform' (sampling by size "
                                 "guarantees no coverage).")
        elif isinstance(n_batches, bool) or not isinstance(n_batches, numbers.Integral) or n_batches < 1:
            raise ValueError(f"PKSampler: n_batches must be a positive int, 'cover' or None; got {n_batches!r}.")
        self.n_batches = int(n_batches)
        self._rng = np.random.default_rng(seed)
        self._classes = _Cycle(np.arange(len(self.classes_)), self._rng)
        self._rows = [_Cycle(m, self._rng) for m in self._members]

    @property
    def batch_size(self) -> int:
        """Rows per batch: ``p * k``."""
        return self.p * self.k

    def __len__(self) -> int:
        return self.n_batches

    def _pick_classes(self) -> np.ndarray:
        if self.class_weights == "size":
            return self._rng.choice(len(self.classes_), size=self.p, replace=False, p=self._sizes / self._sizes.sum())
        return self._classes.take(self.p)

    def batch(self) -> np.ndarray:
        """One batch: ``(p * k,)`` int64 row indices, ``k`` per class, class by class."""
        out = []
        for c in self._pick_classes():
            members = self._members[c]
            if len(members) >= self.k:
                out.append(self._rows[c].take(self.k))
            else:  # too few rows: all of them, then repeats
                out.append(np.concatenate([members, self._rng.choice(members, self.k - len(members))]))
        return np.concatenate(out).astype(np.int64)

    def __iter__(self):
        for _ in range(self.n_batches):
            yield self.batch()
