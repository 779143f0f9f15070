"""Ordinal metric learning (LODML, KODML, CMOML, KCMOML) and the k-NN ordinal predictor: gradients,
the chain count against brute force, loss properties, kernel = linear, errors."""

import functools
import warnings
import itertools
from math import comb

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdml
from jaxdml.exceptions import ConvergenceWarning
from jaxdml.losses import cmoml, odml, ordered_chains
from jaxdml.linalg import pairwise_sq_dists
from jaxdml.methods.ordinal._ordinal import (_problem, _searched_problem, nearest_neighbourhoods, nearest_search,
                                     odml_neighbourhoods, odml_search)

_sq_dists = functools.partial(pairwise_sq_dists, xp=np)  # the squared distances the exact path searches


def _graded(rng, n=60, noise=3):
    """Grades 0..3 from feature 0; ``noise`` more features of pure noise on a larger scale."""
    X = rng.uniform(size=(n, 1 + noise))
    X[:, 1:] *= 2.0
    y = np.minimum((X[:, 0] * 4).astype(int), 3)
    return X, y


#: the losses, compiled (eager evaluation dispatches every primitive separately)
_LOSS = {"odml": jax.jit(odml), "cmoml": jax.jit(cmoml, static_argnames="chain_size")}
_GRAD = {"odml": jax.jit(jax.grad(odml)), "cmoml": jax.jit(jax.grad(cmoml), static_argnames="chain_size")}
_VALUE_GRAD = {"odml": jax.jit(jax.value_and_grad(odml)),
               "cmoml": jax.jit(jax.value_and_grad(cmoml), static_argnames="chain_size")}


def _prob(X, y, which="cmoml", size=10, pad_to="auto"):
    hood = (functools.partial(nearest_neighbourhoods, size=size) if which == "cmoml"
            else functools.partial(odml_neighbourhoods, n_targets=3, n_impostors=5))
    return _problem(X, y.astype(float), _sq_dists(X), hood, pad_to)[0]


@pytest.mark.parametrize("which", ["odml", "cmoml"])
def test_gradients_match_finite_differences(rng, x64, which):
    X, y = _graded(rng, n=40)
    prob = _prob(X, y, which)
    hyper = {} if which == "odml" else dict(temperature=0.3)
    f = jax.jit(lambda P: _LOSS[which](P, prob, **hyper))
    L = jnp.asarray(rng.normal(size=(3, 4)))
    if which == "cmoml":  # smooth: JAX's numerical check of reverse mode
        check_grads(f, (L,), order=1, modes=("rev",), atol=1e-6, rtol=1e-6)
    for _ in range(3):  # the hinge is smooth almost everywhere: central differences along random directions
        V = jnp.asarray(rng.normal(size=L.shape))
        eps = 1e-6
        fd = (f(L + eps * V) - f(L - eps * V)) / (2 * eps)
        g = _GRAD[which](L, prob, **hyper)
        assert abs(float(fd) - float(jnp.sum(g * V))) < 1e-6 * max(1.0, abs(float(fd)))


def _brute_chains(d, gaps, k):
    """Chains by enumerating every k-subset (independent of the dynamic programme)."""
    order = np.argsort(d, kind="stable")
    g = np.asarray(gaps)[order]
    count = 0
    for idx in itertools.combinations(range(len(g)), k):
        s = g[list(idx)]
        if (np.all(s >= 0) or np.all(s <= 0)) and np.all(np.diff(np.abs(s)) >= 0):
            count += 1
    return count


def test_exact_chain_count_and_soft_limit(rng, x64):
    X, y = _graded(rng, n=30)
    prob = _prob(X, y, size=8)
    D = _sq_dists(X / 1.0)
    neigh = np.asarray(prob.neighbours)[:30]
    total = 0
    for i in range(30):
        d, gaps = D[i, neigh[i]], y[neigh[i]] - y[i]
        exact = ordered_chains(d, gaps, 3)
        assert exact == _brute_chains(d, gaps, 3)
        total += exact
    # the soft count tends to the exact one as the temperature goes to 0 (no distance ties here)
    soft = -float(_LOSS["cmoml"](jnp.eye(4), prob, chain_size=3, temperature=1e-6)) * 30 * comb(8, 3)
    assert abs(soft - total) < 1e-6 * total


def test_a_metric_that_orders_the_grades_has_lower_losses(rng, x64):
    X, y = _graded(rng, n=80)
    good, bad = jnp.diag(jnp.array([1.0, 0.0, 0.0, 0.0])), jnp.diag(jnp.array([0.0, 1.0, 0.0, 0.0]))
    prob_c, prob_o = _prob(X, y, "cmoml"), _prob(X, y, "odml")
    c, o = _LOSS["cmoml"], _LOSS["odml"]
    assert float(c(good, prob_c)) < float(c(bad, prob_c)) - 0.05
    assert float(o(good, prob_o)) < float(o(bad, prob_o))  # same trace: only the hinge differs
    # CMOML's loss does not depend on the scale of L
    np.testing.assert_allclose(float(c(3.0 * good + bad, prob_c)), float(c(good + bad / 3.0, prob_c)), rtol=1e-12)


@pytest.mark.parametrize("which", ["odml", "cmoml"])
def test_padding_does_not_change_the_loss(rng, x64, which):
    X, y = _graded(rng, n=30)
    L = jnp.asarray(rng.normal(size=(2, 4)))
    exact, padded = _prob(X, y, which, pad_to=None), _prob(X, y, which, pad_to=64)
    (v, g), (v_pad, g_pad) = _VALUE_GRAD[which](L, exact), _VALUE_GRAD[which](L, padded)
    np.testing.assert_allclose(float(v), float(v_pad), rtol=1e-12)
    np.testing.assert_allclose(g, g_pad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("which", ["odml", "cmoml"])
def test_anchor_blocks_do_not_change_the_loss(rng, x64, which):
    """Blocks of anchors (memory O(block m^2), the budget's rule for large n) give the one-block loss and
    gradient: 7 blocks of at most 5 anchors (the last padded) against every anchor at once."""
    X, y = _graded(rng, n=33)
    prob = _prob(X, y, which, pad_to=None)
    L = jnp.asarray(rng.normal(size=(2, 4)))
    m = prob.neighbours.shape[1]
    blocked = jax.jit(jax.value_and_grad(functools.partial(getattr(jaxdml.losses, which), block_elements=5 * m * m)))
    (v5, g5), (v, g) = blocked(L, prob), _VALUE_GRAD[which](L, prob)
    np.testing.assert_allclose(float(v5), float(v), rtol=1e-12)
    np.testing.assert_allclose(g5, g, rtol=1e-10, atol=1e-13)


def _chains(Z, y, size):
    D = _sq_dists(np.asarray(Z, dtype=np.float64))
    nb = np.argsort(D + np.diag(np.full(len(Z), np.inf)), axis=1, kind="stable")[:, :size]
    return sum(ordered_chains(D[i, nb[i]], y[nb[i]] - y[i], 3) for i in range(len(Z)))


@pytest.mark.parametrize("which", ["odml", "cmoml"])
def test_the_blockwise_search_gives_the_distance_matrix_problem(rng, x64, which):
    # LODML and CMOML search neighbourhoods blockwise (no n x n distance matrix): the same problem as
    # the one built from the full matrix (the same neighbours, ties included, and scale)
    X, y = _graded(rng, n=50)
    X[7], X[12] = X[3], X[3]  # equal distances: the lowest index first on both paths
    t = y.astype(float)
    if which == "cmoml":
        search, hood = functools.partial(nearest_search, size=10), functools.partial(nearest_neighbourhoods, size=10)
    else:
        search = functools.partial(odml_search, n_targets=3, n_impostors=5)
        hood = functools.partial(odml_neighbourhoods, n_targets=3, n_impostors=5)
    (a, _, ca), (b, _, cb) = _searched_problem(X, t, X, search, "auto"), _problem(X, t, _sq_dists(X), hood, "auto")
    np.testing.assert_array_equal(a.neighbours, b.neighbours)
    np.testing.assert_array_equal(a.neighbour_mask, b.neighbour_mask)
    assert ca == pytest.approx(cb, rel=1e-12)
    np.testing.assert_allclose(a.X, b.X, rtol=1e-12)


@pytest.mark.parametrize("name, kernel", [("lodml", jaxdml.KODML),
                                          pytest.param("cmoml", jaxdml.KCMOML, marks=pytest.mark.slow)])
def test_fit_converges_and_kernel_version_with_linear_kernel_equals_it(rng, x64, name, kernel):
    X, y = _graded(rng, n=40)
    hyper = dict(neighborhood_size=10) if name == "cmoml" else {}
    lin = jaxdml.fit(X, y, loss=name, **hyper)  # by name, with the defaults
    assert lin.converged and lin.loss < lin.loss_history[0]
    if name == "cmoml":  # the exact count (the paper's objective) grows too
        assert _chains(lin.transform(X), y, 10) > _chains(X, y, 10)
    ker = kernel(kernel="linear", **hyper).fit(X, y)
    # the kernel basis is an orthogonal change of coordinates: the same losses along the way, the same metric
    assert ker.converged_ and ker.n_iter_ == lin.n_iter
    np.testing.assert_allclose(ker.loss_curve_, lin.loss_history, rtol=1e-7)
    D_lin = _sq_dists(lin.transform(X))
    np.testing.assert_allclose(_sq_dists(ker.transform(X)), D_lin, rtol=1e-5, atol=1e-6 * D_lin.max())


@pytest.mark.filterwarnings("ignore::jaxdml.exceptions.ConvergenceWarning")
def test_max_rows_fits_a_grade_stratified_subsample(rng):
    from jaxdml.methods.core._sampling import stratified_subsample

    X, y = _graded(rng, n=120)
    kw = dict(max_iter=3, random_state=0)
    keep = stratified_subsample(np.unique(y, return_inverse=True)[1], 60, 0, min_per_class=11)
    sub = jaxdml.fit(X, y, loss="lodml", max_rows=60, **kw)
    assert sub.info["subsample"] and sub.info["n_fitted_rows"] == 60
    # each grade keeps n_targets + 1 rows; the rows are the stratified subsample's
    np.testing.assert_array_equal(sub.L, jaxdml.fit(X[keep], y[keep], loss="lodml", max_rows=None, **kw).L)
    whole = jaxdml.fit(X, y, loss="lodml", **kw)  # "auto" keeps every row of a small data set
    assert not whole.info["subsample"] and whole.info["n_fitted_rows"] == 120
    # the kernel versions share the rule (KCMOML: every grade keeps at least one row)
    ker = jaxdml.fit(X, y, loss="kcmoml", max_rows=60, neighborhood_size=10, **kw)
    assert ker.info["subsample"] and ker.info["n_fitted_rows"] == 60
    with pytest.raises(ValueError, match="max_rows"):
        jaxdml.CMOML(max_rows=5).fit(X, y)


def test_non_convergence_is_reported(rng):
    X, y = _graded(rng, n=40)
    with pytest.warns(ConvergenceWarning):
        est = jaxdml.LODML(max_iter=2).fit(X, y)
    assert not est.converged_


def test_errors(rng):
    X, y = _graded(rng, n=30)
    with pytest.raises(ValueError, match="integer grades"):
        jaxdml.LODML().fit(X, y + 0.5)
    with pytest.raises(ValueError, match="integer grades"):
        jaxdml.fit(X, rng.normal(size=30), loss="kcmoml")
    with pytest.raises(ValueError, match="single grade"):
        jaxdml.CMOML().fit(X, np.ones(30, int))
    with pytest.raises(ValueError, match="chain_size=5 exceeds"):
        jaxdml.CMOML(chain_size=5, neighborhood_size=4).fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        jaxdml.LODML(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="init"):
        jaxdml.KODML(init="pca").fit(X, y)
    with pytest.raises(ValueError, match="does not take"):
        jaxdml.fit(X, y, loss="lodml", batch_size=8)
    with pytest.raises(ValueError, match="integer grades"):
        jaxdml.KNeighborsOrdinal().fit(X, y * 0.3)


def test_knn_ordinal_predicts_the_median_grade(rng, x64):
    X, y = _graded(rng, n=40)
    Q = rng.uniform(size=(25, 4))
    for k in (1, 4, 5):
        model = jaxdml.KNeighborsOrdinal(k).fit(X, y)
        D = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        nb = np.argsort(D, axis=1, kind="stable")[:, :k]
        expect = np.sort(y[nb], axis=1)[:, (k - 1) // 2]
        np.testing.assert_array_equal(model.predict(Q), expect)
        assert model.score(Q, expect) == 0.0
    # under a metric that reads the grade feature, 5-NN recovers the training grades better
    learned = jaxdml.KNeighborsOrdinal(5, metric_learner=jaxdml.LODML()).fit(X, y)
    assert learned.score(X, y) > jaxdml.KNeighborsOrdinal(5).fit(X, y).score(X, y)


def _rare_class_with_duplicates(n, seed):
    """Min-max scaled rows of a two-class set with 2 % positives, half its rows one duplicated point,
    a constant feature and three outliers: valid data a default fit must handle."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n, 6, n_informative=5, n_redundant=0, weights=[0.98], random_state=seed)
    X[: n // 2] = X[n // 2 - 1]
    X = np.round(X, 1)
    X[:, 0] = 3.0
    X[np.random.default_rng(seed).integers(0, n, 3)] *= 1e3
    return (X - X.min(0)) / np.where(np.ptp(X, 0) > 0, np.ptp(X, 0), 1), y


def test_kcmoml_default_fits_near_duplicate_neighbourhoods():
    # an anchor whose neighbours are duplicates has a neighbourhood scale of round-off in the kernel
    # basis; its gradient overflowed through 1 / scale^2 ("not finite at the initial point")
    X, y = _rare_class_with_duplicates(800, 1)
    m = jaxdml.fit(X, y, loss="kcmoml", random_state=0)
    assert m.converged and np.all(np.isfinite(m.transform(X)))


@pytest.mark.slow
def test_every_method_that_learns_from_labels_fits_a_rare_class_with_duplicates():
    X, y = _rare_class_with_duplicates(600, 5)
    names = [n for n, r in jaxdml.methods().items() if (r.labels or r.supervised) and n != "euclidean"]
    assert len(names) >= 30
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = jaxdml.fit(X, y, loss=name, random_state=0)
        assert np.all(np.isfinite(m.transform(X))), name
