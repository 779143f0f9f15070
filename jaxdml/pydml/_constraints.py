"""pyDML's learners from pairs of samples (or labels turned into pairs), over jaxdml's estimators:
``GMML``, ``ITML``, ``LSI``, ``DML_eig``."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.validation import check_array

from .. import methods as _m
from .._validation import Interval
from ._base import DMLAlgorithm, check_pydml_params, note, passed_when_set, store

__all__ = ["GMML", "ITML", "LSI", "DML_eig"]


class GMML(DMLAlgorithm):
    """Geometric mean metric learning, over :class:`jaxdml.GMML`.

    Parameters
    ----------
    geodesic_step : float, default=0.5
        jaxdml's ``t``.
    reg : float, default=1e-6
        jaxdml's ``reg`` is relative to the mean eigenvalue of the similarity scatter (pyDML's is
        absolute); a value other than the default is passed as the relative one.
    constraint_factor : int, default=40
        jaxdml uses every pair (exact class statistics); setting it warns once.
    prior : array, default=None
        The prior metric (None: the identity).
    auto_thresh : float, default=1e-9
        Not used (warns once when set).
    """

    _target = _m.GMML
    _ignored = {"constraint_factor": "jaxdml.GMML uses every pair of samples (exact class statistics).",
                "auto_thresh": "jaxdml.GMML needs no automatic threshold."}

    def __init__(self, geodesic_step=0.5, reg=1e-6, constraint_factor=40, prior=None, auto_thresh=1e-9):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return dict(t=self.geodesic_step, reg=self.reg, prior="identity" if self.prior is None else self.prior)


class ITML(DMLAlgorithm):
    """Information theoretic metric learning, over :class:`jaxdml.ITML`.

    Parameters
    ----------
    initial_metric : array, default=None
        The prior ``M0`` (None: the identity).
    upper_bound, lower_bound : float, default=None
        pyDML's bounds for dissimilar and similar pairs (jaxdml's ``bounds=(lower_bound,
        upper_bound)`` when both are given; otherwise both come from the percentiles).
    num_constraints : int, default=None
        Total pairs (half similar, half dissimilar; None: jaxdml's default count).
    gamma : float, default=1.0
    tol : float, default=0.001
        Passed when set (stop on the relative change of the dual variables over a sweep).
    max_iter : int, default=100000
        pyDML counts single projections, jaxdml sweeps over the constraints: a value other than
        the default is converted to sweeps.
    low_perc, up_perc : float, default=5, 95
        Percentiles of the squared distances that give the bounds.
    """

    _target = _m.ITML

    def __init__(self, initial_metric=None, upper_bound=None, lower_bound=None, num_constraints=None, gamma=1.0,
                 tol=0.001, max_iter=100000, low_perc=5, up_perc=95):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        kw = dict(gamma=self.gamma, percentiles=(float(self.low_perc), float(self.up_perc)),
                  prior="identity" if self.initial_metric is None else self.initial_metric, **passed_when_set(
                      self, tol="tol"))
        if self.num_constraints is not None:
            kw["n_constraints"] = max(1, int(self.num_constraints) // 2)
        if (self.upper_bound is None) != (self.lower_bound is None):
            note("ITML", "bounds", "one bound alone has no counterpart; both come from the percentiles.")
        elif self.upper_bound is not None:
            kw["bounds"] = (float(self.lower_bound), float(self.upper_bound))
        if "max_iter" in passed_when_set(self, max_iter="max_iter"):
            n_pairs = 2 * kw.get("n_constraints", min(20 * len(np.unique(y)) ** 2, 500))
            kw["max_iter"] = max(1, -(-int(self.max_iter) // n_pairs))
        return kw


def _pairs_from_side(side, n: int):
    """Index pairs and +1/-1 labels from pyDML's side information ``[S]`` or ``[S, D]`` (boolean (n, n)
    matrices of similar and dissimilar pairs; without ``D``, every pair not in ``S``)."""
    S = np.asarray(side[0], dtype=bool)
    D = np.asarray(side[1], dtype=bool) if len(side) > 1 else ~S
    if S.shape != (n, n) or D.shape != (n, n):
        raise ValueError(f"LSI: the side information must be (n, n) boolean matrices with n = {n}; got "
                         f"{S.shape} and {D.shape}.")
    iu = np.triu_indices(n, k=1)
    sim, dis = S[iu] | S.T[iu], D[iu] | D.T[iu]
    keep = sim | dis
    pairs = np.stack([iu[0][keep], iu[1][keep]], axis=1)
    return pairs, np.where(sim[keep], 1, -1)


class LSI(DMLAlgorithm):
    """Learning with side information, over :class:`jaxdml.LSI`.

    Parameters
    ----------
    initial_metric : array, default=None
        No counterpart (jaxdml starts from its own point; warns once when set).
    learning_rate : {"adaptive", "constant"}, default="adaptive"
    eta0 : float, default=0.1
        jaxdml's projected gradient uses Barzilai-Borwein steps; setting these warns once.
    max_iter : int, default=100
        Passed when set (projected-gradient steps).
    max_proj_iter, itproj_err, err : float
        pyDML's inner projection loop and tolerance; jaxdml stops on a certified duality gap
        (its ``tol``); setting them warns once.
    supervised : bool, default=False
        True: ``fit(X, y)`` with labels. False: ``fit(X, side)`` with ``side = [S, D]`` or ``[S]``,
        boolean (n, n) matrices of similar (and dissimilar) pairs.

    Notes
    -----
    jaxdml's LSI adds its regularisation (``reg=0.1``). ``metadata()``: ``initial_objective``,
    ``final_objective``, ``final_constraint``, ``num_its`` (jaxdml's objective).
    """

    _target = _m.LSI
    _ignored = {"initial_metric": "jaxdml.LSI starts from its own initial metric.",
                "learning_rate": "jaxdml.LSI takes Barzilai-Borwein steps.",
                "eta0": "jaxdml.LSI takes Barzilai-Borwein steps.",
                "max_proj_iter": "jaxdml.LSI projects exactly.", "itproj_err": "jaxdml.LSI projects exactly.",
                "err": "jaxdml.LSI stops on a certified duality gap (its tol)."}

    def __init__(self, initial_metric=None, learning_rate="adaptive", eta0=0.1, max_iter=100, max_proj_iter=5000,
                 itproj_err=1e-3, err=1e-3, supervised=False):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return passed_when_set(self, max_iter="max_iter")

    def fit(self, X, side):
        """Fit from labels (``supervised=True``) or from side information ``[S, D]``/``[S]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        side : array-like of shape (n_samples,) or list of boolean (n_samples, n_samples) matrices

        Returns
        -------
        self
        """
        check_pydml_params(self)  # its arguments first, whatever the side information
        if self.supervised:
            return super().fit(X, side)
        if np.ndim(side) == 1 and len(side) == len(X) and not isinstance(side[0], (list, tuple, np.ndarray)):
            raise ValueError("LSI(supervised=False) takes side information [S, D] or [S] (boolean (n, n) "
                             "matrices of similar and dissimilar pairs); for labels use LSI(supervised=True).")
        X = check_array(X, dtype=np.float64)
        pairs, labels = _pairs_from_side(side, len(X))
        est = self._make(X, None).set_params(preprocessor=X)
        est.fit(pairs, labels)
        self.estimator_, self.X_, self.y_ = est, X, None
        return self

    def _metadata(self, est):
        meta = {"initial_objective": np.nan, "final_objective": np.nan, "num_its": int(est.result_.n_iter)}
        hist = np.asarray(est.result_.loss_history)
        if hist.size:
            meta.update(initial_objective=float(hist[0]), final_objective=float(est.result_.loss))
        meta["final_constraint"] = float(est.result_.info.get("constraint", np.nan))
        return meta


class DML_eig(DMLAlgorithm):
    """Distance metric learning with eigenvalue optimization, over :class:`jaxdml.DMLEig`.

    Parameters
    ----------
    mu : float, default=1e-4
        pyDML's smoothing (absolute); jaxdml's ``mu`` is relative to the similar pairs' mean
        distance (default 0.1) and stays; setting it warns once.
    tol : float, default=1e-5
        Passed when set (Frank-Wolfe gap, relative).
    eps : float, default=1e-10
        Not used (warns once when set).
    max_it : int, default=25
        Passed as ``max_iter`` when set (Frank-Wolfe steps; jaxdml's default is 100).

    Notes
    -----
    ``metadata()``: ``initial_error``, ``final_error`` (jaxdml's smoothed objective).
    """

    _target = _m.DMLEig
    _ignored = {"mu": "jaxdml.DMLEig's smoothing mu is relative to the data (default 0.1).",
                "eps": "jaxdml.DMLEig needs no eps."}

    #: DML-eig's mu is its smoothing (jaxdml.DMLEig's mu), not LMNN's push weight
    _checks = {"mu": [Interval(numbers.Real, 0, None, closed="neither")]}

    def __init__(self, mu=1e-4, tol=1e-5, eps=1e-10, max_it=25):
        store(self, locals())

    def _jaxdml_params(self, X, y):
        return passed_when_set(self, tol="tol", max_it="max_iter")

    def _metadata(self, est):
        hist = np.asarray(est.result_.loss_history)
        last = float(est.result_.loss)
        return {"initial_error": float(hist[0]) if hist.size else last, "final_error": last}
