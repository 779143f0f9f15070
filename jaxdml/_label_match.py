"""Label comparisons of the retrieval metrics (:mod:`jaxdml.retrieval`): equal labels, multi-label rows that
share a label, or a user's function; and the count of the references that match each query, on the device."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np


def _as_labels(name, y, n):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array with one label per row ({n}); got shape {y.shape}.")
    return y


def _equal_codes(a, b):
    """The default comparison: equal class codes (label rows of one column)."""
    return a[..., 0] == b[..., 0]


def _share_a_label(a, b):
    """``"multilabel"``: 0/1 label rows that have a label in common."""
    return jnp.any((a > 0) & (b > 0), axis=-1)


@dataclasses.dataclass(frozen=True)
class _OnLabels:
    """A user's comparison of 1-D labels, called on the label rows' single column (hashable: a static
    argument of the jitted search)."""

    fn: object

    def __call__(self, a, b):
        return self.fn(a[..., 0], b[..., 0])


def _label_rows(query_labels, reference_labels, n_q, n_r, label_comparison):
    """``(qlab, rlab, match, qc, rc)``: (n, m) label rows for the device, the comparison ``match(query_rows,
    reference_rows) -> bool`` (broadcasting over leading axes), and 1-D class codes of queries and references
    (None for label rows of several columns: no classes)."""
    if label_comparison is None:
        yq = _as_labels("query_labels", query_labels, n_q)
        yr = _as_labels("reference_labels", reference_labels, n_r)
        codes = np.unique(np.concatenate([yq, yr]), return_inverse=True)[1].astype(np.int32).reshape(-1)
        qc, rc = codes[:n_q], codes[n_q:]
        return qc[:, None], rc[:, None], _equal_codes, qc, rc
    if not (label_comparison == "multilabel" or callable(label_comparison)):
        raise ValueError("label_comparison must be None (equal labels), 'multilabel' (0/1 label matrices, a match "
                         f"shares a label) or a function of two label arrays; got {label_comparison!r}.")
    rows = []
    for name, y, n in (("query_labels", query_labels, n_q), ("reference_labels", reference_labels, n_r)):
        y = np.asarray(y)
        if y.ndim not in (1, 2) or y.shape[0] != n or y.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be a numeric (n, n_labels) array (or 1-D with a comparison function), "
                             f"one row per row ({n}); got shape {y.shape}, dtype {y.dtype}.")
        if label_comparison == "multilabel" and (y.ndim != 2 or np.any((y != 0) & (y != 1))):
            raise ValueError(f"{name} must be a 0/1 matrix (one column per label) with label_comparison="
                             f"'multilabel'; got shape {y.shape}.")
        rows.append(y)
    if rows[0].ndim != rows[1].ndim or rows[0].shape[1:] != rows[1].shape[1:]:
        raise ValueError(f"query_labels and reference_labels must have the same columns; got shapes "
                         f"{rows[0].shape} and {rows[1].shape}.")
    if label_comparison == "multilabel":
        return rows[0].astype(np.int32), rows[1].astype(np.int32), _share_a_label, None, None
    dtype = np.result_type(rows[0].dtype, rows[1].dtype)
    qlab, rlab = (y.astype(dtype).reshape(y.shape[0], -1) for y in rows)
    match = _OnLabels(label_comparison) if rows[0].ndim == 1 else label_comparison
    try:
        probe = np.asarray(match(jnp.asarray(qlab[:1])[:, None], jnp.asarray(rlab[:2])[None]))
    except Exception as exc:  # any failure of the user's function is reported with its cause
        raise TypeError(f"label_comparison failed on label arrays ({type(exc).__name__}: {exc}); it must take "
                        "(query labels, reference labels) jax arrays that broadcast and return booleans.") from exc
    if probe.shape != (1, min(2, n_r)) or probe.dtype != bool:
        raise TypeError("label_comparison must return a boolean array of the broadcast shape of its arguments' "
                        f"rows; got {probe.dtype} of shape {probe.shape} for (1, {min(2, n_r)}) pairs.")
    if rows[0].ndim == 2:
        return qlab, rlab, match, None, None
    codes = np.unique(np.concatenate(rows), return_inverse=True)[1].astype(np.int32).reshape(-1)
    return qlab, rlab, match, codes[:n_q], codes[n_q:]


@functools.partial(jax.jit, static_argnames=("q_block", "r_chunk", "same", "match"))
def _count_matches(qc, rc, r_valid, self_index, *, q_block, r_chunk, same, match):
    """Per query, the number of references that match it (``R``), itself excluded: query blocks against
    reference chunks, O(block x chunk) memory."""

    def one_block(rows):
        q = qc[rows][:, None]

        def add(total, c):
            start = c * r_chunk
            ok = match(q, jax.lax.dynamic_slice_in_dim(rc, start, r_chunk)[None])
            ok = ok & jax.lax.dynamic_slice_in_dim(r_valid, start, r_chunk)[None, :]
            if same:
                ok = ok & (start + jnp.arange(r_chunk, dtype=jnp.int32)[None, :] != self_index[rows][:, None])
            return total + jnp.sum(ok, axis=1, dtype=jnp.int32), None

        total, _ = jax.lax.scan(add, jnp.zeros(rows.shape[0], jnp.int32), jnp.arange(rc.shape[0] // r_chunk))
        return total

    blocks = jnp.arange(qc.shape[0], dtype=jnp.int32).reshape(-1, q_block)
    return jax.lax.map(one_block, blocks).reshape(-1)
