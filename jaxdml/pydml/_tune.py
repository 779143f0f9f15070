"""pyDML's tuning functions (``dml.tune``) with pyDML's signatures and return types (pandas DataFrames).

``tune`` and ``metadata_cross_validate`` run :func:`jaxdml.tune` and :func:`jaxdml.metadata_cross_validate`
(metrics: an int ``k`` for the k-NN accuracy, ``"time"``, or a key of the learner's ``metadata()``);
``cross_validate`` and ``tune_knn`` score a classifier (a pipeline of the learner and k-NN for
``tune_knn``) with scikit-learn's cross-validation. The folds are pyDML's: ``n_reps`` repetitions of
stratified ``n_folds``-fold cross-validation shuffled by ``seed``. Tables have one row per fold
(``"SPLIT i"``) plus ``"MEAN"`` and ``"STD"``; grid points are listed in pyDML's order (the
Cartesian product of ``tune_args`` in the order of its keys). pandas is needed (``pip install pandas``).
"""

from __future__ import annotations

from itertools import product

import numpy as np
from sklearn.model_selection import ParameterGrid

from ..tuning import metadata_cross_validate as _metadata_cv
from ..tuning import tune as _tune

__all__ = ["cross_validate", "tune_knn", "metadata_cross_validate", "tune"]


def metric_name(metric) -> str:
    """pyDML's column name of a metric: ``"3-NN"`` for the int 3, the name itself otherwise."""
    if isinstance(metric, (int, np.integer)) and not isinstance(metric, bool):
        return f"{int(metric)}-NN"
    return str(metric)


def _pandas():
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas is a test dependency
        raise ImportError("jaxdml.pydml's tuning functions return pandas DataFrames, as pyDML's do; "
                          "install pandas: pip install pandas") from None
    return pandas


def _table(columns: dict, n: int):
    """A DataFrame of per-fold values with pyDML's rows: SPLIT 1..n, MEAN, STD."""
    pd = _pandas()
    data = {k: np.concatenate([np.asarray(v, dtype=np.float64), [np.mean(v), np.std(v)]]) for k, v in columns.items()}
    return pd.DataFrame(data, index=[f"SPLIT {i + 1}" for i in range(n)] + ["MEAN", "STD"])


def _grid(tune_args) -> dict:
    """``tune_args`` with every entry a non-empty list of values: a single value (``{"num_dims": 2}``,
    a string) is a list of one; a dict, an empty list or something else is a clear error."""
    if tune_args is None:
        return {}
    if not isinstance(tune_args, dict):
        raise TypeError(f"tune_args must be a dict of parameter -> list of values; got {type(tune_args).__name__}.")
    out = {}
    for key, values in tune_args.items():
        if not isinstance(key, str):
            raise TypeError(f"tune_args: parameter names must be strings; got {key!r}.")
        if isinstance(values, dict):
            raise TypeError(f"tune_args[{key!r}] must be a list of values; got a dict.")
        if isinstance(values, (str, bytes)) or np.ndim(values) == 0:
            values = [values]
        values = list(values)
        if not values:
            raise ValueError(f"tune_args[{key!r}] is empty: give at least one value.")
        out[key] = values
    return out


def _cases(tune_args):
    """pyDML's grid: the product of ``tune_args`` in the order of its keys, as a list of dicts."""
    tune_args = _grid(tune_args)
    keys = list(tune_args)
    return [dict(zip(keys, values)) for values in product(*(tune_args[k] for k in keys))]


def _frame_of_cases(cases, values, columns):
    """The results table indexed by the grid points (dicts, as pyDML's; their strings if pandas refuses)."""
    pd = _pandas()
    try:
        return pd.DataFrame(values, index=pd.Index(cases, dtype=object, tupleize_cols=False), columns=columns)
    except TypeError:
        return pd.DataFrame(values, index=[str(c) for c in cases], columns=columns)


def cross_validate(alg, X, y, n_folds=5, n_reps=1, verbose=False, seed=None):
    """Cross-validate a classifier: score, fit time and score time on every fold.

    Parameters
    ----------
    alg : classifier (``fit``/``score``)
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    n_folds, n_reps : int, default=5, 1
    verbose : bool, default=False
    seed : int, optional

    Returns
    -------
    pandas.DataFrame
        Columns ``SCORE``, ``FIT TIME``, ``PREDICT TIME``; rows per fold, ``MEAN``, ``STD``.
    """
    from sklearn.model_selection import RepeatedStratifiedKFold
    from sklearn.model_selection import cross_validate as sk_cross_validate

    cv = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=n_reps, random_state=seed)
    out = sk_cross_validate(alg, X, y, cv=cv, verbose=int(bool(verbose)), error_score="raise")
    cols = {"SCORE": out["test_score"], "FIT TIME": out["fit_time"], "PREDICT TIME": out["score_time"]}
    return _table(cols, n_folds * n_reps)


def tune_knn(dml, X, y, n_neighbors, dml_params, tune_args, n_folds=5, n_reps=1, verbose=False, seed=None,
             **knn_args):
    """Tune a learner by the cross-validated accuracy of k-NN after it.

    Parameters
    ----------
    dml : learner class
    X, y : the data
    n_neighbors : int
    dml_params : dict
        Fixed parameters of the learner.
    tune_args : dict
        Parameter name -> list of values.
    n_folds, n_reps, verbose, seed
        As :func:`cross_validate`.
    **knn_args
        Keyword arguments of scikit-learn's ``KNeighborsClassifier``.

    Returns
    -------
    (pandas.DataFrame, (dict, float), learner, dict)
        The mean score of every grid point (column ``SCORE``), the best point and its score, an
        (unfitted) learner with the best parameters, and each point's :func:`cross_validate` table
        (keyed by ``str(point)``).
    """
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline

    cases, detailed, scores = _cases(tune_args), {}, []
    for case in cases:
        if verbose:
            print("*** Tuning Case ", str(case), "...")
        pipe = Pipeline([("DML", dml(**case, **(dml_params or {}))),
                         ("KNN", KNeighborsClassifier(n_neighbors=n_neighbors, **knn_args))])
        detailed[str(case)] = table = cross_validate(pipe, X, y, n_folds, n_reps, verbose, seed)
        scores.append([table["SCORE"].loc["MEAN"]])
    results = _frame_of_cases(cases, np.asarray(scores), ["SCORE"])
    best = int(np.argmax(results.iloc[:, 0].to_numpy()))
    return results, (cases[best], float(results.iloc[best, 0])), dml(**cases[best], **(dml_params or {})), detailed


def metadata_cross_validate(dml, X, y, metrics, n_folds=5, n_reps=1, verbose=False, seed=None, **knn_args):
    """Cross-validate a learner: k-NN accuracies, fit time and ``metadata()`` entries on every fold
    (:func:`jaxdml.metadata_cross_validate`).

    Parameters
    ----------
    dml : learner
    X, y : the data
    metrics : list of int or str
        An int ``k``: k-NN accuracy (column ``"k-NN"``); ``"time"``: fit seconds; another name: a key
        of the learner's ``metadata()``.
    n_folds, n_reps, verbose, seed
        As :func:`cross_validate`.
    **knn_args
        Keyword arguments of scikit-learn's ``KNeighborsClassifier``.

    Returns
    -------
    pandas.DataFrame
    """
    out = _metadata_cv(dml, X, y, metrics=list(metrics), n_folds=n_folds, n_reps=n_reps, seed=seed,
                       verbose=verbose, **knn_args)
    names = [metric_name(m) for m in metrics]
    return _table({n: out[n] for n in names}, n_folds * n_reps)


def tune(dml, X, y, dml_params, tune_args, metrics, n_folds=5, n_reps=1, verbose=False, seed=None, **knn_args):
    """Tune a learner by k-NN accuracies, fit time and metadata, cross-validated (:func:`jaxdml.tune`).

    Parameters
    ----------
    dml : learner class
    X, y : the data
    dml_params : dict
    tune_args : dict
        Parameter name -> list of values.
    metrics : list of int or str
        As :func:`metadata_cross_validate`; the first one picks the best point (the largest mean).
    n_folds, n_reps, verbose, seed, **knn_args
        As :func:`metadata_cross_validate`.

    Returns
    -------
    (pandas.DataFrame, (dict, float), learner, dict)
        The mean of every metric per grid point, the best point and its mean of the first metric, an
        (unfitted) learner with the best parameters, and each point's fold table (keyed by
        ``str(point)``, as :func:`metadata_cross_validate`).
    """
    tune_args = _grid(tune_args)
    cases = _cases(tune_args)
    res = _tune(dml, X, y, dml_params, tune_args, list(metrics), n_folds, n_reps, seed, verbose, refit=False,
                **knn_args)
    names = [metric_name(m) for m in metrics]
    n_splits = n_folds * n_reps
    # jaxdml's grid lists the points in scikit-learn's ParameterGrid order: find each pyDML case there
    points = list(ParameterGrid(tune_args)) if tune_args else [{}]
    order = [points.index(case) for case in cases]
    values = np.array([[res.results[n][i] for n in names] for i in order]).reshape(len(cases), len(names))
    point = np.asarray(res.detailed["point"])
    detailed = {str(case): _table({n: np.asarray(res.detailed[n])[point == i] for n in names}, n_splits)
                for case, i in zip(cases, order)}
    results = _frame_of_cases(cases, values, names)
    best = int(np.argmax(values[:, 0]))
    return results, (cases[best], float(values[best, 0])), dml(**cases[best], **(dml_params or {})), detailed

