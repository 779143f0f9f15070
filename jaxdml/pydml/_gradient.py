"""pyDML's gradient learners over jaxdml's: ``NCA``, ``NCMML``, ``NCMC``, ``LMNN``, ``MCML``, ``LDML``,
``LODML``, ``CMOML``.

pyDML trains each with its own (stochastic or batch) gradient descent and an adaptive step; jaxdml
minimises the same objective with its optax driver. The translation is the same for all of them:

* ``learning_rate="adaptive"`` (pyDML's default) is jaxdml's default optimiser for the method, which
  chooses its own steps (``eta0`` unused); ``"constant"`` is full-batch gradient descent with step
  ``eta0`` (``optimizer="sgd"``);
* ``max_iter`` and ``tol`` are passed when set to a value other than pyDML's default (pyDML's defaults
  are sized for its own solver; jaxdml's apply otherwise);
* ``prec``, ``eta_thres``, ``learn_inc``, ``learn_dec``, ``descent_method`` (and LMNN's
  ``soft_comp_interval``) tune pyDML's own loop and have no counterpart: setting one warns once.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import methods as _m
from ._base import (DMLAlgorithm, check_int, initial_map, iteration_metadata, note, passed_when_set, rate_settings,
                    store)

__all__ = ["NCA", "NCMML", "NCMC", "LMNN", "MCML", "LDML", "LODML", "CMOML"]

_LOOP = "it tunes pyDML's own gradient loop; jaxdml's optimiser sets its own steps and stopping test."
_IGNORED = {name: _LOOP for name in ("prec", "eta_thres", "learn_inc", "learn_dec", "descent_method")}


def _solver(self, owner) -> dict:
    """jaxdml's optimiser, step and budget for pyDML's learning_rate/eta0/max_iter/tol."""
    return {**rate_settings(self, owner), **passed_when_set(self, max_iter="max_iter", tol="tol")}


@functools.cache
def _nca_objective():
    import jax

    from ..losses import nca

    return jax.jit(nca)


def nca_expectance(L, X, y) -> float:
    """NCA's expected leave-one-out accuracy of ``(X, y)`` under the map ``L`` (jaxdml's NCA loss,
    without its penalty, negated)."""
    from ..problems import make_problem

    prob = make_problem(X, y, n_neighbors=None)
    return -float(_nca_objective()(np.asarray(L, dtype=prob.X.dtype), prob))


class NCA(DMLAlgorithm):
    """Neighbourhood components analysis, over :class:`jaxdml.NCA`.

    Parameters
    ----------
    num_dims : int, default=None
    learning_rate : {"adaptive", "constant"}, default="adaptive"
    eta0 : float, default=0.3
    initial_transform : None, "euclidean", "scale" or array (num_dims, n_features), default=None
        None: jaxdml's ``init="auto"`` (the identity at full dimension).
    max_iter : int, default=100
    prec, tol, descent_method, eta_thres, learn_inc, learn_dec
        See the module docstring (``tol`` is passed when set).

    Notes
    -----
    jaxdml's NCA adds a small Frobenius penalty (``reg="auto"``: 1e-4, 0 on its large-data path).
    ``metadata()``: ``num_iters``, ``initial_expectance`` (the expected leave-one-out accuracy under
    the Euclidean distance, pyDML's starting point) and ``final_expectance`` (under the learned map),
    both exact.
    """

    _target = _m.NCA
    _ignored = _IGNORED

    def __init__(self, num_dims=None, learning_rate="adaptive", eta0=0.3, initial_transform=None, max_iter=100,
                 prec=1e-8, tol=1e-8, descent_method="SGD", eta_thres=1e-14, learn_inc=1.01, learn_dec=0.5):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        n = check_int(self.num_dims, "num_dims", "NCA")
        return dict(n_components=n, init=initial_map(self.initial_transform, X, n, metric=False, owner="NCA"),
                    **_solver(self, "NCA"))

    def _metadata(self, est):
        return {"num_iters": int(est.result_.n_iter),
                "initial_expectance": nca_expectance(np.eye(self.X_.shape[1]), self.X_, self.y_),
                "final_expectance": nca_expectance(est.components_, self.X_, self.y_)}


def _ncm_metadata(self, est):
    """pyDML's expectance of NCMML/NCMC: the sum over the samples of the log-probability of the true
    class, ``-n`` times jaxdml's objective (the mean negative log-likelihood)."""
    return iteration_metadata(est, "initial_expectance", "final_expectance", scale=-float(len(self.X_)))


class NCMML(DMLAlgorithm):
    """Nearest class mean metric learning, over :class:`jaxdml.NCMML`.

    Parameters
    ----------
    num_dims : int, default=None
    learning_rate : {"adaptive", "constant"}, default="adaptive"
    eta0 : float, default=0.3
    initial_transform : None, "euclidean", "scale" or array, default=None
    max_iter : int, default=300
    tol, prec, descent_method, eta_thres, learn_inc, learn_dec
        See the module docstring.

    Notes
    -----
    ``metadata()``: ``num_iters``, ``initial_expectance``, ``final_expectance`` (the summed
    log-probability of the true class, at the start and the end of the fit).
    """

    _target = _m.NCMML
    _ignored = _IGNORED

    def __init__(self, num_dims=None, learning_rate="adaptive", eta0=0.3, initial_transform=None, max_iter=300,
                 tol=1e-15, prec=1e-15, descent_method="SGD", eta_thres=1e-14, learn_inc=1.01, learn_dec=0.5):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        n = check_int(self.num_dims, "num_dims", "NCMML")
        return dict(n_components=n, init=initial_map(self.initial_transform, X, n, metric=False, owner="NCMML"),
                    **_solver(self, "NCMML"))

    _metadata = _ncm_metadata


class NCMC(DMLAlgorithm):
    """Nearest class with multiple centroids metric learning, over :class:`jaxdml.NCMC`.

    Parameters
    ----------
    num_dims : int, default=None
    centroids_num : int or list of int, default=3
        A list (one count per class) has no counterpart in jaxdml's learner, which takes one count
        for every class: its largest entry is used (warns once).
    learning_rate, eta0, initial_transform, max_iter, tol, prec, descent_method, eta_thres, learn_inc, learn_dec
        As :class:`NCMML`.
    **kmeans_kwargs
        k-means arguments: ``random_state`` is passed on; the others warn once.

    Notes
    -----
    ``metadata()`` as :class:`NCMML`.
    """

    _target = _m.NCMC
    _ignored = _IGNORED

    def __init__(self, num_dims=None, centroids_num=3, learning_rate="adaptive", eta0=0.3, initial_transform=None,
                 max_iter=300, tol=1e-15, prec=1e-15, descent_method="SGD", eta_thres=1e-14, learn_inc=1.01,
                 learn_dec=0.5, **kmeans_kwargs):
        store(self, {k: v for k, v in locals().items() if k != "kmeans_kwargs"})
        self.kmeans_kwargs = dict(kmeans_kwargs)

    def get_params(self, deep=True):
        """pyDML's parameters, the k-means keyword arguments included."""
        return {**super().get_params(deep), **self.kmeans_kwargs}

    def set_params(self, **params):
        """Set parameters (unknown names are k-means keyword arguments, as in the constructor)."""
        own = set(super().get_params(deep=False))
        for k, v in params.items():
            if k in own:
                setattr(self, k, v)
            else:
                self.kmeans_kwargs[k] = v
        return self

    def _jaxdml_params(self, X, y):
        k = self.centroids_num
        if not np.isscalar(k):
            note("NCMC", "centroids_num", "one centroid count per class has no counterpart in jaxdml's NCMC "
                                          "learner; the largest count is used for every class.")
            k = int(max(k))
        extra = {key: v for key, v in self.kmeans_kwargs.items() if key != "random_state"}
        if extra:
            note("NCMC", "kmeans_kwargs", f"k-means arguments {sorted(extra)} have no counterpart; ignored.")
        n = check_int(self.num_dims, "num_dims", "NCMC")
        return dict(n_components=n, centroids_num=k, random_state=self.kmeans_kwargs.get("random_state"),
                    init=initial_map(self.initial_transform, X, n, metric=False, owner="NCMC"), **_solver(self, "NCMC"))

    _metadata = _ncm_metadata


class LMNN(DMLAlgorithm):
    """Large margin nearest neighbors, over :class:`jaxdml.LMNN`.

    Parameters
    ----------
    num_dims : int, default=None
        Ignored with ``solver="SDP"`` (as in pyDML).
    learning_rate, eta0, max_iter, prec, tol, eta_thres, learn_inc, learn_dec
        See the module docstring.
    initial_metric : None, "euclidean", "scale" or array, default=None
        A PSD metric with ``solver="SDP"``, a linear map with ``"SGD"``.
    k : int, default=3
        Target neighbours (jaxdml's ``n_neighbors``).
    mu : float, default=0.5
    soft_comp_interval : int, default=1
        No counterpart (warns once when set).
    solver : {"SDP", "SGD"}, default="SDP"
        "SDP": projected sub-gradient on the metric over the PSD cone (jaxdml's
        ``solver="projected"``); "SGD": gradient descent on the linear map (``solver="gradient"``).

    Notes
    -----
    ``metadata()``: ``num_iters``, ``initial_error``, ``final_error`` (jaxdml's LMNN objective).
    """

    _target = _m.LMNN
    _ignored = {**_IGNORED, "soft_comp_interval": _LOOP}

    def __init__(self, num_dims=None, learning_rate="adaptive", eta0=0.3, initial_metric=None, max_iter=100,
                 prec=1e-8, tol=1e-8, k=3, mu=0.5, soft_comp_interval=1, learn_inc=1.01, learn_dec=0.5,
                 eta_thres=1e-14, solver="SDP"):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        if self.solver not in ("SDP", "SGD"):
            raise ValueError(f"LMNN: solver must be 'SDP' or 'SGD'; got {self.solver!r}.")
        sdp = self.solver == "SDP"
        n = None if sdp else check_int(self.num_dims, "num_dims", "LMNN")
        return dict(n_components=n, n_neighbors=self.k, mu=self.mu, solver="projected" if sdp else "gradient",
                    init=initial_map(self.initial_metric, X, n, metric=sdp, owner="LMNN"), **_solver(self, "LMNN"))

    def _metadata(self, est):
        return iteration_metadata(est, "initial_error", "final_error")


class _Collapse(DMLAlgorithm):
    """MCML and LDML: a metric (``M = L^T L``) trained by jaxdml's driver on the linear map."""

    _ignored = _IGNORED

    def _jaxdml_params(self, X, y):
        owner = type(self).__name__
        n = check_int(self.num_dims, "num_dims", owner)
        return dict(n_components=n, init=initial_map(self.initial_metric, X, n, metric=True, owner=owner),
                    **_solver(self, owner))

    def _metadata(self, est):
        return iteration_metadata(est, "initial_error", "final_error")


class MCML(_Collapse):
    """Maximally collapsing metric learning, over :class:`jaxdml.MCML`.

    Parameters
    ----------
    num_dims : int, default=None
    learning_rate, eta0, max_iter, prec, tol, descent_method, eta_thres, learn_inc, learn_dec
        See the module docstring (jaxdml trains ``L`` with ``M = L^T L``, whatever ``descent_method``).
    initial_metric : None, "euclidean", "scale" or PSD array, default=None

    Notes
    -----
    ``metadata()``: ``num_iters``, ``initial_error``, ``final_error`` (jaxdml's objective).
    """

    _target = _m.MCML

    def __init__(self, num_dims=None, learning_rate="adaptive", eta0=0.01, initial_metric=None, max_iter=20,
                 prec=0.01, tol=0.01, descent_method="SDP", eta_thres=1e-14, learn_inc=1.01, learn_dec=0.5):
        store(self, locals())


class LDML(_Collapse):
    """Logistic discriminant metric learning, over :class:`jaxdml.LDML`.

    Parameters
    ----------
    num_dims : int, default=None
    b : float, default=1e-3
        The logistic threshold on squared distances (jaxdml's ``b``).
    learning_rate, eta0, initial_metric, max_iter, prec, tol, descent_method, eta_thres, learn_inc, learn_dec
        As :class:`MCML`.

    Notes
    -----
    ``metadata()`` as :class:`MCML`.
    """

    _target = _m.LDML

    def __init__(self, num_dims=None, b=1e-3, learning_rate="adaptive", eta0=0.3, initial_metric=None, max_iter=10,
                 prec=1e-3, tol=1e-3, descent_method="SDP", eta_thres=1e-14, learn_inc=1.01, learn_dec=0.5):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return {**super()._jaxdml_params(X, y), "b": self.b}


class LODML(DMLAlgorithm):
    """Linear ordinal distance metric learning, over :class:`jaxdml.LODML`.

    Parameters
    ----------
    k : int, default=5
        Same-grade neighbours (jaxdml's ``n_targets``).
    v : int, default=15
        Other-grade neighbours (jaxdml's ``n_impostors``).
    alpha : float, default=0.01
    maxit : int, default=1000
        Passed as ``max_iter`` when set.
    stepsize : float, default=0.1
        No counterpart (jaxdml's L-BFGS; warns once when set).
    """

    _target = _m.LODML
    _ignored = {"stepsize": "jaxdml.LODML is trained by L-BFGS, which chooses its own steps."}

    def __init__(self, k=5, v=15, alpha=0.01, maxit=1000, stepsize=0.1):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_targets=self.k, n_impostors=self.v, alpha=self.alpha, **passed_when_set(self, maxit="max_iter"))


class CMOML(DMLAlgorithm):
    """Chain-based multiple-output metric learning for ordinal data, over :class:`jaxdml.CMOML`.

    Parameters
    ----------
    n_dims : int, default=None
    chain_size : int, default=3
    neighborhood_size : int, default=50
    workers, n_jobs : int
        pyDML's parallel differential evolution; jaxdml optimises a smoothed chain count by L-BFGS
        (see :class:`jaxdml.CMOML`); setting them warns once.

    Notes
    -----
    ``metadata()``: ``initial_objective``, ``final_objective`` (jaxdml's smoothed objective).
    """

    _target = _m.CMOML
    _ignored = {"workers": "jaxdml.CMOML is trained by L-BFGS on one process.",
                "n_jobs": "jaxdml.CMOML is trained by L-BFGS on one process."}

    def __init__(self, n_dims=None, chain_size=3, neighborhood_size=50, workers=1, n_jobs=-1):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(n_components=check_int(self.n_dims, "n_dims", "CMOML"), chain_size=self.chain_size,
                    neighborhood_size=self.neighborhood_size)

    def _metadata(self, est):
        meta = iteration_metadata(est, "initial_objective", "final_objective")
        meta.pop("num_iters")
        return meta
