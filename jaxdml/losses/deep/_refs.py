"""A batch of queries and its references (``ref_emb`` / ``ref_labels`` / ``ref_mask``): the pairs a loss sees.

Without references a loss pairs the rows of its batch with each other, never a row with itself. With
``ref_emb`` (R, d) and ``ref_labels`` (R,) it pairs every query row ``i`` of the batch with every reference
row ``j``: (query ``i``, reference ``j``) is positive when their labels are equal, negative otherwise, and no
pair is left out as a "self-pair" (the references are other rows). ``ref_mask`` is (R,), False for padded or
empty reference rows (a memory bank's unfilled slots), or (B, R), False for the (query, reference) pairs that
do not exist: the references of :func:`~jaxdml.losses.deep.memory_loss` hold the queries themselves, and a
query against its own copy is not a pair.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._base import _concrete, check_batch, check_mask

REF_NAMES = ("ref_emb", "ref_labels", "ref_mask")


class RefBatch(NamedTuple):
    """A validated batch and its references (see :func:`check_ref_batch`)."""

    Z: jax.Array  # (B, d) query rows (padded rows zeroed)
    y: jax.Array  # (B,) query labels, or None
    valid: jax.Array  # (B,) bool, real query rows
    R: jax.Array  # (R, d) reference rows (Z itself without references)
    yr: jax.Array  # (R,) reference labels, or None
    rows: jax.Array  # (B, R) bool: pairs of a real query and a real reference (given tuples are kept to these)
    ok: jax.Array  # (B, R) bool: the pairs of the labels' pairs: ``rows`` less the self-pairs (the diagonal
    #                without references)
    has_ref: bool  # whether references were given


def _joint_codes(labels, ref_labels):
    """Concrete labels of another type than integers (strings, floats, booleans) encoded as one set of class
    codes over queries and references, so that equal labels get equal codes on both sides."""
    if labels is None or ref_labels is None or not (_concrete(labels) and _concrete(ref_labels)):
        return labels, ref_labels
    try:
        a, b = np.asarray(labels), np.asarray(ref_labels)
    except (TypeError, ValueError):
        return labels, ref_labels  # check_batch names the problem
    if a.ndim != 1 or b.ndim != 1 or (a.dtype.kind in "iu" and b.dtype.kind in "iu"):
        return labels, ref_labels
    for name, v in (("labels", a), ("ref_labels", b)):
        if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            raise ValueError(f"{name} contain NaN or infinity.")
    try:
        codes = np.unique(np.concatenate([a, b]), return_inverse=True)[1].reshape(-1).astype(np.int32)
    except TypeError:
        raise TypeError("labels and ref_labels must be comparable values of one kind (class labels); got dtypes "
                        f"{a.dtype} and {b.dtype}.") from None
    return codes[: a.size], codes[a.size:]


def check_ref_batch(embeddings, labels, mask, ref_emb, ref_labels, ref_mask, *, labels_required=True) -> RefBatch:
    """Validate a batch and its optional references (see the module docstring) into a :class:`RefBatch`."""
    if ref_emb is None:
        if ref_labels is not None or ref_mask is not None:
            raise ValueError("ref_labels and ref_mask need ref_emb (the reference embeddings).")
        Z, y, valid = check_batch(embeddings, labels, mask, labels_required=labels_required)
        rows = valid[:, None] & valid[None, :]
        return RefBatch(Z, y, valid, Z, y, rows, rows & ~jnp.eye(Z.shape[0], dtype=bool), False)
    labels, ref_labels = _joint_codes(labels, ref_labels)
    Z, y, valid = check_batch(embeddings, labels, mask, labels_required=labels_required)
    m = ref_mask
    two_d = m is not None and np.ndim(m) == 2
    R, yr, rvalid = check_batch(ref_emb, ref_labels, None if two_d else m, labels_required=y is not None,
                                names=REF_NAMES)
    if R.shape[1] != Z.shape[1]:
        raise ValueError(f"ref_emb must have the embeddings' {Z.shape[1]} columns; got shape {R.shape}.")
    n, n_ref = Z.shape[0], R.shape[0]
    pair_ok = jnp.ones((n, n_ref), bool)
    if two_d:
        if np.shape(m) != (n, n_ref):
            raise ValueError(f"a 2-D ref_mask must have shape (batch, references) = ({n}, {n_ref}), one entry per "
                             f"(query, reference) pair; got shape {np.shape(m)}.")
        flat = np.reshape(np.asarray(m), -1) if _concrete(m) and not isinstance(m, jax.Array) else jnp.reshape(m, -1)
        pair_ok = check_mask(flat, n * n_ref, "ref_mask").reshape(n, n_ref)
        rvalid = jnp.any(pair_ok, axis=0)
        R = jnp.where(rvalid[:, None], R, 0.0)
    rows = valid[:, None] & rvalid[None, :] & pair_ok
    return RefBatch(Z, y, valid, R, yr, rows, rows, True)


def ref_kwargs(b: RefBatch) -> dict:
    """The keyword arguments that hand a batch's references on to a miner (none without references)."""
    return {"ref_emb": b.R, "ref_labels": b.yr, "ref_mask": b.rows} if b.has_ref else {}


def label_masks(b: RefBatch):
    """(B, R) bool ``(positive, negative)``: the (query, reference) pairs of equal / different labels."""
    same = b.y[:, None] == b.yr[None, :]
    return same & b.ok, ~same & b.ok
