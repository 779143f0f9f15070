"""LFDA: local Fisher discriminant analysis (record, solve step, estimator)."""

from __future__ import annotations

import numbers

from ..._runtime._device import x64_call
from ..._validation import Interval, Options
from ...eigen._lfda import EMBEDDING_TYPES, lfda_components
from ..core._base import BaseMetricLearner
from ..core._record import Method

__all__ = ["LFDA", "LFDA_METHOD"]

_CONSTRAINTS = {
    "k": [Interval(numbers.Integral, 1, None)],
    "embedding_type": [Options(set(EMBEDDING_TYPES))],
    "reg": [Interval(numbers.Real, 0, 1, closed="left")],
}


def _lfda(X, codes, n_classes, *, n_components, k, embedding_type, reg, **_):
    """The generalised eigenproblem of the local scatters, in float64 (class by class, memory-linear)."""
    L, w = x64_call(lfda_components, X, codes, n_classes, n_components, k, embedding_type, reg)
    return dict(L=L, info=dict(eigenvalues=w[:n_components]))


LFDA_METHOD = Method("lfda", "L", _lfda, defaults=dict(k=7, embedding_type="weighted", reg=1e-6),
                     constraints=_CONSTRAINTS, estimator="LFDA")


class LFDA(BaseMetricLearner):
    r"""Local Fisher Discriminant Analysis (Sugiyama, 2007).

    Fisher's criterion on *local* scatters: pairs of the same class are weighted by the affinity
    :math:`A_{ij} = \exp(-\|x_i - x_j\|^2 / (\sigma_i \sigma_j))` (:math:`\sigma_i` the distance
    of :math:`x_i` to its ``k``-th nearest neighbour in its class), so that multimodal classes
    keep their local structure. With the local within-class scatter
    :math:`S^{(w)} = \frac12 \sum_{ij} W^{(w)}_{ij} (x_i - x_j)(x_i - x_j)^T`,
    :math:`W^{(w)}_{ij} = A_{ij}/n_c` within class :math:`c` (0 across), and the local
    between-class scatter with :math:`W^{(b)}_{ij} = A_{ij}(1/n - 1/n_c)` within and :math:`1/n`
    across classes, the rows of ``components_`` solve
    :math:`S^{(b)} v = \lambda S^{(w)} v` for the largest :math:`\lambda`. The scatters are built
    class by class as Laplacian forms :math:`X^T (D - W) X` (memory linear in ``n``); the
    eigenproblem is real and symmetric (``S_w`` symmetrised and regularised), in float64.

    Parameters
    ----------
    n_components : int, default=None
        Dimension of the embedding (default: n_features).
    k : int, default=7
        The neighbour that sets the local scaling :math:`\sigma_i` (clipped to the class size).
    embedding_type : {"weighted", "orthonormalized", "plain"}, default="weighted"
        ``"weighted"``: eigenvectors scaled by :math:`\sqrt{\lambda}`; ``"orthonormalized"``: an
        orthonormal basis of the same subspace; ``"plain"``: the eigenvectors
        (:math:`V^T S^{(w)} V = I`).
    reg : float, default=1e-6
        Relative eigenvalue floor of the (standardised) local within-class scatter.
    preprocessor : array-like or callable, default=None
        metric-learn's preprocessor: with it, a 1-D ``X`` in ``fit`` and ``transform`` holds sample
        identifiers, read as ``preprocessor[X]`` (an array: integer indices) or ``preprocessor(X)`` (a
        callable: any identifiers it maps to rows, e.g. file names).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    eigenvalues_ : ndarray of shape (n_components,)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.LFDA(n_components=2).fit(X, y).transform(X).shape
    (150, 2)

    References
    ----------
    M. Sugiyama. Dimensionality reduction of multimodal labeled data by local Fisher discriminant
    analysis. JMLR 8:1027-1061, 2007.
    """

    _record = LFDA_METHOD
    _parameter_constraints = {"n_components": [Interval(numbers.Integral, 1, None), None], **_CONSTRAINTS,
                              "preprocessor": ["array-like", "callable", None]}

    def __init__(self, n_components=None, *, k=7, embedding_type="weighted", reg=1e-6, preprocessor=None):
        self.preprocessor = preprocessor
        self.n_components = n_components
        self.k = k
        self.embedding_type = embedding_type
        self.reg = reg

    def _store(self, result):
        super()._store(result)
        self.eigenvalues_ = result.info["eigenvalues"]
