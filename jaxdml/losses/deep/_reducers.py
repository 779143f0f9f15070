"""Reducers: how a loss's terms (what ``reduction="none"`` returns) become one number.

A reducer is a callable ``(values, weights) -> scalar``: ``values`` the loss's terms and ``weights``
their counts (0: no term there, e.g. a pair of a row with itself or a padded row). Every loss of
:mod:`jaxdml.losses.deep` takes one as ``reduction=``, besides the names ``"mean"``, ``"sum"``,
``"none"`` and ``"avg_non_zero"``. Terms that are NaN stay NaN in every reducer.

* :func:`avg_non_zero` - the mean over the positive terms (a hinge's active terms), 0 when none is;
* :func:`threshold` - the mean over the terms strictly between ``low`` and ``high``;
* :func:`divisor` - the sum divided by a fixed number;
* :func:`per_anchor` - the mean of each anchor's terms, then the mean over the anchors that have one;
* :func:`class_weighted` - each term weighted by its anchor's class weight, then the mean over the terms.

The last two need each term's anchor: the first axis of a dense layout (the (B,) per-row, (B, B) pair and
(B, B, B) triplet terms), or ``anchors=`` (the anchor row of each term of a flat layout, e.g. mined
:class:`~jaxdml.losses.deep.Triplets`' ``anchor``).

>>> import jax.numpy as jnp
>>> from jaxdml.losses import deep
>>> Z = jnp.eye(6, 3) + 0.1; y = jnp.array([0, 0, 1, 1, 2, 2])
>>> a = deep.triplet_margin(Z, y, reduction=deep.avg_non_zero)
>>> b = deep.triplet_margin(Z, y, reduction="avg_non_zero")
>>> bool(a == b)
True
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["avg_non_zero", "threshold", "divisor", "per_anchor", "class_weighted"]


def _mean_where(values, weights, keep):
    w = jnp.where(keep & (weights > 0), weights, 0.0)
    total = jnp.sum(jnp.where(w > 0, values * w, 0.0))
    count = jnp.sum(w)
    return jnp.where(count > 0, total / jnp.where(count > 0, count, 1.0), 0.0)


def avg_non_zero(values, weights):
    """The mean of the terms whose value is positive (weighted by their counts); 0 when none is."""
    return _mean_where(values, weights, (values > 0) | jnp.isnan(values))


def _number(name, v):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number or None; got {v!r}.")
    return float(v)


def threshold(low=None, high=None):
    """A reducer: the mean of the terms strictly between ``low`` and ``high`` (either may be None);
    0 when none is. E.g. ``threshold(low=0.05)`` ignores terms already below 0.05."""
    low, high = _number("low", low), _number("high", high)
    if low is not None and high is not None and not low < high:
        raise ValueError(f"threshold: low must be below high; got low={low}, high={high}.")

    def reducer(values, weights):
        keep = jnp.ones(values.shape, bool) if low is None else values > low
        keep = keep if high is None else keep & (values < high)
        return _mean_where(values, weights, keep | jnp.isnan(values))

    return reducer


def divisor(d):
    """A reducer: the sum of the terms divided by ``d`` (a positive number), whatever their count."""
    d = _number("d", d)
    if d is None or not d > 0:
        raise ValueError(f"divisor: d must be a positive number; got {d!r}.")

    def reducer(values, weights):
        return jnp.sum(jnp.where(weights > 0, values * weights, 0.0)) / d

    return reducer


def _anchor_rows(values, anchors, owner):
    """(n_anchors_axis, n_terms_per_row) view of the terms and the anchor of each row of it."""
    if anchors is None:
        if values.ndim < 1:
            raise ValueError(f"{owner}: the loss returned a single term; there is no anchor axis.")
        return values.reshape(values.shape[0], -1), None
    a = jnp.asarray(anchors)
    if a.ndim != 1 or a.shape[0] != values.size:
        raise ValueError(f"{owner}: anchors must give the anchor row of each of the {values.size} terms; got shape "
                         f"{a.shape}.")
    return values.reshape(-1, 1), a


def per_anchor(anchors=None, *, non_zero: bool = False, n_rows=None):
    """A reducer: the mean of each anchor's terms (weighted by their counts; with ``non_zero`` only its positive
    terms), then the mean over the anchors that have at least one such term; 0 when none has. Every anchor counts
    alike, however many terms it has (PML's per-anchor reduction). ``anchors``: the anchor row of each term of a
    flat layout (default: the first axis of a dense one), ``n_rows`` the batch size they index (needed when
    ``anchors`` is traced, inside ``jax.jit``)."""
    if not isinstance(non_zero, bool):
        raise TypeError(f"per_anchor: non_zero must be True or False; got {non_zero!r}.")

    def reducer(values, weights):
        v, a = _anchor_rows(values, anchors, "per_anchor")
        w = weights.reshape(v.shape)
        if non_zero:
            w = jnp.where((v > 0) | jnp.isnan(v), w, 0.0)
        total = jnp.where(w > 0, v * w, 0.0)
        if a is None:
            sums, counts = jnp.sum(total, axis=1), jnp.sum(w, axis=1)
        else:  # flat terms: gather them by anchor row
            if n_rows is None and isinstance(a, jax.core.Tracer):
                raise ValueError("per_anchor: give n_rows (the batch size) with anchors inside jax.jit.")
            n = int(n_rows) if n_rows is not None else int(jnp.max(a)) + 1
            sums = jax.ops.segment_sum(total[:, 0], a, num_segments=n)
            counts = jax.ops.segment_sum(w[:, 0], a, num_segments=n)
        has = counts > 0
        means = jnp.where(has, sums / jnp.where(has, counts, 1.0), 0.0)
        k = jnp.sum(has)
        return jnp.where(k > 0, jnp.sum(means) / jnp.maximum(k, 1), 0.0)

    return reducer


def class_weighted(class_weights, labels, anchors=None):
    """A reducer: each term times the weight of its anchor's class, ``class_weights[labels[anchor]]``, then the
    mean over the terms (their counts as weights; 0 when there is none), as PML's class-weighted reduction.
    ``labels``: the batch's integer labels; ``anchors``: the anchor row of each term of a flat layout."""
    cw = jnp.asarray(class_weights)
    y = jnp.asarray(labels)
    if cw.ndim != 1 or not jnp.issubdtype(cw.dtype, jnp.number):
        raise ValueError(f"class_weighted: class_weights must be a 1-D array of numbers; got shape {cw.shape}.")
    if y.ndim != 1 or not jnp.issubdtype(y.dtype, jnp.integer):
        raise ValueError("class_weighted: labels must be a 1-D integer array (the batch's class indices).")

    def reducer(values, weights):
        v, a = _anchor_rows(values, anchors, "class_weighted")
        rows = jnp.arange(v.shape[0]) if a is None else a
        if a is None and v.shape[0] != y.shape[0]:
            raise ValueError(f"class_weighted: the terms have {v.shape[0]} anchor rows and labels {y.shape[0]}.")
        scale = cw[y[rows]][:, None]
        w = weights.reshape(v.shape)
        total = jnp.sum(jnp.where(w > 0, v * w * scale, 0.0))
        count = jnp.sum(w)
        return jnp.where(count > 0, total / jnp.where(count > 0, count, 1.0), 0.0)

    return reducer
