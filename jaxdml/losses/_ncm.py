"""Nearest class mean metric learning (NCMML) and nearest class with multiple centroids (NCMC).

Both maximise the log-likelihood of a softmax over (squared, halved) distances from each sample
to class representatives under the linear map ``L`` (Mensink et al., 2012). The representatives
are fixed during learning: the class means (computed from ``problem.X`` inside :func:`ncmml`) or
k-means centroids per class (``problem.centroids`` from ``make_problem(..., n_centroids=k)``).
The distance matrices are (n_samples, n_representatives), small next to N x N, so no row blocks
are needed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import linalg
from ._common import n_valid

__all__ = ["ncmml", "ncmc"]


def _masked_logsumexp(logits, allowed, axis: int = -1):
    """``log sum_{allowed} exp(logits)`` along ``axis``, stable, with exact masking.

    The max over the allowed entries is subtracted (held constant: it cancels in the gradient),
    masked entries contribute exactly 0 and rows with no allowed entry give ``log(tiny)`` (finite;
    callers give those rows weight 0).
    """
    neg = jnp.finfo(logits.dtype).min
    m = jnp.max(jnp.where(allowed, logits, neg), axis=axis, keepdims=True)
    m = jax.lax.stop_gradient(jnp.where(m > neg, m, 0.0))
    e = jnp.where(allowed, jnp.exp(jnp.where(allowed, logits - m, 0.0)), 0.0)
    s = jnp.sum(e, axis=axis)
    return jnp.squeeze(m, axis) + jnp.log(jnp.maximum(s, jnp.finfo(s.dtype).tiny))


def _class_means(problem):
    """Class means of the real samples, ``(n_classes, d)``, and which classes have samples."""
    X, y, mask = problem.X, problem.y, problem.sample_mask
    onehot = jax.nn.one_hot(y, problem.n_classes, dtype=X.dtype) * mask[:, None]
    counts = jnp.sum(onehot, axis=0)
    means = (onehot.T @ X) / jnp.maximum(counts, 1.0)[:, None]
    return means, counts > 0


def _centroid_nll(L, problem, reps, rep_labels, rep_valid, anchors, candidates, name):
    """Mean over the (valid) anchors of ``-log p_L(y_i | x_i)``, with
    ``p(c|x) = sum_{m in c} softmax_m(-|L(x - m)|^2 / 2)``."""
    if candidates is not None:
        raise ValueError(f"{name} compares samples with class representatives, not with other samples; "
                         "n_candidates does not apply (use n_candidates=None).")
    X, y, mask = problem.X, problem.y, problem.sample_mask
    if anchors is not None:
        X, y, mask = X[anchors], y[anchors], mask[anchors]
    Z = X @ L.T
    R = reps @ L.T
    logits = -0.5 * linalg.pairwise_sq_dists(Z, R)  # (n_anchors, n_reps)
    same = rep_valid[None, :] & (rep_labels[None, :] == y[:, None])
    ll = _masked_logsumexp(logits, same) - _masked_logsumexp(logits, rep_valid[None, :])
    return -jnp.sum(mask * ll) / n_valid(problem, anchors)


def ncmml(L, problem, *, anchors=None, candidates=None):
    r"""NCMML: negative mean log-likelihood of the nearest-class-mean softmax.

    .. math::

        p_L(c \mid x) = \frac{\exp(-\tfrac12 \|L(x - \mu_c)\|^2)}
                             {\sum_{c'} \exp(-\tfrac12 \|L(x - \mu_{c'})\|^2)},
        \qquad
        \mathrm{ncmml}(L) = -\mathcal{L}(L) = -\frac{1}{N} \sum_{i=1}^N \log p_L(y_i \mid x_i)

    ``L`` is the linear map (n_components, n_features); :math:`\mu_c` are the means of the real
    samples of each class of ``problem`` (``problem.X``, ``problem.y``, padding rows masked by
    ``problem.sample_mask``), computed here and held fixed (they do not depend on ``L``). The
    seed's gradient :math:`\nabla\mathcal{L}(L) = \frac1N \sum_i \sum_c \alpha_{ic} L (\mu_c -
    x_i)(\mu_c - x_i)^T` with :math:`\alpha_{ic} = p_L(c|x_i) - [y_i = c]` is ``-jax.grad(ncmml)``.
    Softmaxes use log-sum-exp.

    Parameters
    ----------
    L : (n_components, n_features) array
    problem : LabeledProblem
    anchors : int array, optional
        Evaluate the mean only over these rows (a minibatch); the class means still use every
        sample. Default: all rows.
    candidates : None
        Not applicable (raises if given); accepted for the driver's uniform interface.

    Returns
    -------
    scalar

    Examples
    --------
    >>> import jax, numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(30, 4)); y = np.arange(30) % 3
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=None)
    >>> float(jaxdml.losses.ncmml(np.eye(4, dtype=np.float32), prob)) > 0
    True

    References
    ----------
    T. Mensink, J. Verbeek, F. Perronnin, G. Csurka. Metric Learning for Large Scale Image
    Classification: Generalizing to New Classes at Near-Zero Cost. ECCV 2012.
    """
    means, valid = _class_means(problem)
    labels = jnp.arange(problem.n_classes, dtype=problem.y.dtype)
    return _centroid_nll(L, problem, means, labels, valid, anchors, candidates, "ncmml")


def ncmc(L, problem, *, anchors=None, candidates=None):
    r"""NCMC: negative mean log-likelihood of the nearest-class-with-multiple-centroids softmax.

    .. math::

        p_L(m_{c_j} \mid x) = \frac{\exp(-\tfrac12 \|L(x - m_{c_j})\|^2)}
                                 {\sum_{c} \sum_{i=1}^{k_c} \exp(-\tfrac12 \|L(x - m_{c_i})\|^2)},
        \qquad p_L(c \mid x) = \sum_{j=1}^{k_c} p_L(m_{c_j} \mid x),

    .. math::

        \mathrm{ncmc}(L) = -\frac{1}{N} \sum_{i=1}^N \log p_L(y_i \mid x_i)

    The centroids :math:`m_{c_j}` are ``problem.centroids`` (k-means per class, from
    ``make_problem(X, y, n_centroids=k)``) with ``problem.centroid_labels`` and
    ``problem.centroid_mask`` (0 for centroids a small class cannot provide). The seed's gradient
    :math:`\frac1N \sum_i \sum_{c,j} \alpha_{ic_j} L (m_{c_j} - x_i)(m_{c_j} - x_i)^T` with
    :math:`\alpha_{ic_j} = p_L(m_{c_j}|x_i) - [y_i = c]\, p_L(m_{c_j}|x_i) / p_L(c|x_i)` is
    ``-jax.grad(ncmc)`` (the seed's objective line omits the ``log``; its gradient is that of the
    log-likelihood). ``log p(c|x)`` is a log-sum-exp over the class's centroids minus one over all.

    Parameters
    ----------
    L : (n_components, n_features) array
    problem : LabeledProblem with centroids
    anchors : int array, optional
        Evaluate the mean only over these rows (a minibatch). Default: all rows.
    candidates : None
        Not applicable (raises if given).

    Returns
    -------
    scalar

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(30, 4)); y = np.arange(30) % 3
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=None, n_centroids=2, random_state=0)
    >>> float(jaxdml.losses.ncmc(np.eye(4, dtype=np.float32), prob)) > 0
    True

    References
    ----------
    T. Mensink, J. Verbeek, F. Perronnin, G. Csurka. Metric Learning for Large Scale Image
    Classification: Generalizing to New Classes at Near-Zero Cost. ECCV 2012.
    """
    if problem.centroids is None:
        raise ValueError(
            "ncmc needs class centroids: build the problem with "
            "jaxdml.make_problem(X, y, n_centroids=k) (or call jaxdml.fit(..., loss='ncmc', centroids_num=k))."
        )
    return _centroid_nll(L, problem, problem.centroids, problem.centroid_labels, problem.centroid_mask > 0,
                         anchors, candidates, "ncmc")
