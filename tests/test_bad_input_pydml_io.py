"""Bad input on pyDML's names, CSV files and ``save``: each argument is checked under its own name
before it is translated, each conversion of pyDML's values is tested, and a file or an object that
is not what it should be gets an error that says so."""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris

import jaxdml
from jaxdml import pydml
from jaxdml._validation import InvalidParameterError
from jaxdml.pydml._base import PYDML_CONSTRAINTS, DMLAlgorithm


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def _learners():
    return sorted((name, obj) for name, obj in vars(pydml).items()
                  if inspect.isclass(obj) and issubclass(obj, DMLAlgorithm) and obj.__module__.startswith("jaxdml"))


# a bad value for every kind of numeric argument pyDML's learners take
_BAD = {"num_dims": 0, "n_dims": -1, "n_components": 0, "eta0": 0.0, "max_iter": -5, "max_it": 0, "maxit": 2.5,
        "max_proj_iter": 0, "tol": -1.0, "prec": -1e-3, "err": -1.0, "itproj_err": -1.0, "eta_thres": -1.0,
        "auto_thresh": -1.0, "reg_tol": -1.0, "eps": -1.0, "learn_inc": 0.5, "learn_dec": 1.5, "k": 0, "v": 0,
        "n_friends": 0, "n_enemies": -2, "n_neighbors": 0, "soft_comp_interval": 0, "constraint_factor": 0,
        "num_constraints": 2.7, "mu": -1.0, "alpha": -1.0, "stepsize": 0.0, "reg": -1.0, "gamma": -1.0, "degree": 0,
        "geodesic_step": 1.5, "low_perc": -5, "up_perc": 105, "upper_bound": -1.0, "lower_bound": 0.0,
        "thres": 0.0, "chain_size": 1, "neighborhood_size": 1, "supervised": "yes", "b": float("nan"),
        "coef0": float("inf"), "centroids_num": 0}


def test_every_numeric_argument_of_every_learner_is_checked_under_its_name(iris):
    X, y = iris
    checked = 0
    for name, cls in _learners():
        params = [p for p in inspect.signature(cls.__init__).parameters if p in _BAD]
        for p in params:
            est = cls(**{p: _BAD[p]})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises((InvalidParameterError, ValueError), match=rf"'?{p}'?"):
                    est.fit(X, y)
            checked += 1
    assert checked >= 100  # every learner's numeric arguments, not a sample
    assert set(_BAD) >= set(PYDML_CONSTRAINTS) - {"verbose"}


@pytest.mark.parametrize("value", [0, -10, 2.7])
def test_itml_num_constraints_and_sweeps(iris, value):
    X, y = iris
    with pytest.raises(InvalidParameterError, match="'num_constraints' parameter of jaxdml.pydml.ITML"):
        pydml.ITML(num_constraints=value).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'max_iter' parameter of jaxdml.pydml.ITML"):
        pydml.ITML(max_iter=-5).fit(X, y)


@pytest.mark.parametrize("cls", [pydml.PCA, pydml.LDA])
@pytest.mark.parametrize("thres", [0, -0.2, 1.5, float("nan")])
def test_pca_and_lda_refuse_the_same_thresholds(iris, cls, thres):
    X, y = iris
    with pytest.raises(InvalidParameterError, match="'thres' parameter"):
        cls(thres=thres).fit(X, y)


def test_dml_eig_mu_is_its_own_rule(iris):
    X, y = iris
    with pytest.raises(InvalidParameterError, match="'mu' parameter of jaxdml.pydml.DML_eig"):
        pydml.DML_eig(mu=-1e-4).fit(X, y)
    assert pydml.DML_eig(mu=5.0).fit(X, y).metric().shape == (4, 4)  # not LMNN's (0, 1)


def test_classifiers_check_their_arguments(iris):
    X, y = iris
    with pytest.raises(InvalidParameterError, match="'n_neighbors' parameter of jaxdml.pydml.kNN"):
        pydml.kNN(0, pydml.Euclidean().fit(X, y)).fit(X, y)
    with pytest.raises(ValueError, match="centroids_num"):
        pydml.NCMC_Classifier(centroids_num=[2, 0, 1]).fit(X, y)
    multi = pydml.MultiDML_kNN(3, [pydml.LDA()]).fit(X, y)
    with pytest.raises(ValueError, match="y is required with X"):
        multi.score_all(X)
    loo = multi.score_all()
    assert loo.shape == (2,) and np.all((loo > 0.5) & (loo <= 1))


@pytest.mark.parametrize("tune_args,expected", [
    ({"num_dims": 2}, [{"num_dims": 2}]),
    ({"num_dims": [1, 2], "eta0": 0.3}, [{"num_dims": 1, "eta0": 0.3}, {"num_dims": 2, "eta0": 0.3}]),
    ({"learning_rate": "adaptive"}, [{"learning_rate": "adaptive"}]),
    ({"num_dims": np.array([1, 2])}, [{"num_dims": 1}, {"num_dims": 2}]),
])
def test_tune_args_conversions(tune_args, expected):
    from jaxdml.pydml._tune import _cases

    assert _cases(tune_args) == expected


@pytest.mark.parametrize("tune_args,error,match", [
    ({"num_dims": []}, ValueError, "empty"), ({"num_dims": {"a": 1}}, TypeError, "list of values"),
    ([("num_dims", [1])], TypeError, "must be a dict"), ({3: [1]}, TypeError, "strings"),
])
def test_bad_tune_args(tune_args, error, match):
    from jaxdml.pydml._tune import _cases

    with pytest.raises(error, match=match):
        _cases(tune_args)


def test_tune_with_a_single_value_runs(iris):
    X, y = iris
    results, (best, score), learner, _ = pydml.tune(pydml.NCA, X, y, dml_params={"max_iter": 5},
                                                     tune_args={"num_dims": 2}, metrics=[3], n_folds=2)
    assert best == {"num_dims": 2} and 0.5 < score <= 1 and learner.num_dims == 2


@pytest.mark.parametrize("ks,match", [([0, 3], r"ks\[0\] must be a positive int"), ([3, -1], r"ks\[1\]"),
                                      ([2.5], r"ks\[0\]")])
def test_multiplot_refuses_k_below_one(iris, ks, match):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    X, y = iris
    with pytest.raises(ValueError, match=match):
        pydml.dml_multiplot(X[:, :2], y, ks=ks)


# --------------------------------------------------------------------------- CSV files and save
def _write(path, header, rows):
    path.write_text("\n".join([header] + [",".join(str(v) for v in r) for r in rows]) + "\n")


@pytest.mark.parametrize("header", ["0,1,2,3,4", "1,2,3,4,5", "a,b,c,d,label"])
def test_csv_header_of_column_numbers_is_a_header(tmp_path, iris, header):
    X, y = iris
    path = tmp_path / "t.csv"
    _write(path, header, np.c_[X, y])
    Xr, yr = jaxdml.datasets.load_csv(str(path))
    np.testing.assert_array_equal(Xr, X)
    np.testing.assert_array_equal(yr, y)


def test_csv_first_row_of_data_is_not_a_header(tmp_path):
    path = tmp_path / "t.csv"
    rows = [[0, 1, 2, 3, 0], [5, 1, 0, 2, 1], [1, 1, 1, 1, 0]]  # 0,1,2,3 then label 0: not the numbers 0..4
    _write(path, "0,1,2,3,4".replace("4", "9"), rows)  # header "0,1,2,3,9" is not a sequence: data
    Xr, yr = jaxdml.datasets.load_csv(str(path))
    assert Xr.shape == (4, 4) and yr.tolist() == [9, 0, 1, 0]


def test_csv_with_continuous_labels_names_the_label_column(tmp_path, iris):
    X, y = iris
    path = tmp_path / "t.csv"
    _write(path, "a,b,c,d,target", np.c_[X, y + 0.25 * (np.arange(150) % 2)])
    Xr, yr = jaxdml.datasets.load_csv(str(path))  # a regression target is still loadable
    assert yr.dtype == np.float64
    with pytest.raises(ValueError, match=r"label column \(the last\) holds continuous values"):
        jaxdml.datasets.load_dataset(str(path))


@pytest.mark.parametrize("obj,match", [
    (np.eye(3), r"got ndarray of shape \(3, 3\)"), ("m", "got str"), (None, "got NoneType"),
    (jaxdml.NCA(), "this NCA is not fitted"),
])
def test_save_refuses_what_is_not_a_fitted_metric(tmp_path, obj, match):
    with pytest.raises(TypeError, match=match):
        jaxdml.persistence.save(obj, tmp_path / "m")


def test_save_takes_a_fitted_estimator(tmp_path, iris):
    X, y = iris
    est = jaxdml.LDA().fit(X, y)
    path = jaxdml.persistence.save(est, tmp_path / "m")
    np.testing.assert_allclose(jaxdml.load(path).transform(X), est.transform(X), rtol=1e-12)
    with pytest.raises(TypeError, match="path must be a str"):
        jaxdml.persistence.save(est, 42)
