"""LMNN with an active set of impostors: the restricted objective, the exact blockwise search and
the solver that alternates them (jaxdml/solvers/_lmnn_active.py)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdml
from jaxdml import losses
from jaxdml.exceptions import ConvergenceWarning
from jaxdml.neighbors import _within_radius, active_impostors
from jaxdml.solvers._lmnn_active import _radii, initial_scale, minimize_active_set, set_value
from jaxdml.methods.core._sampling import stratified_subsample


def _data(rng, n, d=5, c=4):
    X = rng.random((n, d))
    y = rng.integers(0, c, n)
    X[:, 0] += 0.35 * y
    return X, y


@pytest.fixture
def small_threshold():
    """Route loss="lmnn" to the active-set solver above 400 samples (instead of 4096)."""
    from jaxdml.methods.core._gradient import BLOCK_ELEMENTS, gradient_method
    from jaxdml.methods.gradient._lmnn import LMNN_CONSTRAINTS, LMNN_DEFAULTS, LMNN_METHOD

    record = gradient_method("lmnn", LMNN_METHOD.loss._replace(large_n=400), defaults=LMNN_DEFAULTS,
                             constraints={**LMNN_CONSTRAINTS, **BLOCK_ELEMENTS}, estimator="LMNN",
                             route=LMNN_METHOD.route)
    jaxdml.register_method(record, replace=True)
    yield
    jaxdml.register_method(LMNN_METHOD, replace=True)


def _active_set(L, prob, margin=1.0, slack=0.5, block_elements=None):
    Z, inner, outer, _ = _radii(L, prob.X, prob.targets, prob.target_mask, prob.sample_mask, margin, slack)
    a, l, strict = active_impostors(Z, np.asarray(prob.y), np.asarray(prob.sample_mask) > 0, outer, inner,
                                    block_elements=block_elements)
    return a, l, strict


def _pad(a, l, m, size=1 << 15):
    """Pad the pair arrays to a fixed size (mask 0): one compiled evaluation for every set."""
    extra = size - a.size
    return (np.concatenate([a, np.zeros(extra, a.dtype)]), np.concatenate([l, np.zeros(extra, l.dtype)]),
            np.concatenate([m, np.zeros(extra)]))


def test_active_objective_equals_exact_objective_at_the_refresh_point(rng, x64):
    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3, pad_to=320)
    L = jnp.asarray(2.0 * np.eye(5) + 0.3 * rng.normal(size=(5, 5)))
    pairs_vg = jax.jit(jax.value_and_grad(lambda P, prob, a, l, m, mu, margin: losses.lmnn_pairs(
        P, prob, pair_anchor=a, pair_impostor=l, pair_mask=m, mu=mu, margin=margin)))
    exact_vg = jax.jit(jax.value_and_grad(lambda P, prob, mu, margin: losses.lmnn(P, prob, mu=mu, margin=margin)))
    for margin, mu in ((1.0, 0.5), (0.3, 0.2)):
        a, l, strict = _active_set(L, prob, margin=margin)
        assert 0 < a.size < 1 << 15  # a real subset of the pairs
        v, g = pairs_vg(L, prob, *_pad(a, l, np.ones(a.size)), mu, margin)
        v_ex, g_ex = exact_vg(L, prob, mu, margin)
        np.testing.assert_allclose(float(v), float(v_ex), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g), np.asarray(g_ex), rtol=1e-10, atol=1e-12)
        # the strict subset (no slack) already holds every non-zero hinge
        v_strict, _ = pairs_vg(L, prob, *_pad(a, l, strict.astype(float)), mu, margin)
        np.testing.assert_allclose(float(v_strict), float(v_ex), rtol=1e-12)


def test_host_value_of_a_set_is_the_restricted_and_the_exact_objective(rng, x64):
    """The solver's trust region compares values computed on the host from the refresh's own distances:
    they are :func:`lmnn_pairs` on any set, and :func:`lmnn` on the active set."""
    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3, pad_to=320)
    L = jnp.asarray(2.0 * np.eye(5) + 0.3 * rng.normal(size=(5, 5)))
    tw = np.asarray(prob.target_mask) * np.asarray(prob.sample_mask)[:, None]
    _, _, _, dt = _radii(L, prob.X, prob.targets, prob.target_mask, prob.sample_mask, 1.0, 0.5)
    for margin, mu in ((1.0, 0.5), (0.3, 0.2)):
        a, l, strict = _active_set(L, prob, margin=margin)
        dist = np.sum(((np.asarray(prob.X)[a] - np.asarray(prob.X)[l]) @ np.asarray(L).T) ** 2, axis=1)
        value = set_value(np.asarray(dt), tw, a, dist, mu=mu, margin=margin, n_rows=300, piece=97)
        exact = losses.lmnn(L, prob, mu=mu, margin=margin)
        np.testing.assert_allclose(value, float(exact), rtol=1e-12)
        half = np.arange(a.size) % 2 == 0  # a set that misses violators: the restricted objective
        restricted = losses.lmnn_pairs(L, prob, pair_anchor=a[half], pair_impostor=l[half],
                                       pair_mask=np.ones(half.sum()), mu=mu, margin=margin)
        part = set_value(np.asarray(dt), tw, a[half], dist[half], mu=mu, margin=margin, n_rows=300)
        assert part < value
        np.testing.assert_allclose(part, float(restricted), rtol=1e-12)


def test_blockwise_search_is_exact_and_never_holds_n_by_n(rng):
    X, y = _data(rng, 700)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    L = jnp.asarray(3.0 * np.eye(5), jnp.float32)
    a, l, strict = _active_set(L, prob, block_elements=700 * 50)  # 14 blocks of 50 anchors
    a2, l2, s2 = _active_set(L, prob)  # one block
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(l, l2)
    np.testing.assert_array_equal(strict, s2)
    # naive NumPy reference (float64); pairs within float32 round-off of the radius may differ
    Z = X @ np.asarray(L, np.float64).T
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    far = np.take_along_axis(D, np.asarray(prob.targets), 1).max(1)
    ref = (y[:, None] != y[None, :]) & (D < (far + 1.5)[:, None])
    got = np.zeros_like(ref)
    got[a, l] = True
    close = np.abs(D - (far + 1.5)[:, None]) < 1e-4
    assert not np.any((got != ref) & ~close)
    n = 700
    Zj = jnp.asarray(Z, jnp.float32)
    compiled = _within_radius.lower(jnp.int32(0), Zj, jnp.sum(Zj * Zj, 1), prob.y, jnp.ones(n, bool),
                                    jnp.zeros(n), jnp.zeros(n), block=50).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < n * n  # one block of 50 rows, not n x n


def test_initial_scale_minimises_the_objective_along_the_ray(rng, x64):
    X, y = _data(rng, 200)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    a = initial_scale(X, y, np.ones(200, bool), prob.targets, prob.target_mask, mu=0.5, margin=1.0,
                      n_anchors=200, n_candidates=200)  # every anchor and candidate: exact
    g = jax.jit(lambda s: losses.lmnn(jnp.sqrt(s) * jnp.eye(5), prob))
    f = lambda s: float(g(s))  # noqa: E731
    grid = np.geomspace(a / 4, a * 4, 41)
    assert f(a) <= min(f(s) for s in grid) + 1e-9


@pytest.mark.parametrize("c", [1e-3, 1e-4, 30.0])
def test_initial_scale_is_scale_free(rng, x64, c):
    """Squared distances scale by ``c**2``, so the minimiser along the ray scales by ``1 / c**2``: rows that live
    in a tiny range (min-max scaled data with a few extreme outliers) get the factor they need, not a capped one
    (the minimiser here is near 1, so at ``c = 1e-3`` it is near 1e6, far above the former 1e4 cap)."""
    X, y = _data(rng, 200)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    kw = dict(mu=0.5, margin=1.0, n_anchors=200, n_candidates=200, random_state=0)
    a = initial_scale(X, y, np.ones(200, bool), prob.targets, prob.target_mask, **kw)
    a_c = initial_scale(X * c, y, np.ones(200, bool), prob.targets, prob.target_mask, **kw)
    np.testing.assert_allclose(a_c, a / c**2, rtol=1e-6)


@pytest.mark.slow
def test_solver_matches_full_batch_lbfgs_and_beats_the_sampled_path(rng, small_threshold):
    X, y = _data(rng, 500)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    exact = jax.jit(losses.lmnn)
    act = jaxdml.fit(X, y, loss="lmnn")
    assert act.info["solver"] == "active_set" and act.converged and act.info["refreshes"] >= 2
    full = jaxdml.fit(X, y, loss="lmnn", optimizer="lbfgs", max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sampled = jaxdml.fit(X, y, loss="lmnn", batch_size=64, n_candidates=128, max_iter=200)
    assert "solver" not in full.info and sampled.info["n_candidates"] == 128  # user settings: former paths
    v_act, v_full, v_samp = (float(exact(jnp.asarray(m.L, jnp.float32), prob)) for m in (act, full, sampled))
    assert v_act <= v_samp
    assert v_act <= v_full * (1 + 2e-3)
    np.testing.assert_allclose(act.loss, v_act, rtol=1e-4)  # the reported loss is the exact objective


@pytest.mark.slow
def test_budget_exhausted_reports_not_converged(rng, small_threshold):
    X, y = _data(rng, 500)
    with pytest.warns(ConvergenceWarning):
        m = jaxdml.fit(X, y, loss="lmnn", max_iter=1)
    assert not m.converged and m.n_iter == 1 and m.info["solver"] == "active_set"
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    np.testing.assert_allclose(m.loss, float(jax.jit(losses.lmnn)(jnp.asarray(m.L, jnp.float32), prob)), rtol=1e-4)


def test_capacity_doubles_and_refresh_every_is_checked(rng):
    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    res = minimize_active_set(jnp.eye(5), prob, min_capacity=16, max_iter=30, refresh_every=10)
    cap = res.info["pair_capacity"]
    assert cap >= max(res.info["active_pairs"]) and cap & (cap - 1) == 0 and cap >= 16
    with pytest.raises(ValueError, match="refresh_every"):
        minimize_active_set(jnp.eye(5), prob, refresh_every=0)


def test_each_phase_compiles_as_a_brief_program(rng, monkeypatch):
    """The phases' L-BFGS programs run briefly: the solver asks for XLA's quicker compile
    (``brief_programs``) around them, and only around them."""
    from jaxdml._runtime import _device
    from jaxdml.solvers import _lmnn_active

    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    inner, brief = _lmnn_active.minimize, []

    def recording(*args, **kwargs):
        brief.append(_device._BRIEF.get())
        return inner(*args, **kwargs)

    monkeypatch.setattr(_lmnn_active, "minimize", recording)
    res = minimize_active_set(jnp.eye(5), prob, max_iter=30, refresh_every=10)
    assert brief and all(brief) and res.info["refreshes"] >= len(brief)
    assert not _device._BRIEF.get()


def _brute_pairs(Z, y, valid, radius, r0=0, r1=None):
    D = ((Z[:, None, :] - Z[None]) ** 2).sum(-1)
    ok = (y[:, None] != y[None, :]) & valid[None, :] & (D < radius[:, None])
    ok[:, :r0] = False
    if r1 is not None:
        ok[:, r1:] = False
    return np.nonzero(ok)


def test_packed_chunked_search_equals_brute_force(rng, x64, monkeypatch):
    from jaxdml import linalg
    from jaxdml.neighbors import impostors_within

    monkeypatch.setattr(linalg, "CACHE_TILE_ELEMENTS", 1000)

    n = 203  # not a multiple of 8: padded references must never be reported
    Z = rng.normal(size=(n, 3))
    y, valid = rng.integers(0, 3, n), rng.random(n) > 0.1
    radius = rng.random(n) * 3.0
    radius[7] = -np.inf
    for r0, r1 in ((0, n), (0, 64), (61, 203), (100, 101), (50, 50)):
        # 16-row blocks, and whole-range blocks cut into 16-row cache tiles (a small tile forced here)
        for budget in (n * 16, n * n):
            a, l = impostors_within(Z, y, valid, radius, ref_range=(r0, r1), block_elements=budget)
            ra, rl = _brute_pairs(Z, y, valid, radius, r0, r1)
            np.testing.assert_array_equal(a, ra)
            np.testing.assert_array_equal(l, rl)
    with pytest.raises(ValueError, match="ref_range"):
        impostors_within(Z, y, valid, radius, ref_range=(5, n + 1))


def test_generalized_extremes_match_scipy(rng):
    import scipy.linalg

    from jaxdml.solvers._lmnn_candidates import generalized_extremes

    A, B = rng.normal(size=(2, 4, 4))
    M, M0 = A.T @ A, B.T @ B + 0.1 * np.eye(4)
    ev = scipy.linalg.eigh(M, M0, eigvals_only=True)
    np.testing.assert_allclose(generalized_extremes(M, M0), (ev[0], ev[-1]), rtol=1e-10)
    assert generalized_extremes(M, np.diag([1.0, 1.0, 1.0, 0.0])) == (0.0, np.inf)  # singular: no certificate


@pytest.mark.parametrize("first_cand_slack", [None, 0.75, 0.5])
def test_certified_candidates_hold_every_active_pair(rng, x64, first_cand_slack):
    """Where the certificate holds, filtering the old candidates gives the brute-force active set; a narrower
    first search (``first_cand_slack``) is certified by its own radius."""
    from jaxdml.solvers._lmnn_candidates import CandidateIndex

    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    T = np.asarray(prob.targets)
    valid = np.ones(300, bool)
    L0 = 2.0 * np.eye(5) + 0.2 * rng.normal(size=(5, 5))
    idx = CandidateIndex(300, y, valid, margin=1.0, slack=0.5, cand_slack=2.0, first_cand_slack=first_cand_slack,
                         chunk_rows=128)
    assert idx.first_cand_slack == (2.0 if first_cand_slack is None else first_cand_slack)
    outcomes = []
    for step in (0.0, 0.01, 0.03, 0.06, 0.08, 0.1, 0.12, 0.15, 0.5):
        L = L0 + step * rng.normal(size=(5, 5))
        Z = X @ L.T
        far = ((Z[:, None, :] - Z[T]) ** 2).sum(-1).max(1)
        searches = idx.searches
        a, l, dist, ok = idx.refresh(jnp.asarray(L), jnp.asarray(X), jnp.asarray(Z), far)
        assert ok
        outcomes.append(idx.searches == searches)  # certified: no chunk searched again
        keep = dist < far[a] + 1.5
        got = set(zip(a[keep].tolist(), l[keep].tolist()))
        ra, rl = _brute_pairs(Z, y, valid, far + 1.5)
        ref = set(zip(ra.tolist(), rl.tolist()))
        np.testing.assert_allclose(dist, ((Z[a] - Z[l]) ** 2).sum(1), rtol=1e-10)
        assert got == ref
    assert outcomes[0] is False and any(outcomes[1:]) and not all(outcomes[1:])  # both branches ran
    assert idx.partial_searches > 0  # some searches covered only the anchors whose certificate failed
    assert idx.epoch_slack[0] == idx.first_cand_slack and set(idx.epoch_slack[1:]) <= {2.0}
    with pytest.raises(ValueError, match="first_cand_slack"):
        CandidateIndex(300, y, valid, margin=1.0, slack=0.5, cand_slack=2.0, first_cand_slack=0.4)


@pytest.mark.slow
def test_chunked_search_with_a_budget_converges_only_when_certified(rng):
    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    full = minimize_active_set(jnp.eye(5), prob, max_iter=100, random_state=0)
    rolled = minimize_active_set(jnp.eye(5), prob, max_iter=100, random_state=0, chunk_rows=100,
                                 chunks_per_refresh=1, refresh_every=25)
    assert full.converged and rolled.converged
    assert rolled.info["chunk_searches"] >= 3  # every chunk searched at least once before converging
    np.testing.assert_allclose(rolled.loss, full.loss, rtol=2e-3)


def test_a_search_budget_visits_the_chunk_searched_longest_ago_first(rng):
    from jaxdml.solvers._lmnn_candidates import CandidateIndex

    X, y = _data(rng, 300)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    T = np.asarray(prob.targets)
    idx = CandidateIndex(300, y, np.ones(300, bool), margin=1.0, slack=0.5, cand_slack=1.0, chunk_rows=100)
    epochs = []
    for k in range(3):  # shrinking maps: no chunk stays certified, one search per refresh
        L = np.eye(5) * (3.0 - k)
        Z = X @ L.T
        far = ((Z[:, None, :] - Z[T]) ** 2).sum(-1).max(1)
        *_, ok = idx.refresh(jnp.asarray(L, jnp.float32), jnp.asarray(X, jnp.float32), jnp.asarray(Z, jnp.float32),
                             far, max_chunks=1)
        epochs.append([int(e.min()) for e in idx.anchor_epoch])
        assert not ok
    assert epochs == [[0, -1, -1], [0, 1, -1], [0, 1, 2]]


def test_stratified_subsample_keeps_class_shares_and_small_classes():
    from jaxdml.methods.core._sampling import stratified_subsample

    codes = np.r_[np.zeros(700, int), np.ones(290, int), np.full(10, 2)]
    keep = stratified_subsample(codes, 100, random_state=0, min_per_class=4)
    assert keep.size == 100 and np.all(np.diff(keep) > 0)  # sorted, distinct
    counts = np.bincount(codes[keep], minlength=3)
    # the small class keeps min_per_class rows; the other 88 are shared as the remaining counts are
    share = (np.bincount(codes) - 4) * 88 / (1000 - 12)
    assert counts.min() >= 4 and np.all(np.abs(counts - 4 - share) < 1)
    np.testing.assert_array_equal(keep, stratified_subsample(codes, 100, random_state=0, min_per_class=4))
    assert stratified_subsample(codes, 5000).size == 1000  # all rows when there are not more


def test_above_max_n_the_active_set_runs_on_a_stratified_subsample(rng, small_threshold, monkeypatch):
    from jaxdml.solvers import _lmnn_active

    X, y = _data(rng, 700)
    monkeypatch.setitem(_lmnn_active.ACTIVE_SET_DEFAULTS, "max_n", 600)
    monkeypatch.setitem(_lmnn_active.ACTIVE_SET_DEFAULTS, "subsample", 450)
    sub = jaxdml.fit(X, y, loss="lmnn", random_state=0)
    assert sub.info["solver"] == "active_set" and sub.info["subsample"] and sub.info["n_fitted_rows"] == 450
    keep = stratified_subsample(np.unique(y, return_inverse=True)[1], 450, 0, min_per_class=4)
    direct = jaxdml.fit(X[keep], y[keep], loss="lmnn", random_state=0)  # the same solver on those rows
    assert direct.info["solver"] == "active_set" and not direct.info["subsample"]
    np.testing.assert_allclose(sub.L, direct.L, rtol=1e-6, atol=1e-7)
