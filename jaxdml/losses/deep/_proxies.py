"""Proxy losses: ProxyNCA and Proxy-Anchor, with one trainable proxy per class.

The proxies are an ordinary (n_classes, d) array argument: differentiate the loss with respect to
it (``jax.grad(loss, argnums=(0, 2))`` or inside a parameter pytree) to learn them. Labels are
class indices into its rows.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._base import (SIMILARITIES, apply_map, check_batch, check_distance, check_labels_in_range, check_param_matrix,
                    check_real, check_reduction, dense, log1p_sum_exp, masked_logsumexp, reduce, sign_of,
                    similarity)
from ._base import normalize as unit_rows

__all__ = ["proxy_nca", "proxy_anchor"]


def _proxy_batch(embeddings, labels, proxies, distance, L, mask):
    """Validated ``(Z, P, y, valid, kind)``: embeddings and proxies under ``L``."""
    kind = check_distance(distance)
    Z, y, valid = check_batch(embeddings, labels, mask, encode_labels=False)  # labels index the proxies
    P = check_param_matrix(proxies, Z.shape[1], "proxies")
    check_labels_in_range(y, P.shape[0], "proxies")
    return apply_map(Z, L), apply_map(P.astype(Z.dtype), L), y, valid, kind


def proxy_nca(embeddings, labels, proxies, *, scale=1.0, normalize=True, include_positive=False,
              distance="sq_euclidean", L=None, mask=None, reduction="mean"):
    r"""ProxyNCA: NCA with each class represented by one learned proxy.

    .. math::

        \ell_i = -\log \frac{\exp(-s\, d(x_i, p_{y_i}))}{\sum_{z \ne y_i} \exp(-s\, d(x_i, p_z))},
        \qquad \mathcal{L} = \frac{1}{m} \sum_{i=1}^m \ell_i

    with :math:`d` the squared Euclidean distance between unit-normalised embeddings and proxies (the
    paper's setting), :math:`s` a scale, and the sum over the ``m`` real rows. The paper's denominator
    leaves the positive proxy out (the loss can then be negative); ``include_positive=True`` gives the
    softmax cross-entropy over all proxies (ProxyNCA++'s form). With a similarity, :math:`-d` is
    replaced by :math:`s(x, p)`. The log-sum-exp is stable.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
        Class indices in ``[0, n_classes)``.
    proxies : (n_classes, d) array
        One proxy per class (trainable).
    scale : float, default=1.0
        :math:`s` (an inverse temperature).
    normalize : bool, default=True
        Normalise embeddings and proxies to unit length before the distance (after ``L``).
    include_positive : bool, default=False
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="sq_euclidean"
    L : (k, d) array, optional
        A learned linear map applied to embeddings and proxies.
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"``: the (B,) per-row terms.

    References
    ----------
    Y. Movshovitz-Attias, A. Toshev, T. K. Leung, S. Ioffe, S. Singh. No Fuss Distance Metric Learning
    using Proxies. ICCV 2017.
    E. W. Teh, T. DeVries, G. W. Taylor. ProxyNCA++: Revisiting and Revitalizing Proxy Neighborhood
    Component Analysis. ECCV 2020.
    """
    check_reduction(reduction)
    check_real("scale", scale, low=0.0)
    Z, P, y, valid, kind = _proxy_batch(embeddings, labels, proxies, distance, L, mask)
    n_classes = P.shape[0]
    if n_classes < 2 and not include_positive:
        raise ValueError("proxy_nca needs at least 2 proxies (the denominator sums over the other classes).")
    if normalize and kind not in SIMILARITIES:
        Z, P = unit_rows(Z), unit_rows(P)
    x = scale * similarity(dense(Z, P, kind), kind)
    target = y[:, None] == jnp.arange(n_classes)[None, :]
    lse, _ = masked_logsumexp(x, jnp.ones_like(x) if include_positive else (~target).astype(x.dtype), axis=1)
    terms = lse - jnp.take_along_axis(x, y[:, None], axis=1)[:, 0]
    return reduce(terms, valid.astype(x.dtype), reduction)


def proxy_anchor(embeddings, labels, proxies, *, alpha=32.0, margin=0.1, distance="cosine", L=None, mask=None,
                 reduction="mean"):
    r"""Proxy-Anchor loss: each proxy as an anchor against all embeddings of the batch.

    .. math::

        \mathcal{L} = \frac{1}{|P^+|} \sum_{p \in P^+}
        \log\Big(1 + \sum_{x \in X_p^+} e^{-\alpha (s(x, p) - \delta)}\Big)
        + \frac{1}{|P|} \sum_{p \in P} \log\Big(1 + \sum_{x \in X_p^-} e^{\alpha (s(x, p) + \delta)}\Big)

    with :math:`P` all proxies, :math:`P^+` those whose class is in the batch, :math:`X_p^+` /
    :math:`X_p^-` the real rows of / not of the proxy's class, :math:`s` the cosine similarity. With a
    distance, :math:`s - \delta` and :math:`s + \delta` become :math:`\delta - d` and :math:`-\delta - d`.

    Parameters
    ----------
    embeddings : (B, d) array
    labels : (B,) int array
        Class indices in ``[0, n_classes)``.
    proxies : (n_classes, d) array
        One proxy per class (trainable).
    alpha : float, default=32.0
        The scale :math:`\alpha`.
    margin : float, default=0.1
        :math:`\delta`.
    distance : {"euclidean", "sq_euclidean", "cosine", "dot"}, default="cosine"
    L : (k, d) array, optional
    mask : (B,) bool array, optional
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"mean"``: the formula above; ``"sum"``: the two sums without their normalisations;
        ``"none"``: the (n_classes, 2) per-proxy terms (positive term 0 for a proxy not in the batch).

    References
    ----------
    S. Kim, D. Kim, M. Cho, S. Kwak. Proxy Anchor Loss for Deep Metric Learning. CVPR 2020.
    """
    check_reduction(reduction)
    check_real("alpha", alpha, low=0.0)
    check_real("margin", margin, low=0.0, strict=False)
    Z, P, y, valid, kind = _proxy_batch(embeddings, labels, proxies, distance, L, mask)
    V = dense(Z, P, kind)  # (B, n_classes)
    sign = sign_of(kind)
    member = (y[:, None] == jnp.arange(P.shape[0])[None, :]) & valid[:, None]
    other = ~member & valid[:, None]
    pos = log1p_sum_exp((-alpha * sign * (V - margin)).T, member.T.astype(V.dtype), axis=1)
    neg = log1p_sum_exp((alpha * sign * (V + margin)).T, other.T.astype(V.dtype), axis=1)
    in_batch = jnp.any(member, axis=0).astype(V.dtype)
    if reduction == "none":
        return jnp.stack([pos * in_batch, neg], axis=1)
    return reduce(pos, in_batch, reduction) + reduce(neg, jnp.ones_like(neg), reduction)
