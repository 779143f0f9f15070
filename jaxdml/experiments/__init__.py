"""Reproduce the tutorial's experiments (Section 5) on KEEL folds.

The doctests skip this example: ten folds of every algorithm of the basic experiment take minutes, and it
writes its tables to ``results/``.

>>> from jaxdml.experiments import run_experiment            # doctest: +SKIP
>>> res = run_experiment("basic", datasets=["iris", "wine"], k=3, out_dir="results")  # doctest: +SKIP
>>> print(res.table("test").to_markdown())                   # doctest: +SKIP

* :mod:`._config` -- the four experiments (``basic``, ``ncm``, ``kernel``, ``dim``): algorithms,
  classifiers, datasets, dimensions, kernels and the exact table headers;
* :mod:`._runner` -- the cached, resumable runner (:func:`run_experiment`);
* :mod:`._evaluate` -- k-NN / NCM / NCMC scoring with documented tie-breaking;
* :mod:`._tables` -- :class:`Table`, rankings, CSV / Markdown / LaTeX;
* :mod:`._bayes` -- the Bayesian sign test (:func:`bayesian_sign_test`).
"""

from ._bayes import SignTestResult, bayesian_sign_test, compare_columns
from ._cache import CACHE_VERSION, ResultCache
from ._config import (
    BASIC_DATASETS,
    DIM_DATASETS,
    DIMENSIONS,
    EXPERIMENTS,
    KERNEL_DATASETS,
    KERNELS,
    Algorithm,
    Experiment,
    get_experiment,
    resolve_dimensions,
    select_algorithms,
)
from ._evaluate import classifier_scores, knn_predict, knn_scores
from ._runner import ExperimentResult, build_tables, evaluate_fold, fit_transform, run_experiment
from ._tables import AVG_RANKING, AVG_SCORE, Table, rank_scores

__all__ = [
    "run_experiment", "ExperimentResult", "evaluate_fold", "fit_transform", "build_tables",
    "EXPERIMENTS", "Experiment", "Algorithm", "get_experiment", "select_algorithms", "resolve_dimensions",
    "BASIC_DATASETS", "KERNEL_DATASETS", "DIM_DATASETS", "DIMENSIONS", "KERNELS",
    "Table", "rank_scores", "AVG_SCORE", "AVG_RANKING",
    "bayesian_sign_test", "compare_columns", "SignTestResult",
    "knn_predict", "knn_scores", "classifier_scores",
    "ResultCache", "CACHE_VERSION",
]
