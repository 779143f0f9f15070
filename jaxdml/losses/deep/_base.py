"""Shared pieces of the deep metric learning losses: input checks, distances, masks, reductions.

Every loss and miner of :mod:`jaxdml.losses.deep` is a pure function of a batch ``(embeddings,
labels)``. The checks here are static (shapes, dtypes, names, Python-number hyper-parameters) and
run while a function is traced, so bad input fails with a ``ValueError``/``TypeError`` that names
the problem, inside ``jax.jit`` too, and costs nothing at run time.

Distances and similarities (the ``distance=`` argument):

================  =====================================================  ==========
name              value for rows ``a``, ``b``                            kind
================  =====================================================  ==========
``euclidean``     :math:`\\|a - b\\|`                                     distance
``sq_euclidean``  :math:`\\|a - b\\|^2`                                   distance
``cosine``        :math:`a^\\top b / (\\|a\\| \\|b\\|)`                     similarity
``dot``           :math:`a^\\top b`                                        similarity
================  =====================================================  ==========

With ``L`` (a learned linear map, (k, d)) the rows are mapped first, ``a -> L a``: ``euclidean``
is then the Mahalanobis distance :math:`\\sqrt{(a-b)^\\top L^\\top L (a-b)}`, and gradients reach
``L``. Dense (batch x batch) distances use the GEMM identity of :func:`jaxdml.linalg.pairwise_sq_dists`;
distances of gathered row pairs (mined tuples) use the differences themselves. Norms are safe: the
gradient of a zero distance or of a zero vector's norm is 0, never NaN.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from ... import linalg

DISTANCES = ("euclidean", "sq_euclidean", "cosine", "dot")
SIMILARITIES = frozenset({"cosine", "dot"})
REDUCTIONS = ("mean", "sum", "none", "avg_non_zero")


# ----------------------------------------------------------------------------------- input checks

def check_choice(name: str, value, options) -> str:
    """``value`` if it is one of ``options``, else a ``ValueError`` listing them."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(repr(o) for o in options)}; got {value!r}.")
    return value


def check_distance(distance) -> str:
    return check_choice("distance", distance, DISTANCES)


def check_reduction(reduction):
    """A reduction's name, or a reducer: a callable ``(values, weights) -> scalar`` over a loss's terms
    (:mod:`jaxdml.losses.deep._reducers`)."""
    if callable(reduction):
        return reduction
    return check_choice("reduction", reduction, REDUCTIONS)


def is_similarity(distance: str) -> bool:
    """True for the similarities (``cosine``, ``dot``: larger means closer)."""
    return check_distance(distance) in SIMILARITIES


def check_real(name: str, value, *, low=None, strict=True, high=None, per_class=False):
    """Check a hyper-parameter given as a Python or NumPy number, or a 0-d array (a traced value, inside
    ``jax.jit`` or ``grad``, passes unchecked). An array of values is an error, except for a per-class
    parameter (``per_class``: margin_loss's ``beta``), whose values are checked against the same range."""
    if isinstance(value, jax.core.Tracer):
        return value
    if isinstance(value, (jax.Array, np.ndarray, list, tuple)) and np.ndim(value) > 0:
        if not per_class:
            raise TypeError(f"{name} must be a single real number; got an array of shape {np.shape(value)}.")
        for v in np.ravel(np.asarray(value)):
            check_real(name, v, low=low, strict=strict, high=high)
        return value
    if isinstance(value, (jax.Array, np.ndarray)):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}.")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value!r}.")
    if low is not None and (value <= low if strict else value < low):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {low:g}; got {value!r}.")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high:g}; got {value!r}.")
    return value


def _concrete(x) -> bool:
    """True for a value known now (not traced inside ``jax.jit``/``grad``): its contents can be checked."""
    return not isinstance(x, jax.core.Tracer)


def _host(name, x):
    """``x`` as a NumPy array, or a clear error naming ``name`` when it is not an array of values."""
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array; got {type(x).__name__} ({exc}).") from None


def check_labels(labels, n: int, *, encode: bool = True, name: str = "labels"):
    """(n,) integer labels. Concrete labels of any type an estimator accepts (strings, booleans,
    whole-number floats, objects) are encoded as class codes when ``encode`` (equal labels, equal
    codes); without ``encode`` (labels that index class parameters) they must be integers. Traced
    labels must be integers (inside ``jax.jit`` nothing else is checked)."""
    if _concrete(labels) and not isinstance(labels, jax.Array):
        y = _host(name, labels)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"{name} must be a 1-D array with one label per row of embeddings ({n}); got shape "
                             f"{y.shape}.")
        if y.dtype.kind not in "iu":
            if not encode:
                raise TypeError(f"{name} must be integer class indices (they index the class parameters); got dtype "
                                f"{y.dtype}.")
            if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
                raise ValueError(f"{name} contain NaN or infinity.")
            try:
                y = np.unique(y, return_inverse=True)[1].reshape(-1)
            except TypeError:
                raise TypeError(f"{name} must be comparable values (class labels); got dtype {y.dtype}.") from None
        return jnp.asarray(y.astype(np.int32))
    y = jnp.asarray(labels)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array with one label per row of embeddings ({n}); got shape "
                         f"{y.shape}.")
    if not jnp.issubdtype(y.dtype, jnp.integer) or y.dtype == bool:
        if encode and _concrete(labels):
            return check_labels(np.asarray(labels), n, encode=True, name=name)
        raise TypeError(f"{name} must be integers (class codes); got dtype {y.dtype}.")
    return y


def check_batch(embeddings, labels, mask=None, *, labels_required=True, encode_labels=True,
                names=("embeddings", "labels", "mask")):
    """Validated ``(Z, y, valid)``: float (B, d) embeddings, int (B,) labels, bool (B,) row mask.

    ``labels`` may be None when ``labels_required`` is False (then ``y`` is None); concrete labels of
    any type are encoded (:func:`check_labels`). Padded rows (``mask`` False) are replaced by zeros,
    so that whatever they hold (NaN, inf) reaches neither the value nor a gradient; a NaN in a real
    row makes the loss NaN. ``names``: the arguments' names in the error messages.
    """
    emb, lab, msk = names
    Z = embeddings
    if _concrete(Z) and not isinstance(Z, jax.Array):
        Z = _host(emb, Z)
        if Z.dtype.kind not in "biuf":
            raise TypeError(f"{emb} must be real numbers; got dtype {Z.dtype}.")
    Z = jnp.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"{emb} must be a 2-D array (batch, dim); got shape {Z.shape}.")
    if Z.shape[0] < 1 or Z.shape[1] < 1:
        raise ValueError(f"{emb} must have at least one row and one column; got shape {Z.shape}.")
    if not jnp.issubdtype(Z.dtype, jnp.floating):
        if jnp.issubdtype(Z.dtype, jnp.complexfloating) or Z.dtype == bool:
            raise TypeError(f"{emb} must be real numbers; got dtype {Z.dtype}.")
        Z = Z.astype(jnp.result_type(float))
    y = None
    if labels is not None or labels_required:
        if labels is None:
            raise ValueError(f"{lab} are required (one integer class label per row of {emb}).")
        y = check_labels(labels, Z.shape[0], encode=encode_labels, name=lab)
    valid = check_mask(mask, Z.shape[0], msk)
    return jnp.where(valid[:, None], Z, 0.0), y, valid


def check_mask(mask, n: int, name: str = "mask"):
    """(n,) bool: True for real rows (``mask=None``: every row). A concrete mask must be boolean or
    0/1 numbers, one per row."""
    if mask is None:
        return jnp.ones(n, bool)
    if _concrete(mask) and not isinstance(mask, jax.Array):
        m = _host(name, mask)
        if m.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be boolean (or 0/1), one entry per row; got dtype {m.dtype}.")
    m = jnp.asarray(mask)
    if m.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one entry per row; got shape {m.shape}.")
    if m.dtype == bool:
        return m
    if not (jnp.issubdtype(m.dtype, jnp.integer) or jnp.issubdtype(m.dtype, jnp.floating)):
        raise TypeError(f"{name} must be boolean (or 0/1), one entry per row; got dtype {m.dtype}.")
    if _concrete(m):
        bad = np.asarray(m)[(np.asarray(m) != 0) & (np.asarray(m) != 1)]
        if bad.size:
            raise ValueError(f"{name} must be boolean or 0/1 (True / 1 for a real row); got values such as "
                             f"{bad[:3].tolist()}.")
    return m > 0


def check_indices(name: str, idx, n: int):
    """Concrete row indices must lie in ``[0, n)`` (inside ``jax.jit`` they are not checked: an index
    out of range is then clamped by JAX's gather)."""
    if _concrete(idx):
        v = np.asarray(idx)
        if v.size and (v.min() < 0 or v.max() >= n):
            bad = v[(v < 0) | (v >= n)][:5].tolist()
            raise ValueError(f"{name} must hold row indices in [0, {n - 1}] of the batch of {n} rows; got {bad}.")


def check_labels_in_range(labels, n_classes: int, what: str) -> None:
    """On concrete labels (not traced): every label in ``[0, n_classes)``, else a ``ValueError``."""
    if isinstance(labels, jax.core.Tracer):
        return
    y = np.asarray(labels)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"labels must be class indices in [0, {n_classes}) to index the {n_classes} {what}; "
                         f"got labels from {y.min()} to {y.max()}.")


def check_param_matrix(W, dim: int, name: str):
    """A (rows, dim) float parameter matrix (proxies, class weights)."""
    W = jnp.asarray(W)
    if W.ndim != 2 or W.shape[1] != dim or W.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n_classes, {dim}) to match the embeddings; got shape {W.shape}.")
    if not jnp.issubdtype(W.dtype, jnp.floating):
        raise TypeError(f"{name} must be a float array; got dtype {W.dtype}.")
    return W


def apply_map(Z, L):
    """``Z L^T`` (the rows under a learned linear map), or ``Z`` when ``L`` is None."""
    if L is None:
        return Z
    if _concrete(L) and not isinstance(L, jax.Array):
        L = _host("L", L)
        if L.dtype.kind not in "biuf":
            raise TypeError(f"L must be a real matrix; got dtype {L.dtype}.")
    L = jnp.asarray(L)
    if L.ndim != 2 or L.shape[1] != Z.shape[1] or L.shape[0] < 1:
        raise ValueError(f"L must have shape (n_components, {Z.shape[1]}) to map the embeddings; got shape {L.shape}.")
    if _concrete(L) and not bool(jnp.all(jnp.isfinite(L))):
        raise ValueError("L contains NaN or infinite values (a diverged map?).")
    return Z @ L.T


# -------------------------------------------------------------------------------- distances, norms

def safe_sqrt(x):
    """``sqrt(max(x, 0))`` whose gradient at 0 is 0 (not inf, which times 0 would be NaN); NaN stays
    NaN (a diverged embedding is not hidden behind a zero distance)."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), x * 0.0)


def safe_norm(x, axis=-1, keepdims=False):
    """Euclidean norm along ``axis`` with a zero (not NaN) gradient at the zero vector."""
    return safe_sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))


def _row_scale(x, axis=-1):
    """The largest absolute entry along ``axis`` (1 for a zero row), held constant: dividing by it keeps
    squares of tiny or huge rows (1e-25, 1e20) inside float32's range."""
    s = jax.lax.stop_gradient(jnp.max(jnp.abs(x), axis=axis, keepdims=True))
    return jnp.where(s > 0, s, 1.0)


def normalize(x, axis=-1):
    """``x / ||x||`` along ``axis``, the row first scaled by its largest entry (so that its square
    neither underflows nor overflows); a zero row stays zero (cosine similarity 0 to everything)."""
    x = x / _row_scale(x, axis)
    n = safe_norm(x, axis=axis, keepdims=True)
    return x / jnp.where(n > 0, n, 1.0)


def pairwise(embeddings, other=None, *, distance: str = "euclidean", L=None):
    """The (n, m) matrix of distances or similarities between the rows of two arrays.

    Parameters
    ----------
    embeddings : (n, d) array
    other : (m, d) array, optional
        Default: ``embeddings`` itself.
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="euclidean"
        See :mod:`jaxdml.losses.deep` for the formulas; ``cosine`` and ``dot`` are similarities.
    L : (k, d) array, optional
        A learned linear map applied to both sides first (the Mahalanobis case).

    Returns
    -------
    (n, m) array
    """
    kind = check_distance(distance)
    A = apply_map(jnp.asarray(embeddings), L)
    B = A if other is None else apply_map(jnp.asarray(other), L)
    return dense(A, B, kind)


def dense(A, B, kind, valid=None):
    """(n, m) distances or similarities of the rows of ``A`` and ``B`` (already mapped), GEMM form.

    Euclidean distances are computed after translating both sides by the mean of ``B``'s real rows
    (``valid``: which rows of ``B`` are real; default all) and scaling them by their largest entry, so
    that rows far from the origin, tiny rows and huge rows keep their neighbours in float32."""
    if kind == "dot":
        return A @ B.T
    if kind == "cosine":
        return normalize(A) @ normalize(B).T
    # translated (pairwise_sq_dists) and scaled by the largest entry: rows far from the origin, tiny or
    # huge rows keep their neighbours
    w = jnp.ones(B.shape[0], B.dtype) if valid is None else valid.astype(B.dtype)
    c = jax.lax.stop_gradient(jnp.sum(B * w[:, None], axis=0, keepdims=True) / jnp.maximum(jnp.sum(w), 1.0))
    A, B = A - c, B - c
    s = jax.lax.stop_gradient(jnp.maximum(jnp.max(jnp.abs(A)), jnp.max(jnp.abs(B))))
    s = jnp.where((s > 0) & jnp.isfinite(s), s, 1.0)
    d2 = linalg.pairwise_sq_dists(A / s, B / s, translate=None)  # centred on the real rows above
    return d2 * s * s if kind == "sq_euclidean" else safe_sqrt(d2) * s


def paired(A, B, kind):
    """Distances or similarities of row pairs ``(A[t], B[t])`` (any leading shape), from differences."""
    if kind == "dot":
        return jnp.sum(A * B, axis=-1)
    if kind == "cosine":
        return jnp.sum(normalize(A) * normalize(B), axis=-1)
    diff = A - B
    d2 = jnp.sum(diff * diff, axis=-1)
    return d2 if kind == "sq_euclidean" else safe_sqrt(d2)


def dissimilarity(values, kind):
    """Smaller-is-closer form: a distance as it is, a similarity negated."""
    return -values if kind in SIMILARITIES else values


def similarity(values, kind):
    """Larger-is-closer form: a similarity as it is, a distance negated."""
    return values if kind in SIMILARITIES else -values


# ------------------------------------------------------------------------------------ batch masks

def label_pairs(y, valid):
    """(B, B) bool ``(positive, negative)``: same label (not the row itself) / different label,
    both rows real."""
    both = valid[:, None] & valid[None, :]
    same = y[:, None] == y[None, :]
    eye = jnp.eye(y.shape[0], dtype=bool)
    return same & ~eye & both, ~same & both


# ----------------------------------------------------------------------------- reductions, softmax

def reduce(values, weights, reduction):
    """Reduce per-term ``values`` with term weights ``w`` (a count; 0 = no term).

    ``mean`` is ``sum(w v) / sum(w)``, and 0 when there is no term (a batch without a positive pair,
    say): a defined value, never NaN. ``sum`` is ``sum(w v)``; ``none`` returns the weighted terms
    ``w v`` (0 where there is no term), so that ``sum`` is their sum. ``avg_non_zero`` is the mean over
    the terms whose value is positive (the terms a hinge has not cleared; 0 when there is none). A
    callable is a reducer, called as ``reduction(values, weights)``.
    """
    if callable(reduction):
        return reduction(values, weights)
    if reduction == "avg_non_zero":  # only the positive terms, in the sum and in the count (NaN stays NaN)
        weights = jnp.where((values > 0) | jnp.isnan(values), weights, 0.0)
    v = jnp.where(weights > 0, values * weights, 0.0)
    if reduction == "none":
        return v
    total = jnp.sum(v)
    if reduction == "sum":
        return total
    count = jnp.sum(weights)
    return jnp.where(count > 0, total / jnp.where(count > 0, count, 1.0), 0.0)


def sign_of(kind: str) -> float:
    """+1 for a similarity, -1 for a distance: a term ``s - t`` of a similarity-based formula is
    ``sign * (V - t)``, i.e. ``t - d`` for a distance (thresholds stay on the measure's own scale)."""
    return 1.0 if kind in SIMILARITIES else -1.0


def masked_logsumexp(x, weights, axis=-1):
    """``(log sum_k w_k exp(x_k), nonempty)`` along ``axis`` over the entries with ``w_k > 0``.

    Stable (the max over those entries is subtracted, held constant); where no entry has a weight
    the value is 0 and ``nonempty`` False, and masked entries get a zero gradient (no NaN from
    ``log 0`` or ``exp`` of a masked value).
    """
    on = weights > 0
    nonempty = jnp.any(on, axis=axis)
    neg = jnp.finfo(x.dtype).min
    m = jax.lax.stop_gradient(jnp.max(jnp.where(on, x, neg), axis=axis, keepdims=True))
    m = jnp.where(jnp.expand_dims(nonempty, axis), m, 0.0)
    e = jnp.where(on, weights * jnp.exp(jnp.where(on, x - m, 0.0)), 0.0)
    s = jnp.sum(e, axis=axis)
    out = jnp.squeeze(m, axis) + jnp.log(jnp.where(nonempty, s, 1.0))
    return jnp.where(nonempty, out, 0.0), nonempty


def log1p_sum_exp(x, weights, axis=-1):
    """``log(1 + sum_k w_k exp(x_k))`` along ``axis``, stable; exactly 0 where no weight is positive."""
    lse, nonempty = masked_logsumexp(x, weights, axis)
    return jnp.where(nonempty, jax.nn.softplus(lse), 0.0)
