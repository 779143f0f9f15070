"""Reducers: how a loss's terms (what ``reduction="none"`` returns) become one number.

A reducer is a callable ``(values, weights) -> scalar``: ``values`` the loss's terms and ``weights``
their counts (0: no term there, e.g. a pair of a row with itself or a padded row). Every loss of
:mod:`jaxdml.losses.deep` takes one as ``reduction=``, besides the names ``"mean"``, ``"sum"``,
``"none"`` and ``"avg_non_zero"``. Terms that are NaN stay NaN in every reducer.

* :func:`avg_non_zero` - the mean over the positive terms (a hinge's active terms), 0 when none is;
* :func:`threshold` - the mean over the terms strictly between ``low`` and ``high``;
* :func:`divisor` - the sum divided by a fixed number.

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

import jax.numpy as jnp
import numpy as np

__all__ = ["avg_non_zero", "threshold", "divisor"]


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
