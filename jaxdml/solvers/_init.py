"""Shared initialisers for the linear map ``L``."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from .._runtime._device import x64_call
from ..eigen import lda_components, pca_components

INIT_OPTIONS = ("auto", "identity", "pca", "lda", "random")


def initial_components(init, X: np.ndarray, codes, n_classes: int, n_components: int, random_state=None):
    """Initial ``L`` (n_components, n_features) as a float64 NumPy array.

    ``"auto"``: identity at full dimension, LDA when ``n_components <= n_classes - 1``, PCA
    otherwise; ``"identity"`` (the first rows of I), ``"pca"``, ``"lda"``, ``"random"``
    (standard normal) or an explicit array.
    """
    n, d = X.shape
    if isinstance(init, str):
        if init not in INIT_OPTIONS:
            raise ValueError(f"init must be one of {INIT_OPTIONS} or an array; got {init!r}.")
        if init == "auto":
            if n_components == d:
                init = "identity"
            elif codes is not None and n_components <= n_classes - 1:
                init = "lda"
            else:
                init = "pca"
        if init == "identity":
            return np.eye(n_components, d)
        if init == "random":
            return check_random_state(random_state).standard_normal((n_components, d))
        if init == "pca":
            return x64_call(pca_components, X, n_components)[0]
        if init == "lda":
            if codes is None or n_components > n_classes - 1:
                raise ValueError(
                    f"init='lda' gives at most n_classes - 1 = {n_classes - 1} components; "
                    f"n_components={n_components}."
                )
            return x64_call(lda_components, X, codes, n_components, n_classes)[0] * np.sqrt(n)
    L = np.asarray(init, dtype=np.float64)
    if L.ndim != 2:
        raise ValueError(f"init array must be 2-D, shape (n_components, {d}); got shape {L.shape}.")
    if L.shape[1] != d:
        raise ValueError(f"The input dimensionality ({L.shape[1]}) of the given linear transformation `init` must "
                         f"match the dimensionality of the given inputs `X` ({d}).")
    if L.shape[0] > L.shape[1]:
        raise ValueError(f"The output dimensionality ({L.shape[0]}) of the given linear transformation `init` "
                         f"cannot be greater than its input dimensionality ({L.shape[1]}).")
    if L.shape[0] != n_components:
        raise ValueError(f"The preferred dimensionality of the projected space `n_components` ({n_components}) "
                         f"does not match the output dimensionality of the given linear transformation `init` "
                         f"({L.shape[0]})!")
    if not np.all(np.isfinite(L)):
        raise ValueError("init array contains NaN or infinity.")
    if not np.any(L):
        raise ValueError("init array is all zeros: L = 0 is a stationary point of the metric learning losses "
                         "(every distance is 0, the gradient vanishes), so nothing would be learned. Use "
                         "'auto', 'identity', 'pca', 'lda', 'random' or a nonzero matrix.")
    return L
