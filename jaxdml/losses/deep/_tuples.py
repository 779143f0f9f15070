"""Index tuples of a batch (what a miner returns and a loss takes): fixed size, with a mask.

A miner cannot return a variable number of pairs inside ``jax.jit``; it returns a fixed number of
slots and a boolean ``mask`` that says which slots hold a tuple. Indices are rows of the batch; with
references (``ref_emb``), anchors are rows of the batch and the other indices rows of the references.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

import numpy as np

from ._base import apply_map, check_distance, check_indices, check_labels, check_mask, dense
from ._refs import check_ref_batch, label_masks, ref_kwargs


class Pairs(NamedTuple):
    """Pairs of rows ``(anchor[t], other[t])``: positive (same class) or negative.

    Attributes
    ----------
    anchor, other : (P,) int32 row indices.
    positive : (P,) bool, True for a positive pair (same class), False for a negative one.
    mask : (P,) bool, False for an empty slot.
    """

    anchor: jax.Array
    other: jax.Array
    positive: jax.Array
    mask: jax.Array


class Triplets(NamedTuple):
    """Triplets of rows ``(anchor[t], positive[t], negative[t])``: ``positive`` shares the anchor's
    class, ``negative`` does not.

    Attributes
    ----------
    anchor, positive, negative : (T,) int32 row indices.
    mask : (T,) bool, False for an empty slot.
    """

    anchor: jax.Array
    positive: jax.Array
    negative: jax.Array
    mask: jax.Array


def grid(n: int, arity: int, n_ref=None):
    """Row indices of every ``arity``-tuple of ``n`` rows, first index slowest: ``arity`` arrays of
    length ``n ** arity``. With ``n_ref``, the first index runs over ``n`` query rows and the others over
    ``n_ref`` reference rows (``n * n_ref ** (arity - 1)`` tuples)."""
    shape = (n,) * arity if n_ref is None else (n,) + (n_ref,) * (arity - 1)
    ids = jnp.indices(shape, dtype=jnp.int32)
    return tuple(i.reshape(-1) for i in ids)


def all_pairs(labels, mask=None) -> Pairs:
    """Every ordered pair of distinct real rows, on the (B * B) grid: slot ``i * B + j`` is ``(i, j)``.

    Parameters
    ----------
    labels : (B,) int array
    mask : (B,) bool array, optional
        False for padded rows (default: every row is real).

    Returns
    -------
    Pairs
        ``positive`` marks same-label pairs; ``mask`` is False on the diagonal and for padded rows.
    """
    n = np.shape(labels)[0]
    y = check_labels(labels, n)
    valid = check_mask(mask, n)
    a, o = grid(n, 2)
    return Pairs(a, o, y[a] == y[o], (a != o) & valid[a] & valid[o])


def all_triplets(labels, mask=None) -> Triplets:
    """Every valid triplet of real rows on the (B * B * B) grid (anchor, positive, negative).

    A slot ``(a, p, n)`` holds a triplet when ``y[a] == y[p]``, ``a != p`` and ``y[n] != y[a]``.
    """
    n = np.shape(labels)[0]
    y = check_labels(labels, n)
    valid = check_mask(mask, n)
    a, p, q = grid(n, 3)
    ok = (y[a] == y[p]) & (a != p) & (y[q] != y[a]) & valid[a] & valid[p] & valid[q]
    return Triplets(a, p, q, ok)


def check_tuples(tuples, kinds, n: int, name: str, n_ref=None):
    """``tuples`` if it is one of ``kinds`` with 1-D fields of one length, else a clear error. Anchors index
    the ``n`` rows of the batch, the other indices its ``n_ref`` references (default: the batch)."""
    if not isinstance(tuples, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"{name} must be a {names} (from a miner or built by hand); got {type(tuples).__name__}.")
    fields = [jnp.asarray(f) for f in tuples]
    size = fields[0].shape
    for f, field in zip(fields, tuples._fields):
        if f.ndim != 1 or f.shape != size:
            raise ValueError(f"{name}.{field} must be a 1-D array like {name}.{tuples._fields[0]} "
                             f"(shape {size}); got shape {f.shape}.")
    index_fields = ("anchor", "other") if isinstance(tuples, Pairs) else ("anchor", "positive", "negative")
    checked = []
    for f, field in zip(fields, tuples._fields):
        if field not in index_fields:  # the flags (positive, mask): boolean or 0/1
            checked.append(check_mask(f, size[0], f"{name}.{field}"))
            continue
        if not jnp.issubdtype(f.dtype, jnp.integer):
            raise TypeError(f"{name}.{field} must hold integer row indices; got dtype {f.dtype}.")
        check_indices(f"{name}.{field}", f, n if field == "anchor" or n_ref is None else n_ref)
        checked.append(f)
    return type(tuples)(*checked)


def pair_weights(tuples, n: int, valid, dtype, rows=None):
    """Dense (n, n) float counts ``(positive, negative)`` of the pairs in ``tuples`` (a :class:`Pairs`,
    or a :class:`Triplets`, which gives the pairs ``(a, p)`` and ``(a, n)``), padded rows excluded.

    With ``rows`` ((n, R) bool: the (query, reference) pairs of real rows) the counts are (n, R) and a pair
    counts where ``rows`` holds. A pair listed twice counts twice; a pair-based loss sums over these weights.
    """
    if isinstance(tuples, Triplets):
        a = jnp.concatenate([tuples.anchor, tuples.anchor])
        o = jnp.concatenate([tuples.positive, tuples.negative])
        pos = jnp.concatenate([jnp.ones_like(tuples.mask), jnp.zeros_like(tuples.mask)])
        m = jnp.concatenate([tuples.mask, tuples.mask])
    else:
        a, o, pos, m = tuples.anchor, tuples.other, tuples.positive > 0, tuples.mask > 0
    m = m & (valid[a] & valid[o] if rows is None else rows[a, o])
    shape = (n, n) if rows is None else rows.shape
    w_pos = jnp.zeros(shape, dtype).at[a, o].add((m & pos).astype(dtype))
    w_neg = jnp.zeros(shape, dtype).at[a, o].add((m & ~pos).astype(dtype))
    return w_pos, w_neg


class PairBatch(NamedTuple):
    """A validated batch with its pair weights (see :func:`pair_batch`)."""

    V: jax.Array  # (B, R) distances or similarities (R = B without references)
    w_pos: jax.Array  # (B, R) weights of the positive pairs
    w_neg: jax.Array  # (B, R) weights of the negative pairs
    kind: str  # the distance's name
    y: jax.Array  # (B,) labels, or None
    valid: jax.Array  # (B,) bool, real rows
    Z: jax.Array  # (B, k) rows under L
    has_ref: bool = False  # references given (ref_emb): V pairs the batch with them
    R: jax.Array = None  # (R, k) reference rows under L (``Z`` without references)
    yr: jax.Array = None  # (R,) reference labels (``y`` without references), or None
    ok: jax.Array = None  # (B, R) bool: the pairs of the labels' pairs (see :class:`~._refs.RefBatch`)


def pair_batch(embeddings, labels, *, pairs, miner, distance, L, mask, ref_emb=None, ref_labels=None,
               ref_mask=None):
    """The validated batch of a pair-based loss, a :class:`PairBatch`.

    ``V`` is the dense (B, B) matrix of the chosen distance or similarity between the rows mapped by
    ``L`` (with references: the (B, R) matrix between the batch's rows and the references', see
    :mod:`jaxdml.losses.deep._refs`); ``w_pos``/``w_neg`` weigh its positive and negative pairs: every
    pair of real rows from the labels, or the pairs of ``pairs`` (a :class:`Pairs` or :class:`Triplets`),
    or of ``miner(embeddings, labels, mask=..., distance=..., L=...)`` (and ``ref_emb=``, ``ref_labels=``,
    ``ref_mask=`` with references).
    """
    kind = check_distance(distance)
    if pairs is not None and miner is not None:
        raise ValueError("give either pairs or a miner, not both.")
    b = check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask, labels_required=pairs is None)
    n = b.Z.shape[0]
    Zm = apply_map(b.Z, L)
    Rm = apply_map(b.R, L) if b.has_ref else Zm
    if miner is not None:
        pairs = miner(b.Z, b.y, mask=b.valid, distance=kind, L=L, **ref_kwargs(b))
    if pairs is None:
        pos, neg = label_masks(b)
        w_pos, w_neg = pos.astype(Zm.dtype), neg.astype(Zm.dtype)
    else:
        pairs = check_tuples(pairs, (Pairs, Triplets), n, "pairs", b.R.shape[0])
        w_pos, w_neg = pair_weights(pairs, n, b.valid, Zm.dtype, b.rows)
    V = dense(Zm, Rm, kind, jnp.any(b.rows, axis=0) if b.has_ref else b.valid)
    return PairBatch(V, w_pos, w_neg, kind, b.y, b.valid, Zm, b.has_ref, Rm, b.yr, b.ok)
