"""pyDML's closed-form learners and its fixed distances, over jaxdml's estimators: ``Euclidean``,
``Covariance``, ``Metric``, ``Transformer``, ``PCA``, ``LDA``, ``ANMM``, ``DMLMJ``, ``LLDA``."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_array

from .. import methods as _m
from ..linalg import components_from_metric
from ._base import DMLAlgorithm, acum_eig, check_int, note, store

__all__ = ["Euclidean", "Covariance", "Metric", "Transformer", "PCA", "LDA", "ANMM", "DMLMJ", "LLDA"]


def _eig_metadata(self, est, key="eigenvalues") -> dict:
    """``num_dims`` and ``acum_eig`` (share of the eigenvalues kept) of an eigen method; the eigenvalues
    of all directions come from a full-dimension fit on the training data when the fit kept fewer."""
    k = est.components_.shape[0]
    w = np.asarray(est.result_.info[key])
    if len(w) <= k and est.get_params().get("n_components") is not None:
        full = type(est)(**{**est.get_params(), "n_components": None})
        w = np.asarray((full.fit(self.X_) if self.y_ is None else full.fit(self.X_, self.y_)).result_.info[key])
    return {"num_dims": k, "acum_eig": acum_eig(w, k)}


class Euclidean(DMLAlgorithm):
    """The Euclidean distance (``L = I``), over :class:`jaxdml.Euclidean`."""

    _target = _m.Euclidean

    def __init__(self):
        pass


class Covariance(DMLAlgorithm):
    """The inverse-covariance Mahalanobis distance, over :class:`jaxdml.Covariance`.

    Parameters
    ----------
    tol : float, default=1e-15
        pyDML's determinant threshold for a singular covariance.
    reg_method : {"pseudoinverse", "addid"}, default="pseudoinverse"
    alpha : float, default=1e-3
        pyDML's ridge for ``reg_method="addid"``.

    Notes
    -----
    A non-singular covariance gives pyDML's result exactly. A singular one is handled as jaxdml does
    (eigenvalues floored at ``1e-10`` times the largest) instead of pyDML's pseudo-inverse or ridge;
    setting ``tol``, ``reg_method`` or ``alpha`` warns once.
    """

    _target = _m.Covariance
    _ignored = {name: "a singular covariance has its eigenvalues floored (jaxdml.Covariance's reg)."
                for name in ("tol", "reg_method", "alpha")}

    def __init__(self, tol=1e-15, reg_method="pseudoinverse", alpha=1e-3):
        store(self, locals())


class _Fixed(DMLAlgorithm):
    """A fixed matrix: ``metric()``/``transformer()`` work before ``fit``; ``fit(X)`` stores the data."""

    _param = ""

    def get_params(self, deep=True):
        """The matrix, under pyDML's parameter name."""
        return {self._param: self._value}

    def set_params(self, **params):
        """Set the matrix (pyDML's parameter name)."""
        for k, v in params.items():
            if k != self._param:
                raise ValueError(f"{type(self).__name__} has one parameter, {self._param!r}; got {k!r}.")
            self._value = v
        return self

    def fit(self, X=None, y=None):
        """Store the data ``X`` (for ``transform()``); ``y`` is ignored.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), optional
        y : ignored

        Returns
        -------
        self
        """
        est = self._target(self._value)
        if X is not None:
            X = check_array(X, dtype=np.float64)
            est.fit(X)
        self.estimator_, self.X_, self.y_ = est, X, None if y is None else np.asarray(y)
        return self

    def transform(self, X=None):
        """Apply the map; ``X=None`` transforms the data given to ``fit``."""
        if X is None and getattr(self, "X_", None) is None:
            raise ValueError(f"{type(self).__name__}.transform() without X needs fit(X) first.")
        if getattr(self, "X_", None) is None:
            return np.asarray(check_array(X, dtype=np.float64) @ self.transformer().T)
        return super().transform(X)


class Metric(_Fixed):
    """A distance given by a PSD metric matrix, over :class:`jaxdml.Metric`.

    Parameters
    ----------
    metric : array of shape (n_features, n_features)
        A positive semidefinite matrix ``M``.
    """

    _target, _param = _m.Metric, "metric"

    def __init__(self, metric):
        self._value = metric

    def metric(self):
        """The matrix ``M`` (symmetrised)."""
        M = np.asarray(self._value, dtype=np.float64)
        return 0.5 * (M + M.T)

    def transformer(self):
        """A square root ``L`` of ``M`` (``L^T L = M``)."""
        return components_from_metric(self.metric())


class Transformer(_Fixed):
    """A distance given by a linear map, over :class:`jaxdml.Transformer`.

    Parameters
    ----------
    transformer : array of shape (n_components, n_features)
    """

    _target, _param = _m.Transformer, "transformer"

    def __init__(self, transformer):
        self._value = transformer

    def transformer(self):
        """The map ``L``."""
        return np.asarray(self._value, dtype=np.float64)


def _count_for(ratios, thres) -> int:
    """The fewest leading directions whose explained share exceeds ``thres`` (scikit-learn's PCA rule)."""
    return int(np.searchsorted(np.cumsum(ratios), thres, side="right") + 1) if thres < 1.0 else len(ratios)


class PCA(DMLAlgorithm):
    """Principal component analysis, over :class:`jaxdml.PCA`.

    Parameters
    ----------
    num_dims : int, default=None
        Number of components (None: all). Ignored if ``thres`` is given.
    thres : float in (0, 1], default=None
        Keep the fewest components whose explained variance exceeds this share.

    Attributes
    ----------
    skpca_ : sklearn.decomposition.PCA
        scikit-learn's PCA holding the fitted components, variances and mean (``inverse_transform``).

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig`` (share of the variance kept).
    """

    _target = _m.PCA

    def __init__(self, num_dims=None, thres=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        if self.thres is None:
            return dict(n_components=check_int(self.num_dims, "num_dims", "PCA"))
        if not 0.0 < float(self.thres) <= 1.0:
            raise ValueError(f"PCA: thres must be in (0, 1]; got {self.thres!r}.")
        ratios = _m.PCA().fit(X).result_.info["explained_variance_ratio"]
        return dict(n_components=_count_for(ratios, float(self.thres)))

    def _metadata(self, est):
        info = est.result_.info
        return {"num_dims": est.components_.shape[0], "acum_eig": float(np.sum(info["explained_variance_ratio"]))}

    @property
    def skpca_(self):
        """scikit-learn's ``PCA`` with this fit's components (pyDML exposes its fitted one)."""
        from sklearn.decomposition import PCA as SkPCA

        info = self.result_.info
        L = self.transformer()
        sk = SkPCA(n_components=L.shape[0])
        sk.components_, sk.mean_, sk.n_components_ = L, self.X_.mean(axis=0), L.shape[0]
        sk.explained_variance_ = np.asarray(info["explained_variance"], dtype=np.float64)
        sk.explained_variance_ratio_ = np.asarray(info["explained_variance_ratio"], dtype=np.float64)
        sk.n_features_in_, sk.n_samples_ = self.X_.shape[1], self.X_.shape[0]
        sk.noise_variance_ = 0.0
        return sk


class LDA(DMLAlgorithm):
    """Linear discriminant analysis, over :class:`jaxdml.LDA`.

    Parameters
    ----------
    num_dims : int, default=None
        Number of components (None: ``n_classes - 1``). Ignored if ``thres`` is given.
    thres : float in (0, 1], default=None
        Keep the fewest discriminant directions whose share of the eigenvalues exceeds this.

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig``.
    """

    _target = _m.LDA

    def __init__(self, num_dims=None, thres=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        if self.thres is None:
            return dict(n_components=check_int(self.num_dims, "num_dims", "LDA"))
        w = np.asarray(_m.LDA().fit(X, y).result_.info["eigenvalues"], dtype=np.float64)
        return dict(n_components=_count_for(w / w.sum(), float(self.thres)))

    _metadata = _eig_metadata


class ANMM(DMLAlgorithm):
    """Average neighborhood margin maximization, over :class:`jaxdml.ANMM`.

    Parameters
    ----------
    num_dims : int, default=None
    n_friends : int, default=3
    n_enemies : int, default=1

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig`` (share of the eigenvalues of the margin matrix kept).
    """

    _target = _m.ANMM

    def __init__(self, num_dims=None, n_friends=3, n_enemies=1):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_components=check_int(self.num_dims, "num_dims", "ANMM"), n_friends=self.n_friends,
                    n_enemies=self.n_enemies)

    _metadata = _eig_metadata


class DMLMJ(DMLAlgorithm):
    """Distance metric learning through the maximization of the Jeffrey divergence, over :class:`jaxdml.DMLMJ`.

    Parameters
    ----------
    num_dims : int, default=None
    n_neighbors : int, default=3
    alpha : float, default=0.001
        pyDML's ridge for a near-singular covariance.
    reg_tol : float, default=1e-10
        pyDML's determinant threshold for that ridge.

    Notes
    -----
    jaxdml always shrinks both covariances (``jaxdml.DMLMJ``'s ``reg``, default 0.1, more accurate
    on the paper's data sets than the unregularised method); setting ``alpha`` or ``reg_tol`` warns
    once. ``metadata()``: ``num_dims``, ``acum_eig``.
    """

    _target = _m.DMLMJ
    _ignored = {"alpha": "both covariances are shrunk by jaxdml.DMLMJ's reg.",
                "reg_tol": "both covariances are shrunk by jaxdml.DMLMJ's reg."}

    def __init__(self, num_dims=None, n_neighbors=3, alpha=0.001, reg_tol=1e-10):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_components=check_int(self.num_dims, "num_dims", "DMLMJ"), n_neighbors=self.n_neighbors)

    _metadata = _eig_metadata


class LLDA(DMLAlgorithm):
    """Local linear discriminant analysis, over :class:`jaxdml.LLDA`.

    Parameters
    ----------
    n_components : int, default=None
    affinity : {"neighbors", "local-scaling"}, default="neighbors"
        A precomputed affinity matrix has no counterpart (warns once; "neighbors" is used).
    n_neighbors : int, default=1
        jaxdml's ``k``.
    tol, alpha : float
        pyDML's singularity threshold and ridge; jaxdml floors the eigenvalues of the local
        within-class scatter (its ``reg``) instead (setting them warns once).
    solver : {"sugiyama", "classic"}, default="sugiyama"
        Both give the same result (as in pyDML).

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig``.
    """

    _target = _m.LLDA
    _ignored = {"tol": "jaxdml.LLDA floors the local within-class eigenvalues (its reg).",
                "alpha": "jaxdml.LLDA floors the local within-class eigenvalues (its reg)."}

    def __init__(self, n_components=None, affinity="neighbors", n_neighbors=1, tol=1e-4, alpha=1e-3,
                 solver="sugiyama"):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        affinity = self.affinity
        if not isinstance(affinity, str):
            note(type(self).__name__, "affinity", "an affinity matrix has no counterpart; 'neighbors' is used.")
            affinity = "neighbors"
        return dict(n_components=check_int(self.n_components, "n_components", "LLDA"), k=self.n_neighbors,
                    affinity=affinity)

    _metadata = _eig_metadata
