"""Estimators of the closed-form methods: ANMM, DMLMJ, KDA, KANMM, KDMLMJ."""

from __future__ import annotations

import numbers

from .._validation import Interval
from ._base import BaseMetricLearner, KernelMetricLearner

__all__ = ["ANMM", "DMLMJ", "KDA", "KANMM", "KDMLMJ"]

_N_COMPONENTS = [Interval(numbers.Integral, 1, None), None]
_POSITIVE_INT = [Interval(numbers.Integral, 1, None)]


class ANMM(BaseMetricLearner):
    r"""Average Neighborhood Margin Maximization.

    Learns ``L`` with orthonormal rows maximising the average neighbourhood margin
    :math:`\operatorname{tr}(L(S - C)L^T)`: the summed squared distance of every sample to its
    ``n_enemies`` nearest other-class samples (scatter ``S``) minus that to its ``n_friends``
    nearest classmates (compactness ``C``), each averaged per sample
    (:func:`jaxdml.eigen.anmm_components`). Rows are the leading eigenvectors of ``S - C``.

    ANMM is a dimensionality reduction method: at full dimension ``L`` is orthogonal, so distances
    are Euclidean (a rotation). Set ``n_components`` below ``n_features`` to change the metric.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default: n_features).
    n_friends : int, default=3
        Size :math:`\xi` of the homogeneous neighbourhoods (compactness). Three same-class
        neighbours match the 3-NN classifier the metric is evaluated with.
    n_enemies : int, default=1
        Size :math:`\zeta` of the heterogeneous neighbourhoods (scatter). The nearest other-class
        sample defines the local margin; more enemies average in farther, less informative ones.
        A class too small for ``n_friends`` (or too large for ``n_enemies``) makes its samples
        use every classmate (every other-class sample), with a warning.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)
    result_ : FittedMetric (``info["eigenvalues"]`` of ``S - C``, ``info["margin"]``)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.ANMM(n_components=2).fit(X, y).transform(X).shape
    (150, 2)

    References
    ----------
    F. Wang, C. Zhang. Feature extraction by maximizing the average neighborhood margin. CVPR 2007.
    """

    _method = "anmm"
    _parameter_constraints = {"n_components": _N_COMPONENTS, "n_friends": _POSITIVE_INT, "n_enemies": _POSITIVE_INT}

    def __init__(self, n_components=None, *, n_friends=3, n_enemies=1):
        self.n_components = n_components
        self.n_friends = n_friends
        self.n_enemies = n_enemies


class DMLMJ(BaseMetricLearner):
    r"""Distance Metric Learning through the Maximization of the Jeffrey divergence.

    Models the differences between each sample and its ``n_neighbors`` nearest classmates
    (covariance :math:`\Sigma_S`) and its ``n_neighbors`` nearest other-class samples
    (:math:`\Sigma_D`) as zero-mean Gaussians and maximises the Jeffrey divergence between them
    after projection (:func:`jaxdml.eigen.dmlmj_components`): the rows of ``L`` are eigenvectors of
    :math:`\Sigma_S^{-1}\Sigma_D` with the largest :math:`\lambda + 1/\lambda`, each
    :math:`\Sigma_S`-normalised and scaled by :math:`\sqrt{\lambda}` (at full dimension
    :math:`M = \Sigma_S^{-1}\Sigma_D\Sigma_S^{-1}`). The scaling and the default ridge are this
    library's choices for k-NN accuracy; ``reg=0`` gives the paper's metric
    :math:`M = \Sigma_S^{-1}` (see ``reg``).

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default: n_features).
    n_neighbors : int, default=3
        Size of the positive and negative neighbourhoods (the k of the k-NN classifier).
    reg : float, default=0.1
        Shrinkage: both covariances get :math:`\epsilon \operatorname{tr}(\Sigma_S)/d` added to
        their diagonal. It makes :math:`\Sigma_S` invertible and stabilises the estimate of the
        weak directions. ``reg=0`` gives the paper's (and pyDML's) method: rows
        :math:`\Sigma_S`-normalised, without the :math:`\sqrt{\lambda}` scaling, so that at full
        dimension :math:`M = \Sigma_S^{-1}` on the span of the data (a floor at 1e-14 remains
        for a singular :math:`\Sigma_S`). The default (``reg > 0`` with the
        :math:`\sqrt{\lambda}` scaling) departs from the paper on both counts. Directions with
        no data (both covariances zero, e.g. a constant column) get zero rows and rank last.
        With the default the mean 10-fold 3-NN accuracy on the 12 KEEL datasets of the paper's
        basic experiment is 0.866 (0.865 before directions without data got zero rows: monk-2
        0.984 -> 1.000, balance 0.966 -> 0.965; 0.856 to 0.864 for ``reg`` between 1e-6 and 0.3
        then).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    metric_ : ndarray of shape (n_features, n_features)
    result_ : FittedMetric (``info["eigenvalues"]``: the :math:`\lambda`, ranked by
        :math:`\lambda + 1/\lambda`; ``info["objective"]``: :math:`J(L)`)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.DMLMJ().fit(X, y).components_.shape
    (4, 4)

    References
    ----------
    B. Nguyen, C. Morell, B. De Baets. Supervised distance metric learning through maximization of
    the Jeffrey divergence. Pattern Recognition 64 (2017), 215-225.
    """

    _method = "dmlmj"
    _parameter_constraints = {"n_components": _N_COMPONENTS, "n_neighbors": _POSITIVE_INT,
                              "reg": [Interval(numbers.Real, 0, None)]}

    def __init__(self, n_components=None, *, n_neighbors=3, reg=0.1):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.reg = reg


_KERNEL_DOC = """kernel : {"rbf", "linear", "poly", "laplacian"} or callable, default="rbf"
        ``k(x, y)``; a callable gets two arrays and returns their kernel matrix (it must be
        symmetric and finite, else ``fit`` raises ``ValueError``).
    gamma : float, default=None
        For rbf, poly and laplacian; None means ``1 / n_features``.
    degree : int, default=3
        For poly.
    coef0 : float, default=1
        For poly."""

_KERNEL_ATTRIBUTES = """

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_train)
        The coefficients ``A``: ``transform(X) = K(X, X_fit_) @ components_.T``.
    X_fit_ : ndarray of shape (n_train, n_features)
    kernel_params_ : dict
        The resolved ``gamma``, ``degree``, ``coef0``.
    result_ : KernelFittedMetric
"""


class KDA(KernelMetricLearner):
    __doc__ = r"""Kernel Discriminant Analysis: LDA in the feature space of a kernel.

    Learns coefficients ``A`` (``components_``, shape (n_components, n_train)) whose rows are the
    leading eigenvectors of :math:`V_\epsilon^{-1} U`, the within- and between-class scatter of the
    kernel columns (:func:`jaxdml.eigen.kda_components`); ``transform(X) = K(X, X_fit_) A^T``.
    With the linear kernel it reproduces :class:`LDA`.

    Parameters
    ----------
    n_components : int, default=None
        Default and maximum: ``n_classes - 1``.
    """ + _KERNEL_DOC + r"""
    reg : float, default=1e-6
        Ridge added to the within-class matrix ``V``, relative to its mean eigenvalue
        (``V`` is always singular in feature space).""" + _KERNEL_ATTRIBUTES + r"""
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.KDA().fit(X, y).transform(X).shape
    (150, 2)

    References
    ----------
    S. Mika, G. Ratsch, J. Weston, B. Scholkopf, K.-R. Muller. Fisher discriminant analysis with
    kernels. IEEE Neural Networks for Signal Processing IX, 1999.
    """

    _method = "kda"
    _parameter_constraints = {**KernelMetricLearner._parameter_constraints, "n_components": _N_COMPONENTS,
                              "reg": [Interval(numbers.Real, 0, None, closed="neither")]}

    def __init__(self, n_components=None, *, kernel="rbf", gamma=None, degree=3, coef0=1, reg=1e-6):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.reg = reg


class KANMM(KernelMetricLearner):
    __doc__ = r"""Kernel ANMM: ANMM in the feature space of a kernel.

    Neighbourhoods use feature-space distances :math:`K_{ii} + K_{jj} - 2K_{ij}`; the map
    :math:`L\phi(x) = A k(x)` maximises the feature-space average neighbourhood margin subject
    to :math:`LL^T = AKA^T = I` (:func:`jaxdml.eigen.kanmm_components`). With the linear kernel it
    reproduces :class:`ANMM`.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default and maximum: n_features).
    n_friends : int, default=3
    n_enemies : int, default=1
        As in :class:`ANMM`.
    """ + _KERNEL_DOC + _KERNEL_ATTRIBUTES + r"""
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.KANMM(n_components=2).fit(X, y).transform(X).shape
    (150, 2)

    References
    ----------
    F. Wang, C. Zhang. Feature extraction by maximizing the average neighborhood margin. CVPR 2007.
    """

    _method = "kanmm"
    _parameter_constraints = {**KernelMetricLearner._parameter_constraints, "n_components": _N_COMPONENTS,
                              "n_friends": _POSITIVE_INT, "n_enemies": _POSITIVE_INT}

    def __init__(self, n_components=None, *, n_friends=3, n_enemies=1, kernel="rbf", gamma=None, degree=3,
                 coef0=1):
        self.n_components = n_components
        self.n_friends = n_friends
        self.n_enemies = n_enemies
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0


class KDMLMJ(KernelMetricLearner):
    __doc__ = r"""Kernel DMLMJ: DMLMJ in the feature space of a kernel.

    Neighbourhoods use feature-space distances; the coefficients ``A`` maximise the Jeffrey
    divergence of the projected difference spaces (:func:`jaxdml.eigen.kdmlmj_components`).
    With the linear kernel it reproduces :class:`DMLMJ`.

    Parameters
    ----------
    n_components : int, default=None
        Output dimension (default and maximum: n_features).
    n_neighbors : int, default=3
    reg : float, default=0.1
        As in :class:`DMLMJ` (the ridge is defined in feature space).
    """ + _KERNEL_DOC + _KERNEL_ATTRIBUTES + r"""
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.KDMLMJ().fit(X, y).transform(X).shape
    (150, 4)

    References
    ----------
    B. Nguyen, C. Morell, B. De Baets. Supervised distance metric learning through maximization of
    the Jeffrey divergence. Pattern Recognition 64 (2017), 215-225.
    """

    _method = "kdmlmj"
    _parameter_constraints = {**KernelMetricLearner._parameter_constraints, "n_components": _N_COMPONENTS,
                              "n_neighbors": _POSITIVE_INT, "reg": [Interval(numbers.Real, 0, None)]}

    def __init__(self, n_components=None, *, n_neighbors=3, reg=0.1, kernel="rbf", gamma=None, degree=3, coef0=1):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.reg = reg
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
