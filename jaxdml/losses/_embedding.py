"""Losses of embedded points: every gradient loss as a function of ``Z = f(X)``.

A loss ``loss(L, problem)`` of the linear map sees the data only through the embedded points
``problem.X @ L.T``. For any embedding ``f`` (a neural network, a kernel map, ...),
``embedded(loss)(Z, problem) = loss(I, problem with X replaced by Z)`` is therefore the same loss
of the points ``Z = f(X)``, exactly: ``Z I^T = Z``. The linear map is the special case
``f(X) = X L^T``. Metric losses ``loss(M, problem)`` work the same way with ``M = I``. Gradients
flow to ``Z`` (and on to the parameters of ``f``) through the problem's ``X`` field.

Index fields of the problem (target neighbours, impostor candidates, pairs) refer to rows and stay
valid; fields that hold points in input space (the k-means ``centroids`` of NCMC) must be replaced
by their embeddings as well (``problem._replace(centroids=f(centroids))``).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp

from ._ldml import ldml
from ._lmnn import lmnn, lmnn_metric
from ._mcml import mcml
from ._nca import nca
from ._ncm import ncmc, ncmml

__all__ = ["embedded", "on_embedding"]

#: the built-in gradient losses by name (their pure functions)
_LOSSES = dict(nca=nca, lmnn=lmnn, lmnn_metric=lmnn_metric, ncmml=ncmml, ncmc=ncmc, mcml=mcml, ldml=ldml)


def embedded(loss):
    """The loss ``g(Z, problem, **hyper)`` of embedded points ``Z`` (n_rows, k).

    Parameters
    ----------
    loss : callable
        A loss ``loss(params, problem, **hyper)`` of the linear map ``L`` or the metric ``M``.

    Returns
    -------
    callable
        ``g(Z, problem, **hyper) = loss(I_k, problem._replace(X=Z), **hyper)``. ``Z`` has one row
        per row of ``problem.X`` (padding rows included; their values do not matter).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np, jaxdml
    >>> X, y = np.random.RandomState(0).rand(20, 3), np.arange(20) % 2
    >>> problem = jaxdml.make_problem(X, y)
    >>> L = jnp.asarray([[1.0, 0.5, 0.0], [0.0, 1.0, 2.0]], problem.X.dtype)
    >>> g = jaxdml.losses.embedded(jaxdml.losses.nca)
    >>> bool(jnp.allclose(g(problem.X @ L.T, problem), jaxdml.losses.nca(L, problem), rtol=1e-5))
    True
    """

    @functools.wraps(loss)
    def on_points(Z, problem, **hyper):
        eye = jnp.eye(Z.shape[1], dtype=Z.dtype)
        return loss(eye, problem._replace(X=Z), **hyper)

    return on_points


def on_embedding(name_or_fn):
    """:func:`embedded` of a built-in loss given by name (``"nca"``, ``"lmnn"``, ...) or of a function.

    A user's registered gradient method is given by its function:
    ``on_embedding(jaxdml.methods()[name].loss.fn)`` (this maths layer does not read the method registry).
    """
    if callable(name_or_fn):
        return embedded(name_or_fn)
    if name_or_fn in _LOSSES:
        return embedded(_LOSSES[name_or_fn])
    raise ValueError(f"Unknown built-in loss {name_or_fn!r}; valid names: {sorted(_LOSSES)}. For a registered "
                     "method pass its function: on_embedding(jaxdml.methods()[name].loss.fn).")
