"""What pyDML users need, in jaxdml's own API: fixed distances (Metric, Transformer), leave-one-out
scoring of the stored training set, per-class centroid counts, prototype selection (CNN, RNN), and
the metadata() protocol in the tuning helpers. Each is checked against an independent computation."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from sklearn.datasets import load_iris
from sklearn.model_selection import LeaveOneOut, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid

import jaxdml
from jaxdml.classifiers._prototypes import condense, reduce_prototypes


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X / X.max(0), y


@pytest.fixture(scope="module")
def blobs():
    """60 points in 2-D, three overlapping classes (continuous: no distance ties)."""
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1, 2], 20)
    X = rng.normal(size=(60, 2)) + np.c_[y * 2.5, (y % 2) * 0.8]
    return X, y


# ---------------------------------------------------------------------------------------------- Metric, Transformer
def test_metric_and_transformer_distances_are_the_mahalanobis_ones(iris):
    X, _ = iris
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    M = A @ A.T + 0.1 * np.eye(4)
    m = jaxdml.Metric(M).fit(X)
    np.testing.assert_allclose(m.components_.T @ m.components_, M, atol=1e-10)
    np.testing.assert_allclose(pdist(m.transform(X)), pdist(X, "mahalanobis", VI=M), rtol=1e-8)
    L = rng.normal(size=(2, 4))
    t = jaxdml.Transformer(L).fit(X)
    np.testing.assert_allclose(t.transform(X), X @ L.T)
    np.testing.assert_allclose(t.metric(), L.T @ L)
    np.testing.assert_allclose(t.pair_distance(np.stack([X[:3], X[3:6]], 1)), np.linalg.norm((X[:3] - X[3:6]) @ L.T, axis=1))


def test_fixed_distances_reject_bad_matrices(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="not positive semidefinite"):
        jaxdml.Metric(-np.eye(4)).fit(X)
    with pytest.raises(ValueError, match="square"):
        jaxdml.Metric(np.ones((2, 3))).fit(X)
    with pytest.raises(ValueError, match="X has 4 features but the matrix is for 2"):
        jaxdml.Transformer(np.eye(2)).fit(X)
    with pytest.raises(ValueError, match="give the matrix M"):
        jaxdml.Metric().fit(X)
    with pytest.raises(ValueError, match="NaN"):
        jaxdml.Transformer([[np.nan, 1.0, 0.0, 0.0]]).fit(X)


# ---------------------------------------------------------------------------------------------- leave-one-out
@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_knn_leave_one_out_matches_sklearn(blobs, weights):
    X, y = blobs
    L = np.array([[1.0, 0.5], [0.0, 2.0]])
    knn = jaxdml.KNN(5, metric_learner=jaxdml.Transformer(L), weights=weights).fit(X, y)
    ref = cross_val_predict(KNeighborsClassifier(5, weights=weights), X @ L.T, y, cv=LeaveOneOut(), method="predict_proba")
    np.testing.assert_allclose(knn.predict_proba_loo(), ref, atol=1e-12)
    np.testing.assert_array_equal(knn.predict_loo(), np.argmax(ref, axis=1))
    assert knn.score_loo() == pytest.approx(np.mean(np.argmax(ref, axis=1) == y))
    assert knn.score(X, y) >= knn.score_loo()  # a sample is its own nearest neighbour in the ordinary score
    with pytest.raises(ValueError, match="leave-one-out needs n_neighbors"):
        jaxdml.KNN(60).fit(X, y).score_loo()


# ---------------------------------------------------------------------------------------------- NCMC, per class
def test_ncmc_classifier_takes_one_centroid_count_per_class(iris):
    X, y = iris
    clf = jaxdml.NCMCClassifier([2, 1, 3], random_state=0).fit(X, y)
    np.testing.assert_array_equal(np.bincount(clf.centroid_labels_), [2, 1, 3])
    np.testing.assert_allclose(clf.centroids_[clf.centroid_labels_ == 1][0], X[y == 1].mean(0))
    ones = jaxdml.NCMCClassifier([1, 1, 1]).fit(X, y)
    np.testing.assert_array_equal(ones.predict(X), NearestCentroid().fit(X, y).predict(X))
    with pytest.raises(ValueError, match="2 entries for 3 classes"):
        jaxdml.NCMCClassifier([1, 2]).fit(X, y)
    with pytest.raises(ValueError, match="class 2 must be an int between 1 and its 50 samples"):
        jaxdml.NCMCClassifier([1, 1, 51]).fit(X, y)


# ---------------------------------------------------------------------------------------------- CNN, RNN
def _nn_labels(Z, y, store, rows):
    """Labels of the nearest store member of each row, every distance computed afresh."""
    D = ((Z[rows][:, None, :] - Z[store][None, :, :]) ** 2).sum(-1)
    return y[np.asarray(store)[np.argmin(D, axis=1)]]


def _brute_condense(Z, y):
    """Hart's rule written out: the store's 1-NN rule recomputed from scratch for every sample."""
    store, added = [0], True
    while added:
        added = False
        for i in range(1, len(Z)):
            if i in store:
                continue
            if _nn_labels(Z, y, store, [i])[0] != y[i]:
                store.append(i)
                added = True
    return sorted(store)


def _brute_reduce(Z, y, store):
    """Gates' rule written out: drop a member when 1-NN on the rest still gets every sample right."""
    kept = list(store)
    for i in store:
        rest = [j for j in kept if j != i]
        if rest and np.all(_nn_labels(Z, y, rest, np.arange(len(Z))) == y):
            kept = rest
    return sorted(kept)


def test_condensed_and_reduced_neighbours_match_the_brute_force_rules(blobs):
    X, y = blobs
    cnn_ref = _brute_condense(X, y)
    np.testing.assert_array_equal(condense(X, y), cnn_ref)
    rnn_ref = _brute_reduce(X, y, cnn_ref)
    np.testing.assert_array_equal(reduce_prototypes(X, y, cnn_ref), rnn_ref)
    assert len(rnn_ref) < len(cnn_ref) < len(X)  # both select, and the reduction removes something here
    cnn = jaxdml.CondensedNearestNeighbors().fit(X, y)
    np.testing.assert_array_equal(cnn.sample_indices_, cnn_ref)
    assert cnn.score(X, y) == 1.0  # a condensed set is consistent with the training set
    assert KNeighborsClassifier(1).fit(X[rnn_ref], y[rnn_ref]).score(X, y) == 1.0  # so is the reduced one
    Xs, ys = jaxdml.ReducedNearestNeighbors().fit_resample(X, y)
    np.testing.assert_array_equal(Xs, X[rnn_ref])
    np.testing.assert_array_equal(ys, y[rnn_ref])


def test_prototype_selection_under_a_learned_metric(blobs):
    X, y = blobs
    L = np.array([[3.0, 0.0], [0.0, 0.2]])  # the first feature separates the classes best
    Z = X @ L.T
    rnn = jaxdml.ReducedNearestNeighbors(jaxdml.Transformer(L)).fit(X, y)
    np.testing.assert_array_equal(rnn.sample_indices_, _brute_reduce(Z, y, _brute_condense(Z, y)))
    assert not np.array_equal(rnn.sample_indices_, jaxdml.ReducedNearestNeighbors().fit(X, y).sample_indices_)
    np.testing.assert_array_equal(rnn.predict(X[:7]), KNeighborsClassifier(1).fit(Z[rnn.sample_indices_],
                                                                                  y[rnn.sample_indices_]).predict(Z[:7]))
    with pytest.raises(ValueError, match="metric_learner"):
        jaxdml.CondensedNearestNeighbors(metric_learner=3).fit(X, y)


def test_an_inconsistent_store_is_not_reduced():
    X = np.array([[0.0], [0.0], [1.0]])  # two identical points with different labels
    y = np.array([0, 1, 1])
    np.testing.assert_array_equal(reduce_prototypes(X, y, [0, 2]), [0, 2])


# ---------------------------------------------------------------------------------------------- metadata() in tuning
class _WithMetadata(jaxdml.Transformer):
    def metadata(self):
        return {"trace": float(np.trace(self.metric_)), "label": "not a number"}


def test_metadata_method_feeds_the_tuning_diagnostics(iris):
    X, y = iris
    out = jaxdml.metadata_cross_validate(_WithMetadata(np.diag([1.0, 2.0, 3.0, 4.0])), X, y, metrics=[3, "trace"],
                                         n_folds=3, seed=0)
    np.testing.assert_allclose(out["trace"], 30.0)
    meta = jaxdml.tuning.metadata(_WithMetadata(np.eye(4)).fit(X))
    assert meta["trace"] == 4.0 and "label" not in meta
