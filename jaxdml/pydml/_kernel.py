"""pyDML's kernel learners over jaxdml's: ``KLMNN``, ``KANMM``, ``KDMLMJ``, ``KDA``, ``KLLDA``, ``KODML``.

The kernel is pyDML's: ``kernel`` ("linear" by default, "poly", "rbf", "laplacian", any other name of
scikit-learn's ``pairwise_kernels`` or a callable on two rows, with ``kernel_params``), ``gamma``
(None: ``1 / n_features``), ``degree``, ``coef0``; ``kernel="precomputed"`` is not supported.
``transformer()`` is the (n_components, n_train) coefficient matrix and ``transform(X)`` goes through
the kernel with the training data.
"""

from __future__ import annotations

from .. import methods as _m
from ._base import (KernelDMLAlgorithm, check_int, iteration_metadata, kernel_settings, note, passed_when_set,
                    rate_settings, store)
from ._gradient import _IGNORED
from ._learners import _eig_metadata

__all__ = ["KLMNN", "KANMM", "KDMLMJ", "KDA", "KLLDA", "KODML"]


class KLMNN(KernelDMLAlgorithm):
    """Kernel large margin nearest neighbors, over :class:`jaxdml.KLMNN`.

    Parameters
    ----------
    num_dims : int, default=None
    learning_rate, eta0, max_iter, prec, tol, eta_thres, learn_inc, learn_dec
        As :class:`jaxdml.pydml.LMNN` (``max_iter``/``tol`` passed when set).
    initial_metric : default=None
        No counterpart (jaxdml starts from the feature-space distance; warns once when set).
    k : int, default=3
    mu : float, default=0.5
    kernel, gamma, degree, coef0, kernel_params
        See the module docstring.
    target_selection : {"kernel", "original"}, default="kernel"
        jaxdml selects the target neighbours in feature space ("kernel"); "original" warns once.

    Notes
    -----
    ``metadata()``: ``num_iters``, ``initial_error``, ``final_error``.
    """

    _target = _m.KLMNN
    _ignored = {**_IGNORED, "initial_metric": "jaxdml.KLMNN starts from the feature-space distance.",
                "target_selection": "jaxdml.KLMNN selects target neighbours in feature space ('kernel')."}

    def __init__(self, num_dims=None, learning_rate="adaptive", eta0=0.3, initial_metric=None, max_iter=100,
                 prec=1e-8, tol=1e-8, k=3, mu=0.5, learn_inc=1.01, learn_dec=0.5, eta_thres=1e-14, kernel="linear",
                 gamma=None, degree=3, coef0=1, kernel_params=None, target_selection="kernel"):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_components=check_int(self.num_dims, "num_dims", "KLMNN"), n_neighbors=self.k, mu=self.mu,
                    **kernel_settings(self, "KLMNN"), **rate_settings(self, "KLMNN"),
                    **passed_when_set(self, max_iter="max_iter", tol="tol"))

    def _metadata(self, est):
        return iteration_metadata(est, "initial_error", "final_error")


class KANMM(KernelDMLAlgorithm):
    """Kernel average neighborhood margin maximization, over :class:`jaxdml.KANMM`.

    Parameters
    ----------
    num_dims : int, default=None
    n_friends : int, default=3
    n_enemies : int, default=1
    kernel, gamma, degree, coef0, kernel_params
        See the module docstring.

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig``.
    """

    _target = _m.KANMM

    def __init__(self, num_dims=None, n_friends=3, n_enemies=1, kernel="linear", gamma=None, degree=3, coef0=1,
                 kernel_params=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_components=check_int(self.num_dims, "num_dims", "KANMM"), n_friends=self.n_friends,
                    n_enemies=self.n_enemies, **kernel_settings(self, "KANMM"))

    _metadata = _eig_metadata


class KDMLMJ(KernelDMLAlgorithm):
    """Kernel DMLMJ, over :class:`jaxdml.KDMLMJ`.

    Parameters
    ----------
    num_dims : int, default=None
    n_neighbors : int, default=3
    alpha, reg_tol : float
        As :class:`jaxdml.pydml.DMLMJ` (jaxdml's shrinkage ``reg`` instead; setting them warns once).
    kernel, gamma, degree, coef0, kernel_params
        See the module docstring.

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig``.
    """

    _target = _m.KDMLMJ
    _ignored = {"alpha": "both covariances are shrunk by jaxdml.KDMLMJ's reg.",
                "reg_tol": "both covariances are shrunk by jaxdml.KDMLMJ's reg."}

    def __init__(self, num_dims=None, n_neighbors=3, alpha=0.001, reg_tol=1e-10, kernel="linear", gamma=None,
                 degree=3, coef0=1, kernel_params=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_components=check_int(self.num_dims, "num_dims", "KDMLMJ"), n_neighbors=self.n_neighbors,
                    **kernel_settings(self, "KDMLMJ"))

    _metadata = _eig_metadata


class KDA(KernelDMLAlgorithm):
    """Kernel discriminant analysis, over :class:`jaxdml.KDA`.

    Parameters
    ----------
    solver : {"eigen"}, default="eigen"
    n_components : int, default=None
        At most (and by default) ``n_classes - 1``.
    tol, alpha : float
        pyDML's singularity threshold and absolute ridge; jaxdml adds a ridge relative to the
        within-class matrix (its ``reg``); setting them warns once.
    kernel, gamma, degree, coef0, kernel_params
        See the module docstring.
    """

    _target = _m.KDA
    _ignored = {"tol": "jaxdml.KDA adds a relative ridge (its reg).",
                "alpha": "jaxdml.KDA adds a relative ridge (its reg)."}

    def __init__(self, solver="eigen", n_components=None, tol=1e-4, alpha=1e-3, kernel="linear", gamma=None, degree=3,
                 coef0=1, kernel_params=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        if self.solver != "eigen":
            raise ValueError(f"KDA: solver must be 'eigen'; got {self.solver!r}.")
        return dict(n_components=check_int(self.n_components, "n_components", "KDA"), **kernel_settings(self, "KDA"))


class KLLDA(KernelDMLAlgorithm):
    """Kernel local linear discriminant analysis, over :class:`jaxdml.KLLDA`.

    Parameters
    ----------
    n_components : int, default=None
    affinity : {"neighbors", "local-scaling"}, default="neighbors"
    n_neighbors : int, default=1
        jaxdml's ``k``.
    tol, alpha : float
        As :class:`jaxdml.pydml.LLDA` (setting them warns once).
    kernel, gamma, degree, coef0, kernel_params
        See the module docstring.

    Notes
    -----
    ``metadata()``: ``num_dims``, ``acum_eig``.
    """

    _target = _m.KLLDA
    _ignored = {"tol": "jaxdml.KLLDA regularises with its reg.", "alpha": "jaxdml.KLLDA regularises with its reg."}

    def __init__(self, n_components=None, affinity="neighbors", n_neighbors=1, tol=1e-4, alpha=1e-3, kernel="linear",
                 gamma=None, degree=3, coef0=1, kernel_params=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        affinity = self.affinity
        if not isinstance(affinity, str):
            note("KLLDA", "affinity", "an affinity matrix has no counterpart; 'neighbors' is used.")
            affinity = "neighbors"
        return dict(n_components=check_int(self.n_components, "n_components", "KLLDA"), k=self.n_neighbors,
                    affinity=affinity, **kernel_settings(self, "KLLDA"))

    _metadata = _eig_metadata


class KODML(KernelDMLAlgorithm):
    """Kernel ordinal distance metric learning, over :class:`jaxdml.KODML`.

    Parameters
    ----------
    k, v, alpha, maxit, stepsize
        As :class:`jaxdml.pydml.LODML`.
    kernel, gamma, degree, coef0, kernel_params
        See the module docstring.
    """

    _target = _m.KODML
    _ignored = {"stepsize": "jaxdml.KODML is trained by L-BFGS, which chooses its own steps."}

    def __init__(self, k=5, v=15, alpha=0.01, maxit=1000, stepsize=0.1, kernel="linear", gamma=None, degree=3, coef0=1,
                 kernel_params=None):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_targets=self.k, n_impostors=self.v, alpha=self.alpha, **kernel_settings(self, "KODML"),
                    **passed_when_set(self, maxit="max_iter"))
