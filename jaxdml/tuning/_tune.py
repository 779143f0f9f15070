"""Cross-validated tuning of a metric learner (pyDML's ``tune``, ``tune_knn``, ``metadata_cross_validate``).

The folds are scikit-learn's ``RepeatedStratifiedKFold`` and the grid its ``ParameterGrid``. Each grid
point is scored by k-NN accuracies on the validation folds (metrics given as ints ``k``) and by the
learner's own diagnostics (metrics given as names: ``"loss"``, ``"n_iter"``, ``"converged"``,
``"time"``, or a numeric entry of ``result_.info``). A gradient learner whose grid only changes float
hyper-parameters (``tol``, ``learning_rate``, the loss's float parameters) runs the whole grid with one
compiled program, one optimisation trajectory per point of the non-``tol`` parameters (:mod:`._batched`).
"""

from __future__ import annotations

import numbers
import time
from typing import Any, NamedTuple

import numpy as np
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier

from .._validation import Interval, check_params
from ..compilation import ensure_default_cache
from ._batched import batched_grid

__all__ = ["tune", "tune_knn", "metadata_cross_validate", "metadata", "TuneResult"]

#: the diagnostics tune_knn reports only for learners that have them (any other name must exist)
_OPTIONAL = ("loss", "n_iter", "converged")
#: diagnostics where smaller is better (the best grid point minimises them)
_SMALLER_IS_BETTER = ("loss", "time", "n_iter")


class TuneResult(NamedTuple):
    """What :func:`tune` and :func:`tune_knn` return.

    Attributes
    ----------
    results : dict
        The table, column-oriented: one column per tuned parameter, then for each metric its
        mean over the folds (column named as the metric, e.g. ``"3-NN"``, ``"loss"``) and its
        standard deviation (``"<metric> std"``); one row per grid point. ``pandas.DataFrame(results)``
        turns it into a data frame.
    best_params : dict
        The grid point with the best mean of the first metric (largest; smallest for ``loss``,
        ``time`` and ``n_iter``).
    best_score : float
        That mean.
    best_estimator : estimator or None
        The learner with ``dml_params`` and ``best_params``, fitted on all of ``X`` (None when
        ``refit=False``).
    detailed : dict
        Column-oriented per-fold values: ``"point"`` (grid point index), ``"fold"``, then the metrics.
    vectorised : bool
        Whether the grid ran on the one-program path (shared preparation and trajectories) rather
        than one ordinary fit at a time.
    """

    results: dict
    best_params: dict
    best_score: float
    best_estimator: Any
    detailed: dict
    vectorised: bool

    def rows(self):
        """The results table as a list of dicts, one per grid point."""
        keys = list(self.results)
        n = len(self.results[keys[0]]) if keys else 0
        return [{k: self.results[k][i] for k in keys} for i in range(n)]

    def table(self, digits: int = 4) -> str:
        """The results table in Markdown."""
        keys = list(self.results)
        fmt = lambda v: f"{v:.{digits}g}" if isinstance(v, (float, np.floating)) else str(v)  # noqa: E731
        lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in self.rows()]
        return "\n".join(lines)


def metric_name(metric) -> str:
    """The column name of a metric: ``"3-NN"`` for the int 3, the name itself otherwise."""
    if isinstance(metric, (int, np.integer)) and not isinstance(metric, bool):
        return f"{int(metric)}-NN"
    if isinstance(metric, str):
        return metric
    raise ValueError(f"a metric is an int k (k-NN accuracy) or a diagnostic name; got {metric!r}.")


def _numeric(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def metadata(estimator) -> dict:
    """A fitted learner's diagnostics: ``loss`` (when it has one: not the closed forms), ``n_iter``,
    ``converged`` and the numeric entries of ``result_.info`` (jaxdml learners), or ``n_iter_``
    (scikit-learn transformers); plus the numeric
    entries of the learner's own ``metadata()`` dict when it has that method (pyDML's protocol, as
    the learners of :mod:`jaxdml.pydml` do)."""
    out = {}
    own = getattr(estimator, "metadata", None)
    if callable(own):
        out.update({k: float(v) for k, v in dict(own()).items() if _numeric(v)})
    res = getattr(estimator, "result_", None)
    if res is not None:
        if res.loss is not None:  # closed forms have no loss: no entry, rather than a column of NaN
            out["loss"] = float(res.loss)
        out.update(n_iter=int(res.n_iter), converged=float(bool(res.converged)))
        for k, v in (res.info or {}).items():
            if _numeric(v) and k not in out:
                out[k] = float(v)
    elif hasattr(estimator, "n_iter_"):
        out["n_iter"] = int(np.max(estimator.n_iter_))
    return out


def _folds(X, y, n_folds, n_reps, seed):
    from sklearn.model_selection import RepeatedStratifiedKFold

    cv = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=n_reps, random_state=seed)
    return list(cv.split(X, y))


def _knn_score(Ztr, ytr, Zte, yte, k, knn_args):
    return float(KNeighborsClassifier(n_neighbors=k, **knn_args).fit(Ztr, ytr).score(Zte, yte))


def _evaluate(est, X, y, train, test, metrics, knn_args, optional=()):
    """Fit a clone of ``est`` on ``train`` and measure ``metrics`` on ``test`` (a diagnostic in
    ``optional`` that the learner lacks is left out; any other one raises)."""
    est = clone(est)
    t0 = time.perf_counter()
    est.fit(X[train], y[train])
    seconds = time.perf_counter() - t0
    meta = {**metadata(est), "time": seconds}
    Ztr, Zte = est.transform(X[train]), est.transform(X[test])
    out = {}
    for m in metrics:
        name = metric_name(m)
        if name.endswith("-NN"):
            out[name] = _knn_score(Ztr, y[train], Zte, y[test], int(m), knn_args)
        elif name in meta:
            out[name] = float(meta[name])
        elif name in optional:
            continue
        else:
            raise ValueError(f"metric {name!r} is not a diagnostic of {type(est).__name__}; it has "
                             f"{sorted(meta)} (or give an int k for k-NN accuracy).")
    return out


def _check_metrics(metrics, owner: str, *, allow_empty=False) -> list:
    """``metrics`` as a list of ints ``k >= 1`` and diagnostic names, each once (a ``ValueError``
    naming ``metrics`` otherwise; a string is not a list of metrics)."""
    if isinstance(metrics, (str, bytes, dict)) or not hasattr(metrics, "__iter__"):
        raise ValueError(f"{owner}: metrics must be a list of ints k (k-NN accuracy) and diagnostic names such as "
                         f"'loss'; got {metrics!r}.")
    metrics = list(metrics)
    if not metrics and not allow_empty:
        raise ValueError(f"{owner}: metrics is empty; give at least one (an int k for k-NN accuracy, or a diagnostic "
                         "name such as 'loss').")
    for m in metrics:
        if isinstance(m, numbers.Integral) and not isinstance(m, (bool, np.bool_)) and m < 1:
            raise ValueError(f"{owner}: a k-NN metric k must be at least 1; metrics has {m!r}.")
        if isinstance(m, str) and not m:
            raise ValueError(f"{owner}: metrics has an empty name.")
        try:
            metric_name(m)
        except ValueError as exc:
            raise ValueError(f"{owner}: {exc}") from None
    names = [metric_name(m) for m in metrics]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{owner}: metrics names {twice} more than once.")
    return metrics


_CV_CONSTRAINTS = {
    "n_folds": [Interval(numbers.Integral, 2, None)],
    "n_reps": [Interval(numbers.Integral, 1, None)],
    "seed": [None, Interval(numbers.Integral, 0, 2**32 - 1), np.random.RandomState],
    "verbose": ["boolean", Interval(numbers.Integral, 0, None)],
    "refit": ["boolean"],
    "dml_params": [None, dict],
    "tune_args": [None, dict],
}


def _check_args(owner, knn_args, **args) -> None:
    """The scalar arguments of the tuning helpers, and ``knn_args`` (keyword arguments of scikit-learn's
    ``KNeighborsClassifier``)."""
    check_params(args, _CV_CONSTRAINTS, owner=owner)
    unknown = sorted(set(knn_args) - set(KNeighborsClassifier().get_params()) | ({"n_neighbors"} & set(knn_args)))
    if unknown:
        raise ValueError(f"{owner}: {unknown} are not keyword arguments of KNeighborsClassifier (**knn_args; "
                         "n_neighbors comes from the metrics).")


def _check_grid(base, tune_args, dml_params, owner) -> None:
    """Every name in ``tune_args``/``dml_params`` is a parameter of the learner; every grid axis is
    a non-empty list of values (not a string, not a single value)."""
    valid = set(base.get_params(deep=False))
    for what, d in (("dml_params", dml_params), ("tune_args", tune_args)):
        bad = sorted(set(d or {}) - valid)
        if bad:
            raise ValueError(f"{owner}: {what} names {bad}, which are not parameters of {type(base).__name__} "
                             f"(it has {sorted(valid)}).")
    both = sorted(set(tune_args or {}) & set(dml_params or {}))
    if both:
        raise ValueError(f"{owner}: {both} in both dml_params and tune_args; a parameter is either fixed or tuned.")
    for name, values in (tune_args or {}).items():
        if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
            raise ValueError(f"{owner}: tune_args[{name!r}] must be a list of values to try; got {values!r} (write "
                             f"[{values!r}] for a single value).")
        if len(list(values)) == 0:
            raise ValueError(f"{owner}: tune_args[{name!r}] is empty; give at least one value.")


def _as_estimator(dml, params: dict, name="dml"):
    """A learner instance from an instance, its class or a method name (``name``: the argument, in messages)."""
    if isinstance(dml, str):
        from ..methods import get_method
        from .. import estimators

        cls = get_method(dml).estimator
        if cls is None or not hasattr(estimators, cls):
            raise ValueError(f"method {dml!r} has no estimator class; pass an estimator instance.")
        dml = getattr(estimators, cls)()
    elif isinstance(dml, type):
        dml = dml()
    if not (hasattr(dml, "fit") and hasattr(dml, "transform")):
        raise ValueError(f"{name} must be a metric learner (fit/transform), its class or a method name; got "
                         f"{dml!r}.")
    return clone(dml).set_params(**params)


def _check_xy(X, y):
    from sklearn.utils.validation import check_X_y

    return check_X_y(X, y, dtype=np.float64)


def metadata_cross_validate(estimator, X, y, metrics=(3,), n_folds=5, n_reps=1, seed=None, verbose=False,
                            **knn_args):
    """Cross-validate a metric learner: k-NN accuracies and its diagnostics on every fold.

    Parameters
    ----------
    estimator : metric learner (fit/transform), its class, or a method name (``"nca"``)
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
    metrics : list of int or str, default=(3,)
        An int ``k``: k-NN accuracy on the validation fold. A name: a diagnostic of the fitted
        learner (:func:`metadata`: ``"loss"``, ``"n_iter"``, ``"converged"``, ...) or ``"time"``
        (fit seconds).
    n_folds, n_reps : int
        ``n_reps`` repetitions of stratified ``n_folds``-fold cross-validation.
    seed : int, optional
        Seed of the fold shuffling.
    **knn_args
        Keyword arguments of scikit-learn's ``KNeighborsClassifier``.

    Returns
    -------
    dict
        Column-oriented: ``"fold"`` and one array per metric (one value per fold), plus
        ``"mean"`` and ``"std"`` dicts over the folds.
    """
    owner = "metadata_cross_validate"
    metrics = _check_metrics(metrics, owner)
    _check_args(owner, knn_args, n_folds=n_folds, n_reps=n_reps, seed=seed, verbose=verbose)
    estimator = _as_estimator(estimator, {}, name="estimator")
    X, y = _check_xy(X, y)
    names = [metric_name(m) for m in metrics]
    rows = []
    for i, (tr, te) in enumerate(_folds(X, y, n_folds, n_reps, seed)):
        rows.append(_evaluate(estimator, X, y, tr, te, metrics, knn_args))
        if verbose:
            print(f"fold {i}: " + ", ".join(f"{k}={v:.4g}" for k, v in rows[-1].items()))
    out = {"fold": np.arange(len(rows))}
    out.update({n: np.array([r[n] for r in rows]) for n in names})
    out["mean"] = {n: float(np.mean(out[n])) for n in names}
    out["std"] = {n: float(np.std(out[n])) for n in names}
    return out


def _grid(tune_args):
    from sklearn.model_selection import ParameterGrid

    if not tune_args:
        return [{}]
    return list(ParameterGrid({k: list(v) for k, v in tune_args.items()}))


def _summarise(points, per_fold, names, n_folds_total):
    """Results table (means, stds) and the detailed per-fold table."""
    results = {k: np.array([p[k] for p in points]) for k in (points[0] if points else {})}
    for n in names:
        vals = np.array([[per_fold[i][f][n] for f in range(n_folds_total)] for i in range(len(points))])
        results[n] = vals.mean(axis=1)
        results[f"{n} std"] = vals.std(axis=1)
    detailed = {"point": np.repeat(np.arange(len(points)), n_folds_total),
                "fold": np.tile(np.arange(n_folds_total), len(points))}
    for n in names:
        detailed[n] = np.array([per_fold[i][f][n] for i in range(len(points)) for f in range(n_folds_total)])
    return results, detailed


def tune(dml, X, y, dml_params=None, tune_args=None, metrics=(3,), n_folds=5, n_reps=1, seed=None,
         verbose=False, *, refit=True, vectorize="auto", **knn_args) -> TuneResult:
    """Grid search over a metric learner's parameters, scored by k-NN accuracies and diagnostics.

    Parameters
    ----------
    dml : metric learner, its class, or a method name (``"nca"``)
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
    dml_params : dict, optional
        Fixed parameters of the learner.
    tune_args : dict, optional
        Parameter name -> list of values; the grid is their Cartesian product.
    metrics : list of int or str, default=(3,)
        As in :func:`metadata_cross_validate`; the first one chooses the best point.
    n_folds, n_reps, seed : int
        ``n_reps`` repetitions of stratified ``n_folds``-fold cross-validation, shuffled by ``seed``.
    verbose : bool
    refit : bool, default=True
        Fit the best learner on all of ``X`` (``best_estimator``).
    vectorize : {"auto", "vmap", False}, default="auto"
        "auto": when the learner is trained by jaxdml's optax driver on its full-batch path and the
        grid only changes float hyper-parameters (``tol``, ``learning_rate``, float loss
        parameters), the whole grid runs one compiled program: the points that differ only in
        ``tol`` share one optimisation trajectory (each with its own stopping test, so each gets
        what a fit with that ``tol`` alone gets), and on an accelerator the trajectories of all folds
        and points are batched with ``jax.vmap`` ("vmap": batch them on a CPU too). On a CPU, "auto"
        runs the trajectories in parallel threads, one per core available to the process. ``"time"``
        is then the solve time divided by the number of fits. False: one ordinary fit at a time.
    **knn_args
        Keyword arguments of scikit-learn's ``KNeighborsClassifier``.

    Returns
    -------
    TuneResult
    """
    return _tune(dml, X, y, dml_params, tune_args, metrics, n_folds, n_reps, seed, verbose, refit=refit,
                 vectorize=vectorize, knn_args=knn_args, owner="tune")


def _tune(dml, X, y, dml_params, tune_args, metrics, n_folds, n_reps, seed, verbose, *, refit, vectorize, knn_args,
          owner, optional=()) -> TuneResult:
    """:func:`tune`; the diagnostics in ``optional`` are columns only for a learner that has them."""
    ensure_default_cache()  # the vectorised grid compiles outside any fit: a later process loads it
    metrics = _check_metrics(metrics, owner)
    _check_args(owner, knn_args, n_folds=n_folds, n_reps=n_reps, seed=seed, verbose=verbose, refit=refit,
                dml_params=dml_params, tune_args=tune_args)
    if vectorize not in ("auto", "vmap", False) or isinstance(vectorize, np.bool_):
        raise ValueError(f"{owner}: vectorize must be 'auto', 'vmap' or False; got {vectorize!r}.")
    base = _as_estimator(dml, {})
    _check_grid(base, tune_args, dml_params, owner)
    base = base.set_params(**dict(dml_params or {}))
    X, y = _check_xy(X, y)
    points = _grid(tune_args)
    folds = _folds(X, y, n_folds, n_reps, seed)
    per_fold = batched_grid(base, X, y, folds, points, metrics, knn_args, vectorize) if vectorize else None
    vectorised = per_fold is not None
    if per_fold is None:
        per_fold = []
        for point in points:
            est = clone(base).set_params(**point)
            per_fold.append([_evaluate(est, X, y, tr, te, metrics, knn_args, optional) for tr, te in folds])
    names = [n for n in map(metric_name, metrics) if all(n in f for row in per_fold for f in row)]
    results, detailed = _summarise(points, per_fold, names, len(folds))
    if verbose:
        for i, p in enumerate(points):
            print(f"{p}: " + ", ".join(f"{n}={results[n][i]:.4g}" for n in names))
    first = results[names[0]]
    if np.all(np.isnan(first)):
        raise ValueError(f"{owner}: {names[0]} is NaN at every grid point (the fits failed or the learner does not "
                         "report it); nothing to choose the best point by.")
    best = int(np.nanargmin(first) if names[0] in _SMALLER_IS_BETTER else np.nanargmax(first))
    best_est = clone(base).set_params(**points[best]).fit(X, y) if refit else None
    return TuneResult(results, dict(points[best]), float(first[best]), best_est, detailed, vectorised)


def tune_knn(dml, X, y, n_neighbors=3, dml_params=None, tune_args=None, n_folds=5, n_reps=1, seed=None,
             verbose=False, *, metrics=("loss", "n_iter", "converged"), refit=True, vectorize="auto",
             **knn_args) -> TuneResult:
    """:func:`tune` scored by ``n_neighbors``-NN accuracy (the first metric, ``n_neighbors`` an int
    >= 1), with the learner's diagnostics (``metrics``, default final loss, iterations and
    convergence) as extra columns: of ``"loss"``, ``"n_iter"`` and ``"converged"`` only those the
    learner has (a closed form has no loss); any other name must be a diagnostic of the learner."""
    if isinstance(n_neighbors, (bool, np.bool_)) or not isinstance(n_neighbors, numbers.Integral) or n_neighbors < 1:
        raise ValueError(f"tune_knn: n_neighbors must be an int >= 1; got {n_neighbors!r}.")
    metrics = _check_metrics(metrics, "tune_knn", allow_empty=True)
    probe = _as_estimator(dml, {})
    has_result = hasattr(probe, "_record")
    extra = [m for m in metrics if has_result or m == "time"]
    return _tune(probe, X, y, dml_params, tune_args, [int(n_neighbors), *extra], n_folds, n_reps, seed, verbose,
                 refit=refit, vectorize=vectorize, knn_args=knn_args, owner="tune_knn",
                 optional={m for m in extra if m in _OPTIONAL})
