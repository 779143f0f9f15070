"""``jaxdml.pydml``: pyDML's names with pyDML's signatures, and pyDML-style scripts (the calls of pyDML's
documentation, adapted only in the import line) checked against jaxdml's own classes, scikit-learn and
brute force. Figures render with the Agg backend."""

import inspect
import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_almost_equal
from scipy.spatial.distance import pdist
from sklearn.datasets import load_digits, load_iris
from sklearn.model_selection import LeaveOneOut, RepeatedStratifiedKFold, cross_val_predict, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import minmax_scale

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxdml  # noqa: E402
import jaxdml.pydml as dml  # noqa: E402
from jaxdml.pydml import (LDA, NCA, NCMC_Classifier, MultiDML_kNN, classifier_plot, dml_multiplot,  # noqa: E402
                          dml_plot, kNN, knn_pairplots, knn_plot)

REQ = inspect.Parameter.empty
PLOT = [("grid_split", [400, 400]), ("grid_step", [0.1, 0.1]), ("label_legend", True)]
STYLE = [("cmap", None), ("label_colors", None), ("plot_points", True), ("plot_regions", True),
         ("region_intensity", 0.4), ("legend_plot_points", True), ("legend_plot_regions", True)]
SINGLE = [("f", None), ("ax", None), ("title", None), ("subtitle", None), ("xrange", None), ("yrange", None),
          ("xlabel", None), ("ylabel", None), *PLOT, ("legend_loc", "lower right"), *STYLE, ("legend_on_axis", True),
          ("**fig_kw", None)]
PAIRS = [("title", None), *PLOT, ("legend_loc", "center right"), *STYLE, ("legend_on_axis", False), ("**fig_kw", None)]
KERNEL = [("kernel", "linear"), ("gamma", None), ("degree", 3), ("coef0", 1), ("kernel_params", None)]
LOOP = [("eta_thres", 1e-14), ("learn_inc", 1.01), ("learn_dec", 0.5)]
DISTANCE = [("metric", None), ("transformer", None), ("dml", None), ("dml_fitted", False)]

#: every public name of pyDML 0.1's ``dml`` package (its __init__: the classes and the functions of
#: dml_plot and tune), with the parameters of its constructor / signature: (name, default) in order
PYDML = {
    "NCA": [("num_dims", None), ("learning_rate", "adaptive"), ("eta0", 0.3), ("initial_transform", None),
            ("max_iter", 100), ("prec", 1e-08), ("tol", 1e-08), ("descent_method", "SGD"), *LOOP],
    "kNN": [("n_neighbors", REQ), ("dml_algorithm", REQ)],
    "LDA": [("num_dims", None), ("thres", None)],
    "PCA": [("num_dims", None), ("thres", None)],
    "LMNN": [("num_dims", None), ("learning_rate", "adaptive"), ("eta0", 0.3), ("initial_metric", None),
             ("max_iter", 100), ("prec", 1e-08), ("tol", 1e-08), ("k", 3), ("mu", 0.5), ("soft_comp_interval", 1),
             ("learn_inc", 1.01), ("learn_dec", 0.5), ("eta_thres", 1e-14), ("solver", "SDP")],
    "KLMNN": [("num_dims", None), ("learning_rate", "adaptive"), ("eta0", 0.3), ("initial_metric", None),
              ("max_iter", 100), ("prec", 1e-08), ("tol", 1e-08), ("k", 3), ("mu", 0.5), ("learn_inc", 1.01),
              ("learn_dec", 0.5), ("eta_thres", 1e-14), *KERNEL, ("target_selection", "kernel")],
    "LSI": [("initial_metric", None), ("learning_rate", "adaptive"), ("eta0", 0.1), ("max_iter", 100),
            ("max_proj_iter", 5000), ("itproj_err", 0.001), ("err", 0.001), ("supervised", False)],
    "ANMM": [("num_dims", None), ("n_friends", 3), ("n_enemies", 1)],
    "KANMM": [("num_dims", None), ("n_friends", 3), ("n_enemies", 1), *KERNEL],
    "ITML": [("initial_metric", None), ("upper_bound", None), ("lower_bound", None), ("num_constraints", None),
             ("gamma", 1.0), ("tol", 0.001), ("max_iter", 100000), ("low_perc", 5), ("up_perc", 95)],
    "DMLMJ": [("num_dims", None), ("n_neighbors", 3), ("alpha", 0.001), ("reg_tol", 1e-10)],
    "KDMLMJ": [("num_dims", None), ("n_neighbors", 3), ("alpha", 0.001), ("reg_tol", 1e-10), *KERNEL],
    "NCMML": [("num_dims", None), ("learning_rate", "adaptive"), ("eta0", 0.3), ("initial_transform", None),
              ("max_iter", 300), ("tol", 1e-15), ("prec", 1e-15), ("descent_method", "SGD"), *LOOP],
    "NCMC": [("num_dims", None), ("centroids_num", 3), ("learning_rate", "adaptive"), ("eta0", 0.3),
             ("initial_transform", None), ("max_iter", 300), ("tol", 1e-15), ("prec", 1e-15),
             ("descent_method", "SGD"), *LOOP, ("**kmeans_kwargs", None)],
    "NCMC_Classifier": [("centroids_num", 3), ("**kmeans_kwargs", None)],
    "KDA": [("solver", "eigen"), ("n_components", None), ("tol", 0.0001), ("alpha", 0.001), *KERNEL],
    "DML_eig": [("mu", 0.0001), ("tol", 1e-05), ("eps", 1e-10), ("max_it", 25)],
    "MCML": [("num_dims", None), ("learning_rate", "adaptive"), ("eta0", 0.01), ("initial_metric", None),
             ("max_iter", 20), ("prec", 0.01), ("tol", 0.01), ("descent_method", "SDP"), *LOOP],
    "LDML": [("num_dims", None), ("b", 0.001), ("learning_rate", "adaptive"), ("eta0", 0.3), ("initial_metric", None),
             ("max_iter", 10), ("prec", 0.001), ("tol", 0.001), ("descent_method", "SDP"), *LOOP],
    "LLDA": [("n_components", None), ("affinity", "neighbors"), ("n_neighbors", 1), ("tol", 0.0001), ("alpha", 0.001),
             ("solver", "sugiyama")],
    "KLLDA": [("n_components", None), ("affinity", "neighbors"), ("n_neighbors", 1), ("tol", 0.0001),
              ("alpha", 0.001), *KERNEL],
    "MultiDML_kNN": [("n_neighbors", REQ), ("dmls", None), ("verbose", False), ("**knn_args", None)],
    "Metric": [("metric", REQ)],
    "Transformer": [("transformer", REQ)],
    "Euclidean": [],
    "Covariance": [("tol", 1e-15), ("reg_method", "pseudoinverse"), ("alpha", 0.001)],
    "CondensedNearestNeighbors": [],
    "ReducedNearestNeighbors": [],
    "GMML": [("geodesic_step", 0.5), ("reg", 1e-06), ("constraint_factor", 40), ("prior", None),
             ("auto_thresh", 1e-09)],
    "LODML": [("k", 5), ("v", 15), ("alpha", 0.01), ("maxit", 1000), ("stepsize", 0.1)],
    "KODML": [("k", 5), ("v", 15), ("alpha", 0.01), ("maxit", 1000), ("stepsize", 0.1), *KERNEL],
    "CMOML": [("n_dims", None), ("chain_size", 3), ("neighborhood_size", 50), ("workers", 1), ("n_jobs", -1)],
    "classifier_plot": [("X", REQ), ("y", REQ), ("clf", REQ), ("attrs", None), ("sections", "mean"),
                        ("fitted", False), *SINGLE],
    "dml_plot": [("X", REQ), ("y", REQ), ("clf", REQ), ("attrs", None), ("sections", "mean"), ("fitted", False),
                 *DISTANCE, ("transform", True), *SINGLE],
    "knn_plot": [("X", REQ), ("y", REQ), ("k", 1), ("attrs", None), ("sections", "mean"), ("knn_clf", None),
                 ("fitted", False), *DISTANCE, ("transform", True), *SINGLE],
    "dml_multiplot": [("X", REQ), ("y", REQ), ("nrow", None), ("ncol", None), ("ks", None), ("clfs", None),
                      ("attrs", None), ("sections", "mean"), ("fitted", False), ("metrics", None),
                      ("transformers", None), ("dmls", None), ("dml_fitted", False), ("transforms", None),
                      ("title", None), ("subtitles", None), ("xlabels", None), ("ylabels", None), *PAIRS[1:]],
    "classifier_pairplots": [("X", REQ), ("y", REQ), ("clf", REQ), ("attrs", None), ("xattrs", None),
                             ("yattrs", None), ("diag", "hist"), ("sections", "mean"), ("fitted", False), *PAIRS],
    "dml_pairplots": [("X", REQ), ("y", REQ), ("clf", REQ), ("attrs", None), ("xattrs", None), ("yattrs", None),
                      ("diag", "hist"), ("sections", "mean"), ("fitted", False), *DISTANCE, *PAIRS],
    "knn_pairplots": [("X", REQ), ("y", REQ), ("k", 1), ("attrs", None), ("xattrs", None), ("yattrs", None),
                      ("diag", "hist"), ("sections", "mean"), ("knn_clf", None), ("fitted", False), *DISTANCE,
                      *PAIRS],
    "classifier_plot_3d": [("X", REQ), ("y", REQ), ("clf", REQ), ("attrs", None), ("sections", "mean"),
                           ("fitted", False), ("f", None), ("ax", None), ("elev", 0.0), ("azim", 0.0),
                           ("title", None), ("subtitle", None), ("xrange", None), ("yrange", None), ("zrange", None),
                           ("xlabel", None), ("ylabel", None), ("zlabel", None), ("grid_split", [40, 40, 40]),
                           ("grid_step", [0.1, 0.1, 0.1]), ("label_legend", True), ("legend_loc", "lower right"),
                           ("cmap", None), ("label_colors", None), ("plot_points", True), ("plot_regions", "all"),
                           ("region_intensity", 0.4), ("legend_plot_points", True), ("legend_plot_regions", True),
                           ("legend_on_axis", True), ("**fig_kw", None)],
    "cross_validate": [("alg", REQ), ("X", REQ), ("y", REQ), ("n_folds", 5), ("n_reps", 1), ("verbose", False),
                       ("seed", None)],
    "tune_knn": [("dml", REQ), ("X", REQ), ("y", REQ), ("n_neighbors", REQ), ("dml_params", REQ), ("tune_args", REQ),
                 ("n_folds", 5), ("n_reps", 1), ("verbose", False), ("seed", None), ("**knn_args", None)],
    "metadata_cross_validate": [("dml", REQ), ("X", REQ), ("y", REQ), ("metrics", REQ), ("n_folds", 5), ("n_reps", 1),
                                ("verbose", False), ("seed", None), ("**knn_args", None)],
    "tune": [("dml", REQ), ("X", REQ), ("y", REQ), ("dml_params", REQ), ("tune_args", REQ), ("metrics", REQ),
             ("n_folds", 5), ("n_reps", 1), ("verbose", False), ("seed", None), ("**knn_args", None)],
}


def _signature(obj):
    sig = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj)
    out = []
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        out.append((f"**{p.name}", None) if p.kind is p.VAR_KEYWORD else (p.name, p.default))
    return out


def test_every_pydml_name_is_there_with_pydmls_signature():
    assert set(PYDML) <= set(dml.__all__)
    for name, params in PYDML.items():
        assert _signature(getattr(dml, name)) == params, name


@pytest.fixture(scope="module")
def iris():
    data = load_iris()
    return data["data"], data["target"]


@pytest.fixture(scope="module")
def small():
    """pyDML's test data: min-max scaled (every third iris sample)."""
    X, y = load_iris(return_X_y=True)
    return minmax_scale(X[::3]), y[::3]


@pytest.fixture(scope="module")
def nca_iris(iris):
    """pyDML's documented example: NCA() fitted on iris."""
    X, y = iris
    nca = NCA()
    nca.fit(X, y)
    return nca


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------------------------------------- learners
def test_documented_nca_example(iris, nca_iris):
    X, y = iris
    nca = nca_iris
    meta = nca.metadata()
    assert set(meta) == {"num_iters", "initial_expectance", "final_expectance"}
    L, M = nca.transformer(), nca.metric()
    assert_array_almost_equal(L.T.dot(L), M)
    np.testing.assert_allclose(nca.transform(), X @ L.T)
    X_ = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    np.testing.assert_allclose(nca.transform(X_), X_ @ L.T)
    # the expectances, against a direct computation of NCA's expected leave-one-out accuracy
    for key, A in (("initial_expectance", np.eye(4)), ("final_expectance", L)):
        Z = X @ A.T
        D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
        np.fill_diagonal(D, np.inf)
        P = np.exp(-(D - D.min(1, keepdims=True)))
        P /= P.sum(1, keepdims=True)
        assert meta[key] == pytest.approx(np.mean((P * (y[:, None] == y[None])).sum(1)), rel=1e-4)
    assert 0.9 < meta["final_expectance"] <= 1.0 and meta["final_expectance"] > meta["initial_expectance"]
    # the same fit as jaxdml's own NCA
    np.testing.assert_allclose(L, jaxdml.NCA().fit(X, y).components_, atol=1e-6)


def _pydml_invariants(alg, X, y, kernel=False):
    """pyDML's own checks: M = L^T L, transform() = transform(X), Mahalanobis distances = distances after L."""
    alg.fit(X, y)
    L, LX1, LX2 = alg.transformer(), alg.transform(), alg.transform(X)
    assert_array_almost_equal(LX1, LX2)
    if kernel:
        assert L.shape[1] == X.shape[0]
        return L
    M = alg.metric()
    assert_array_almost_equal(L.T.dot(L), M)
    assert_array_almost_equal(pdist(X, metric="mahalanobis", VI=M), pdist(LX1))
    assert L.shape[1] == M.shape[0] == X.shape[1] and L.shape[0] <= X.shape[1]
    return L


@pytest.mark.parametrize("alg, twin", [
    (dml.PCA(num_dims=2), jaxdml.PCA(2)),
    (dml.LDA(), jaxdml.LDA()),
    (dml.ANMM(num_dims=2, n_friends=2), jaxdml.ANMM(2, n_friends=2)),
    (dml.DMLMJ(num_dims=3), jaxdml.DMLMJ(3)),
    (dml.Covariance(), jaxdml.Covariance()),
    (dml.Euclidean(), jaxdml.Euclidean()),
    (dml.GMML(geodesic_step=0.3), jaxdml.GMML(0.3)),
    (dml.KANMM(num_dims=1, kernel="rbf"), jaxdml.KANMM(1, kernel="rbf")),
    (dml.KDMLMJ(num_dims=2, kernel="rbf", gamma=1.0), jaxdml.KDMLMJ(2, kernel="rbf", gamma=1.0)),
    (dml.KLLDA(n_components=2, kernel="rbf"), jaxdml.KLLDA(2, k=1, affinity="neighbors", kernel="rbf")),
    (dml.KDA(kernel="poly", degree=2), jaxdml.KDA(kernel="poly", degree=2)),
], ids=lambda a: type(a).__name__)
def test_learners_keep_pydmls_invariants_and_are_jaxdmls(small, alg, twin):
    X, y = small
    kernel = isinstance(alg, dml.KernelDML_Algorithm)
    L = _pydml_invariants(alg, X, y, kernel=kernel)
    np.testing.assert_allclose(L, twin.fit(X, y).components_, atol=1e-10)


def test_fixed_distances(small):
    X, y = small
    rng = np.random.default_rng(28)
    A = rng.normal(size=(4, 4))
    M = A @ A.T
    metric = dml.Metric(M)
    assert_array_almost_equal(metric.transformer().T @ metric.transformer(), M)  # before fit, as in pyDML
    _pydml_invariants(metric, X, y)
    L = rng.random((1, 4))
    t = _pydml_invariants(dml.Transformer(L), X, y)
    assert t.shape == (1, 4)
    with pytest.raises(ValueError, match="needs fit"):
        dml.Metric(M).transform()


def test_eigen_metadata_and_thresholds(small):
    X, y = small
    anmm = dml.ANMM(num_dims=1).fit(X, y)
    w = np.sort(jaxdml.ANMM().fit(X, y).result_.info["eigenvalues"])[::-1]
    assert anmm.metadata() == {"num_dims": 1, "acum_eig": pytest.approx(w[0] / w.sum())}
    pca = dml.PCA(thres=0.9).fit(X)
    ratio = np.cumsum(jaxdml.PCA().fit(X).result_.info["explained_variance_ratio"])
    assert pca.transformer().shape[0] == np.searchsorted(ratio, 0.9, side="right") + 1
    assert pca.metadata()["acum_eig"] == pytest.approx(ratio[pca.transformer().shape[0] - 1])
    sk = dml.PCA(num_dims=2).fit(X).skpca_  # scikit-learn's PCA with this fit's components
    np.testing.assert_allclose(sk.inverse_transform(np.zeros((1, 2)))[0], X.mean(0))


def test_parameters_map_to_jaxdmls_nearest_settings(small, monkeypatch):
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    est = NCA(num_dims=2, learning_rate="constant", eta0=0.05)._make(X, y)
    assert (est.optimizer, est.learning_rate, est.n_components, est.max_iter, est.tol) == ("sgd", 0.05, 2, None, 1e-5)
    est = NCA(max_iter=7, tol=1e-3, initial_transform="scale")._make(X, y)
    assert (est.optimizer, est.max_iter, est.tol) == (None, 7, 1e-3)
    np.testing.assert_allclose(est.init, np.diag(1.0 / np.ptp(X, 0)))
    est = dml.LMNN(num_dims=2, k=5)._make(X, y)
    assert (est.solver, est.n_components, est.n_neighbors) == ("projected", None, 5)  # SDP ignores num_dims
    est = dml.LMNN(solver="SGD", num_dims=2, initial_metric="euclidean")._make(X, y)
    assert (est.solver, est.n_components, est.init) == ("gradient", 2, "identity")
    est = dml.ITML(max_iter=1000, num_constraints=40, lower_bound=0.5, upper_bound=2.0)._make(X, y)
    assert (est.n_constraints, est.max_iter, est.bounds) == (20, 25, (0.5, 2.0))
    est = dml.LLDA(n_components=2, n_neighbors=4, affinity="local-scaling")._make(X, y)
    assert (est.n_components, est.k, est.affinity) == (2, 4, "local-scaling")
    est = dml.KDA(kernel="poly", n_components=1, degree=2)._make(X, y)
    assert (est.kernel, est.n_components, est.degree, est.coef0) == ("poly", 1, 2, 1)
    est = dml.KLMNN(kernel="sigmoid", gamma=0.5)._make(X, y)
    from sklearn.metrics.pairwise import sigmoid_kernel

    np.testing.assert_allclose(est.kernel(X[:3], X[:5]), sigmoid_kernel(X[:3], X[:5], gamma=0.5, coef0=1))
    with pytest.raises(ValueError, match="precomputed"):
        dml.KDA(kernel="precomputed").fit(X, y)
    with pytest.raises(ValueError, match="learning_rate must be 'adaptive' or 'constant'"):
        NCA(learning_rate="optimal").fit(X, y)
    with pytest.raises(ValueError, match="solver must be 'SDP' or 'SGD'"):
        dml.LMNN(solver="Newton").fit(X, y)
    with pytest.raises(ValueError, match="'num_dims' parameter of jaxdml.pydml.PCA must be a finite int"):
        dml.PCA(num_dims=1.5).fit(X)


def test_kernel_learners_metadata_and_options(small, monkeypatch):
    """The kernel learners' pyDML metadata, KLLDA's affinity matrix (no counterpart: a warning, then the
    "neighbors" affinity), KDA's only solver, and KODML's parameters."""
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    kd = dml.KDMLMJ(num_dims=2, kernel="rbf", gamma=1.0).fit(X, y)
    w = jaxdml.KDMLMJ(kernel="rbf", gamma=1.0).fit(X, y).result_.info["eigenvalues"]
    w = np.sort(w)[::-1]
    assert kd.metadata() == {"num_dims": 2, "acum_eig": pytest.approx(w[:2].sum() / w.sum())}
    ref = dml.KLLDA(n_components=2, kernel="rbf").fit(X, y).transformer()
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="KLLDA: an affinity matrix has no counterpart"):
        kl = dml.KLLDA(n_components=2, affinity=np.ones((len(X), len(X))), kernel="rbf").fit(X, y)
    np.testing.assert_allclose(kl.transformer(), ref, atol=1e-12)
    assert kl.metadata()["num_dims"] == 2
    with pytest.raises(ValueError, match="KDA: solver must be 'eigen'; got 'svd'"):
        dml.KDA(solver="svd").fit(X, y)
    est = dml.KODML(k=4, v=10, alpha=0.1, maxit=50, kernel="rbf", gamma=0.5)._make(X, y)
    assert isinstance(est, jaxdml.KODML)
    assert (est.n_targets, est.n_impostors, est.alpha, est.max_iter, est.kernel, est.gamma) == (4, 10, 0.1, 50, "rbf",
                                                                                                0.5)
    assert dml.KODML()._make(X, y).max_iter is None  # pyDML's maxit is sized for its own solver
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="KODML: stepsize=0.5 has no counterpart"):
        dml.KODML(stepsize=0.5)._make(X, y)


def test_klmnn_metadata_is_jaxdmls_objective(small):
    """pyDML's KLMNN metadata: the iterations and the first and final values of the objective that
    jaxdml's KLMNN minimises (its loss history)."""
    X, y = small
    alg = dml.KLMNN(max_iter=15, kernel="rbf", gamma=1.0).fit(X, y)
    res = jaxdml.KLMNN(kernel="rbf", gamma=1.0, max_iter=15).fit(X, y).result_
    meta = alg.metadata()
    assert set(meta) == {"num_iters", "initial_error", "final_error"}
    assert meta["num_iters"] == res.n_iter and 1 <= meta["num_iters"] <= 15
    assert meta["initial_error"] == pytest.approx(res.loss_history[0], rel=1e-6)
    assert meta["final_error"] == pytest.approx(res.loss, rel=1e-6) and meta["final_error"] < meta["initial_error"]


def test_unmapped_options_warn_once(small, monkeypatch):
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    with pytest.warns(dml.PyDMLCompatibilityWarning, match=r"NCA: eta0=0\.05 is not used"):
        NCA(eta0=0.05)._make(X, y)
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="NCA: learn_inc=1.5 has no counterpart"):
        NCA(learn_inc=1.5)._make(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dml.PyDMLCompatibilityWarning)
        NCA(eta0=0.01, learn_inc=2.0)._make(X, y)  # once per process and option
        NCA()._make(X, y)  # pyDML's defaults never warn
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="largest count is used"):
        assert dml.NCMC(centroids_num=[2, 1, 3])._make(X, y).centroids_num == 3



def _fitted_stub(loss_history, loss, n_iter, **info):
    """A stand-in for a fitted jaxdml estimator: only ``result_``, which the metadata reads."""
    from types import SimpleNamespace

    return SimpleNamespace(result_=SimpleNamespace(loss_history=np.asarray(loss_history, dtype=float), loss=loss,
                                                   n_iter=n_iter, info=info))


def test_gradient_learners_map_parameters_and_metadata(small, monkeypatch):
    """NCMML, NCMC, MCML, LDML, LODML and CMOML: pyDML's arguments become the jaxdml estimator's, and
    metadata() reports jaxdml's objective under pyDML's names (NCMML/NCMC: the summed log-probability,
    -n times jaxdml's mean negative log-likelihood)."""
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    est = dml.NCMML(num_dims=2, max_iter=7, initial_transform="scale")._make(X, y)
    assert isinstance(est, jaxdml.NCMML) and (est.n_components, est.max_iter) == (2, 7)
    np.testing.assert_allclose(est.init, np.diag(1.0 / np.ptp(X, 0))[:2])
    stub, ncmml = _fitted_stub([0.9, 0.5, 0.4], 0.4, 3), dml.NCMML()
    ncmml.X_ = X  # the training data, as fit stores it
    assert ncmml._metadata(stub) == {"num_iters": 3, "initial_expectance": pytest.approx(-0.9 * len(X)),
                                           "final_expectance": pytest.approx(-0.4 * len(X))}
    ncmc = dml.NCMC(num_dims=2, centroids_num=2, random_state=3)
    assert ncmc.get_params()["random_state"] == 3 and ncmc.get_params()["centroids_num"] == 2
    ncmc.set_params(centroids_num=4, n_init=5)
    assert ncmc.centroids_num == 4 and ncmc.kmeans_kwargs == {"random_state": 3, "n_init": 5}
    with pytest.warns(dml.PyDMLCompatibilityWarning, match=r"NCMC: k-means arguments \['n_init'\] have no"):
        est = ncmc._make(X, y)
    assert isinstance(est, jaxdml.NCMC) and (est.n_components, est.centroids_num, est.random_state) == (2, 4, 3)
    est = dml.MCML(num_dims=2, initial_metric="euclidean", max_iter=5)._make(X, y)
    assert isinstance(est, jaxdml.MCML) and (est.n_components, est.max_iter) == (2, 5)
    est = dml.LDML(num_dims=3, b=0.25)._make(X, y)
    assert isinstance(est, jaxdml.LDML) and (est.n_components, est.b) == (3, 0.25)
    assert dml.LDML()._metadata(_fitted_stub([2.0, 1.0], 1.0, 2)) == {"num_iters": 2, "initial_error": 2.0,
                                                                       "final_error": 1.0}
    assert dml.LMNN()._metadata(_fitted_stub([], 1.5, 0)) == {"num_iters": 0, "initial_error": 1.5,
                                                               "final_error": 1.5}  # no history: the final loss
    est = dml.LODML(k=2, v=4, alpha=0.5, maxit=30)._make(X, y)
    assert isinstance(est, jaxdml.LODML) and (est.n_targets, est.n_impostors, est.alpha, est.max_iter) == (2, 4, 0.5, 30)
    assert dml.LODML()._make(X, y).max_iter is None  # pyDML's maxit is sized for its own solver
    est = dml.CMOML(n_dims=2, chain_size=4, neighborhood_size=10)._make(X, y)
    assert isinstance(est, jaxdml.CMOML) and (est.n_components, est.chain_size, est.neighborhood_size) == (2, 4, 10)
    assert dml.CMOML()._metadata(_fitted_stub([3.0, 1.0], 1.0, 9)) == {"initial_objective": 3.0,
                                                                        "final_objective": 1.0}
    with pytest.raises(ValueError, match="'n_dims' parameter of jaxdml.pydml.CMOML must be a finite int"):
        dml.CMOML(n_dims=0)._make(X, y)


def test_pairs_from_side_information_match_brute_force(small):
    from jaxdml.pydml._constraints import _pairs_from_side

    rng = np.random.default_rng(1)
    n = 7
    S = rng.random((n, n)) < 0.3
    D = (rng.random((n, n)) < 0.3) & ~S & ~S.T
    for side in ([S, D], [S]):
        pairs, labels = _pairs_from_side(side, n)
        Dm = side[1] if len(side) > 1 else ~S
        ref = [((i, j), 1 if (S[i, j] or S[j, i]) else -1) for i in range(n) for j in range(i + 1, n)
               if S[i, j] or S[j, i] or Dm[i, j] or Dm[j, i]]
        assert [(tuple(p), int(l)) for p, l in zip(pairs, labels)] == ref
    with pytest.raises(ValueError, match=r"\(n, n\) boolean matrices with n = 8"):
        _pairs_from_side([S], 8)
    X, y = small
    with pytest.raises(ValueError, match="for labels use LSI\\(supervised=True\\)"):
        dml.LSI().fit(X, y)


def test_constraint_learners_map_parameters_and_metadata(small, monkeypatch):
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="ITML: one bound alone has no counterpart"):
        est = dml.ITML(upper_bound=2.0)._make(X, y)
    assert est.bounds is None and est.percentiles == (5.0, 95.0)  # both bounds from the percentiles
    assert dml.LSI(max_iter=12)._make(X, y).max_iter == 12
    meta = dml.LSI()._metadata(_fitted_stub([4.0, 2.0], 2.0, 5, constraint=0.75))
    assert meta == {"initial_objective": 4.0, "final_objective": 2.0, "num_its": 5, "final_constraint": 0.75}
    meta = dml.LSI()._metadata(_fitted_stub([], 2.0, 0))
    assert np.isnan(meta["initial_objective"]) and np.isnan(meta["final_constraint"]) and meta["num_its"] == 0
    est = dml.DML_eig(tol=1e-3, max_it=7)._make(X, y)
    assert isinstance(est, jaxdml.DMLEig) and (est.tol, est.max_iter) == (1e-3, 7)
    assert dml.DML_eig()._metadata(_fitted_stub([5.0, 3.0], 3.0, 2)) == {"initial_error": 5.0, "final_error": 3.0}
    assert dml.DML_eig()._metadata(_fitted_stub([], 3.0, 0)) == {"initial_error": 3.0, "final_error": 3.0}


@pytest.mark.slow  # LSI's solver compiles for a few seconds
def test_lsi_from_side_information(small):
    X, y = small
    X, y = X[::2], y[::2]  # 25 samples
    S = y[:, None] == y[None, :]
    side = dml.LSI(max_iter=50).fit(X, [S, ~S])
    pairs = np.array([(i, j) for i in range(len(X)) for j in range(i + 1, len(X))])
    ref = jaxdml.LSI(max_iter=50, preprocessor=X).fit(pairs, np.where(S[pairs[:, 0], pairs[:, 1]], 1, -1))
    np.testing.assert_allclose(side.metric(), ref.components_.T @ ref.components_, atol=1e-8)
    np.testing.assert_allclose(dml.LSI(max_iter=50).fit(X, [S]).metric(), side.metric(), atol=1e-8)
    with pytest.raises(ValueError, match="side information"):
        dml.LSI().fit(X, [S[:3]])


# ---------------------------------------------------------------------------------------------- classifiers
def _loo_proba(Z, y, k):
    """Leave-one-out k-NN class frequencies from scikit-learn's neighbours of the training points (a point
    is not its own neighbour there)."""
    idx = KNeighborsClassifier(k).fit(Z, y).kneighbors(n_neighbors=k, return_distance=False)
    return (y[idx][..., None] == np.unique(y)).mean(1)


def test_documented_classifier_example(iris, nca_iris):
    X, y = iris
    nca = nca_iris
    knn = kNN(n_neighbors=7, dml_algorithm=nca)
    knn.fit(X, y)
    loo = _loo_proba(nca.transform(X), y, 7)
    np.testing.assert_allclose(knn.predict_proba(), loo, atol=1e-12)
    ref = cross_val_predict(KNeighborsClassifier(7), nca.transform(X)[::10], y[::10], cv=LeaveOneOut())
    np.testing.assert_array_equal(kNN(7, nca).fit(X[::10], y[::10]).predict(), ref)  # scikit-learn's own LOO
    np.testing.assert_array_equal(knn.predict(), np.argmax(loo, 1))
    assert knn.score() == pytest.approx(np.mean(np.argmax(loo, 1) == y))
    assert knn.score_orig() == pytest.approx(np.mean(np.argmax(_loo_proba(X, y, 7), 1) == y))
    assert knn.loo_score(X) == knn.score_orig()
    assert kNN(1, dml.Euclidean().fit(X, y)).fit(X, y).score(X, y) == 1.0
    lda = LDA()
    mknn = MultiDML_kNN(n_neighbors=7, dmls=[lda, nca])
    mknn.fit(X, y)
    assert mknn.dmls_string() == ["EUCLIDEAN", "LDA", "NCA"]
    scores = mknn.score_all()
    assert isinstance(scores, np.ndarray) and scores[2] == pytest.approx(knn.score())
    lda_loo = np.argmax(_loo_proba(lda.transform(X), y, 7), 1)  # lda was fitted in place
    np.testing.assert_allclose(scores, [knn.score_orig(), np.mean(lda_loo == y), knn.score()])
    assert len(mknn.elapsed()) == 3 and mknn.elapsed()[0] == 0.0
    mknn.add(dml.Euclidean())
    assert mknn.fit(X, y).dmls_string()[-1] == "Euclidean" and len(mknn.predict_all(X[:5])) == 4
    ncmc = NCMC_Classifier(centroids_num=2)
    ncmc.fit(X, y)
    assert ncmc.score(X, y) > 0.9
    dml_ncmc = Pipeline([("nca", nca), ("ncmc", ncmc)])
    assert dml_ncmc.fit(X, y).score(X, y) > 0.9


def test_ncmc_classifier_and_prototypes(small):
    X, y = small
    ncmc = NCMC_Classifier(centroids_num=[2, 1, 1], random_state=0).fit(X, y)
    np.testing.assert_array_equal(np.bincount(ncmc.ncmc_.centroid_labels_), [2, 1, 1])
    cnn = dml.CondensedNearestNeighbors().fit(X, y)
    Xc, yc = cnn.get_condensed_neighbors()
    np.testing.assert_array_equal(Xc, X[cnn.get_condensed_neighbor_indexes()])
    rnn = dml.ReducedNearestNeighbors().fit(X, y)
    assert set(rnn.get_reduced_neighbor_indexes()) <= set(cnn.get_condensed_neighbor_indexes())
    assert KNeighborsClassifier(1).fit(*rnn.get_reduced_neighbors()).score(X, y) == 1.0



def test_knn_euclidean_and_loo_methods_match_scikit_learn(small):
    X, y = small
    L = np.array([[1.0, 0.0, 0.5, 0.0], [0.0, 2.0, 0.0, 1.0]])
    knn = kNN(5, dml.Transformer(L).fit(X, y)).fit(X, y)
    Xt = X[::4] + 0.01
    sk = KNeighborsClassifier(5).fit(X, y)  # the *_orig methods: the Euclidean distance
    np.testing.assert_array_equal(knn.predict_orig(Xt), sk.predict(Xt))
    np.testing.assert_allclose(knn.predict_proba_orig(Xt), sk.predict_proba(Xt), atol=1e-12)
    np.testing.assert_allclose(knn.predict_proba_orig(), _loo_proba(X, y, 5), atol=1e-12)
    np.testing.assert_array_equal(knn.predict_orig(), knn.loo_pred(X))
    np.testing.assert_allclose(knn.loo_prob(X @ L.T), knn.predict_proba(), atol=1e-12)  # already transformed
    np.testing.assert_allclose(knn.loo_prob(X @ L.T), _loo_proba(X @ L.T, y, 5), atol=1e-12)


def test_ncmc_and_multiknn_parameters_and_probabilities(small, monkeypatch, capsys):
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    ncmc = NCMC_Classifier(centroids_num=1, random_state=0)
    assert ncmc.get_params() == {"centroids_num": 1, "random_state": 0}
    ncmc.set_params(centroids_num=2, n_init=2)
    assert ncmc.get_params() == {"centroids_num": 2, "random_state": 0, "n_init": 2}
    with pytest.warns(dml.PyDMLCompatibilityWarning, match=r"k-means arguments \['max_iter'\] have no counterpart"):
        NCMC_Classifier(centroids_num=1, max_iter=5).fit(X, y)
    one = NCMC_Classifier(centroids_num=1).fit(X, y)  # one centroid per class: the class means
    proba = one.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    means = np.stack([X[y == c].mean(0) for c in np.unique(y)])
    nearest = np.argmin(((X[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(np.argmax(proba, 1), nearest)

    mknn = MultiDML_kNN(3, dmls=dml.Euclidean(), weights="distance")
    assert mknn.get_params() == {"n_neighbors": 3, "dmls": mknn.dmls, "verbose": False, "weights": "distance"}
    mknn.set_params(n_neighbors=5, weights="uniform", verbose=True, metric="manhattan")
    assert mknn.n_neighbors == 5 and mknn.knn_args == {"weights": "uniform", "metric": "manhattan"}
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="metric and p are ignored"):
        mknn.fit(X, y)
    assert "Training DML  Euclidean" in capsys.readouterr().out  # verbose, as in pyDML
    all_proba = mknn.predict_proba_all(X[:6])
    ref = KNeighborsClassifier(5).fit(X, y).predict_proba(X[:6])
    assert len(all_proba) == 2  # the Euclidean distance, then the learner (also Euclidean)
    for p in all_proba:
        np.testing.assert_allclose(p, ref, atol=1e-12)
    for p in mknn.predict_proba_all():
        np.testing.assert_allclose(p, _loo_proba(X, y, 5), atol=1e-12)


# ---------------------------------------------------------------------------------------------- tuning
def test_tune_against_scikit_learns_cross_validation(small):
    pd = pytest.importorskip("pandas")
    X, y = small
    results, best, lda_best, detailed = dml.tune(LDA, X, y, dml_params={}, tune_args={"num_dims": [1, 2]},
                                                 metrics=[3, "acum_eig", "time"], n_folds=5, n_reps=2, seed=28)
    assert isinstance(results, pd.DataFrame) and list(results.columns) == ["3-NN", "acum_eig", "time"]
    assert results.shape == (2, 3) and len(detailed) == 2
    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=28)  # 40 training rows in every fold
    for i, n in enumerate([1, 2]):
        ref = cross_val_score(Pipeline([("dml", jaxdml.LDA(n)), ("knn", KNeighborsClassifier(3))]), X, y, cv=cv)
        assert results.iloc[i, 0] == pytest.approx(ref.mean())
        table = detailed[str({"num_dims": n})]
        assert list(table.index) == [f"SPLIT {k}" for k in range(1, 11)] + ["MEAN", "STD"]
        np.testing.assert_allclose(table["3-NN"].iloc[:10], ref)
    assert best == (results.index[int(np.argmax(results.iloc[:, 0]))], results.iloc[:, 0].max())
    assert isinstance(lda_best, LDA) and lda_best.num_dims == best[0]["num_dims"]
    assert results["acum_eig"].iloc[1] == pytest.approx(1.0)  # both discriminant directions kept


def test_tune_knn_cross_validate_and_pandas(small, monkeypatch):
    pd = pytest.importorskip("pandas")
    X, y = small
    results, best, anmm, detailed = dml.tune_knn(dml.ANMM, X, y, 3, {"n_friends": 2}, {"num_dims": [1, 3]},
                                                 n_folds=3, seed=0)
    assert list(results.columns) == ["SCORE"] and anmm.get_params()["n_friends"] == 2
    assert list(detailed[str({"num_dims": 3})].columns) == ["SCORE", "FIT TIME", "PREDICT TIME"]
    cv = RepeatedStratifiedKFold(n_splits=3, n_repeats=1, random_state=0)
    ref = cross_val_score(Pipeline([("d", jaxdml.ANMM(3, n_friends=2)), ("k", KNeighborsClassifier(3))]), X, y, cv=cv)
    assert results.iloc[1, 0] == pytest.approx(ref.mean())
    table = dml.metadata_cross_validate(dml.ANMM(num_dims=2), X, y, [1, "num_dims"], n_folds=3)
    assert list(table.columns) == ["1-NN", "num_dims"] and (table["num_dims"].iloc[:4] == 2).all()
    table = dml.cross_validate(KNeighborsClassifier(3), X, y, n_folds=3, seed=0)
    assert table.loc["MEAN", "SCORE"] == pytest.approx(cross_val_score(KNeighborsClassifier(3), X, y, cv=cv).mean())
    from jaxdml.pydml._tune import _pandas

    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(ImportError, match="pip install pandas"):
        _pandas()
    assert pd is not None


# ---------------------------------------------------------------------------------------------- plots
@pytest.mark.slow  # NCA and LDA compile for two features, 13 region panels
def test_documented_plotting_examples(iris, nca_iris):  # nca_iris: NCA's program on iris compiled once
    X, y = iris
    nca, lda, ncmc = NCA(), LDA(), NCMC_Classifier(centroids_num=2)
    grid = dict(grid_split=[120, 120])  # pyDML's default is 400 x 400: the same calls, a coarser grid
    f1 = classifier_plot(X[:, [0, 1]], y, clf=ncmc, title="NCMC Classification", cmap="rainbow", figsize=(12, 6),
                         **grid)
    f2 = knn_plot(X[:, [0, 1]], y, k=3, title="3-NN Classification", cmap="rainbow", figsize=(12, 6), **grid)
    f3 = dml_plot(X[:, [0, 1]], y, clf=ncmc, dml=nca, title="NCMC Classification + NCA", cmap="rainbow",
                  figsize=(12, 6), **grid)
    f4 = knn_plot(X[:, [0, 1]], y, k=2, dml=lda, title="3-NN Classification + LDA", cmap="rainbow", figsize=(12, 6),
                  **grid)
    f5 = dml_plot(X[:, [0, 1]], y, clf=ncmc, dml=nca, title="NCMC Classification + NCA", cmap="rainbow",
                  transform=False, figsize=(12, 6), **grid)
    f6 = knn_plot(X[:, [0, 1]], y, k=2, dml=lda, title="3-NN Classification + LDA", cmap="rainbow", transform=False,
                  figsize=(12, 6), **grid)
    f7 = dml_multiplot(X[:, [0, 1]], y, nrow=2, ncol=2, ks=[None, None, 3, 3], clfs=[ncmc, ncmc, None, None],
                       dmls=[None, nca, None, lda], transforms=[False, False, False, False], title="Comparing",
                       subtitles=["NCMC", "NCMC + NCA", "3-NN", "3-NN + LDA"], cmap="rainbow", figsize=(12, 12),
                       **grid)
    f8 = knn_pairplots(X, y, k=3, sections="mean", dml=nca, title="pairplots", cmap="gist_rainbow", figsize=(24, 24),
                       grid_split=[40, 40])
    for f in (f1, f2, f3, f4, f5, f6):
        assert tuple(f.get_size_inches()) == (12.0, 6.0) and f._suptitle is not None
        assert f.axes[0].get_legend() is not None  # pyDML's legend: on the axes
    assert [a.get_title() for a in f7.axes] == ["NCMC", "NCMC + NCA", "3-NN", "3-NN + LDA"]
    assert len(f8.axes) == 16 and f8._suptitle.get_text() == "pairplots"
    # transform=True draws the data after NCA: the points of f3 are nca.transform(X)
    Z = nca.fit(X[:, [0, 1]], y).transform()
    np.testing.assert_allclose(f3.axes[0].collections[-1].get_offsets(), Z, rtol=1e-6)


@pytest.mark.slow  # NCA compiles for two features (the program the plotting examples use)
def test_tutorial_figures_improve_knn_axes_and_semi_supervision():
    # Section 2.5, improving 1-NN: three classes in parallel bands, NCA learns to stretch across them
    # (150 samples, as iris: NCA's program for two features is shared with the plotting examples)
    t, s = np.linspace(-10, 10, 70), np.linspace(-10, 10, 40)
    X = np.concatenate([np.c_[t, 0 * t], np.c_[s, 0.2 + 0 * s], np.c_[s, -0.2 + 0 * s]])
    y = np.array(["A"] * 70 + ["B"] * 40 + ["C"] * 40)
    nca = NCA()
    nca.fit(X, y)
    f = dml_multiplot(X, y, nrow=1, ncol=3, ks=[1, 1, 1], fitted=True, dmls=[None, nca, nca],
                      transforms=[False, False, True], cmap="gist_rainbow", figsize=(18, 6), grid_split=[80, 80])
    assert len(f.axes) == 3
    assert kNN(1, nca).fit(X, y).score() > kNN(1, nca).fit(X, y).score_orig()
    # axes selection: PCA moves the main direction onto the first axis
    rng = np.random.default_rng(28)
    R = np.array([[np.sqrt(2) / 2, -np.sqrt(2) / 2], [np.sqrt(2) / 2, np.sqrt(2) / 2]])
    LX = np.c_[np.linspace(-1, 1, 50), 0.2 * rng.random(50) - 0.1] @ R.T
    pca = dml.PCA(num_dims=2).fit(LX)
    assert np.var(pca.transform()[:, 0]) > 10 * np.var(pca.transform()[:, 1])
    assert dml.PCA(num_dims=1).fit(LX).transform().shape == (50, 1)
    # semi-supervised learning: classifiers fitted beforehand, a third colour for unlabelled points
    ang = np.linspace(0, 2 * np.pi, 100, endpoint=False)
    X = np.concatenate([np.c_[np.cos(ang), np.sin(ang)], 2 * np.c_[np.cos(ang), np.sin(ang)]])
    y = np.repeat(["0", "1"], 100)
    yy = y.copy()
    yy[20:100], yy[120:] = "?", "?"
    knn1 = KNeighborsClassifier(1).fit(X[yy != "?"], yy[yy != "?"])
    knn2 = KNeighborsClassifier(1).fit(X, y)
    f = dml_multiplot(X, yy, clfs=[knn1, knn2], label_colors=["red", "blue", "lightgray"], fitted=True,
                      figsize=(12, 6), grid_split=[60, 60])
    assert [t.get_text() for t in f.legends[0].get_texts()] == ["0", "1", "?"]


def test_tutorial_figures_kernel_trick_and_digits():
    from sklearn.svm import SVC

    # the kernel trick: a band not separable by a line, then separable after mapping x -> (x, x^2)
    x = np.concatenate([np.linspace(-0.9, 0.9, 40), np.linspace(1.1, 1.5, 20), np.linspace(-1.5, -1.1, 20)])
    X = np.c_[x, x * x]
    y = np.where(np.abs(x) > 1, 1, -1)
    L = np.array([[1.0, 0.0], [0.0, 0.0]])
    f = dml_multiplot(X, y, nrow=1, ncol=2, clfs=[SVC(kernel="linear"), SVC(kernel="poly", degree=2)],
                      transformers=[None, L], transforms=[False, True], cmap="rainbow", figsize=(12, 6),
                      grid_split=[60, 60])
    assert len(f.axes) == 2
    f = dml_plot(X, y, clf=SVC(kernel="linear"), transform=False, cmap="rainbow", figsize=(4, 4),
                 xrange=[-1.6, 1.6], yrange=[-0.1, 2.5], grid_split=[60, 60])
    assert f.axes[0].get_xlim() == (-1.6, 1.6) and f.axes[0].get_ylim() == (-0.1, 2.5)
    # dimensionality reduction: digits on the plane learned by LDA
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [0, 1, 3, 4, 6, 9])
    f = knn_plot(X[keep][::4], y[keep][::4], k=3, dml=LDA(num_dims=2), cmap="gist_rainbow", figsize=(12, 8),
                 grid_split=[60, 60])
    assert len(f.axes[0].get_legend().get_texts()) == 6
    f = dml.classifier_plot_3d(X[keep][::4, [20, 28, 36]], y[keep][::4], SVC(), grid_split=[8, 8, 8])
    assert f.axes[0].name == "3d"


class _RecordingKNN(KNeighborsClassifier):
    """1-NN that keeps the rows it was asked to predict (the plotting grid)."""

    def predict(self, X):
        self.asked_ = np.asarray(X)
        return super().predict(X)


def _spacing(values):
    return np.diff(np.unique(np.round(values, 12)))


def test_plot_options_translate_to_jaxdmls(small, monkeypatch):
    """pyDML's drawing options: ``grid_step`` when ``grid_split`` is unset, ``f``/``ax`` (both) draw into
    the given axes, ``title`` on the figure and ``subtitle`` on the panel, figure options other than
    ``figsize`` warn; dml_multiplot's default layout (two columns) and axis labels; the pair plots
    (with a distance, on the transformed data); the 3-D plot's fixed grid."""
    X, y = small
    monkeypatch.setattr("jaxdml.pydml._base._WARNED", set())
    X2 = X[:, :2]
    clf = _RecordingKNN(1).fit(X2, y)
    fig, ax = plt.subplots()
    with pytest.warns(dml.PyDMLCompatibilityWarning, match=r"classifier_plot: figure options \['dpi'\] other than"):
        out = classifier_plot(X2, y, clf, fitted=True, f=fig, ax=ax, grid_split=None, grid_step=[0.25, 0.2],
                              title="T", subtitle="S", dpi=50)
    assert out is fig and fig.axes == [ax] and ax.get_title() == "S" and fig._suptitle.get_text() == "T"
    np.testing.assert_allclose(_spacing(clf.asked_[:, 0]), 0.25)
    np.testing.assert_allclose(_spacing(clf.asked_[:, 1]), 0.2)
    assert classifier_plot(X2, y, clf, fitted=True, f=fig, grid_split=[4, 3]) is not fig  # ax missing: a new figure
    assert [len(np.unique(clf.asked_[:, c])) for c in (0, 1)] == [4, 3]
    # three panels in pyDML's default layout: two columns; labels per panel, no automatic titles
    f = dml_multiplot(X2, y, ks=[1, 3, 5], xlabels=["a", "b", "c"], ylabels=["d", "e", "f"], grid_split=[4, 4])
    panels = [a for a in f.axes if a.axison]
    assert len(panels) == 3 and panels[0].get_subplotspec().get_geometry()[:2] == (2, 2)
    assert [(a.get_xlabel(), a.get_ylabel(), a.get_title()) for a in panels] == [("a", "d", ""), ("b", "e", ""),
                                                                                ("c", "f", "")]
    # pair plots: every pair of features; with a distance, of the transformed data
    X3 = X[:, :3]
    f = dml.classifier_pairplots(X3, y, KNeighborsClassifier(1), grid_split=[4, 4], title="P")
    assert len(f.axes) == 9 and f._suptitle.get_text() == "P"
    L = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, -1.0]])
    f = dml.dml_pairplots(X3, y, KNeighborsClassifier(1), transformer=L, grid_split=[4, 4])
    assert len(f.axes) == 4
    Z = X3 @ L.T  # the off-diagonal panels: feature 1 against 0 of X L^T, and 0 against 1
    np.testing.assert_allclose(f.axes[1].collections[-1].get_offsets(), Z[:, [1, 0]], rtol=1e-12)
    np.testing.assert_allclose(f.axes[2].collections[-1].get_offsets(), Z[:, [0, 1]], rtol=1e-12)
    # 3-D: no grid step there; 40 points per axis, with a warning
    clf3 = _RecordingKNN(1).fit(X3, y)
    with pytest.warns(dml.PyDMLCompatibilityWarning, match="a grid step has no counterpart in 3-D; 40 points"):
        f = dml.classifier_plot_3d(X3, y, clf3, fitted=True, grid_split=None, plot_regions=None)
    assert f.axes[0].name == "3d" and [len(np.unique(clf3.asked_[:, c])) for c in range(3)] == [40, 40, 40]
