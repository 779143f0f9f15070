"""The one neighbour search (jaxdml.neighbors) against a brute-force NumPy reference.

The data are integer-valued (a small grid, so many distances are exactly equal) and every distance
below is an integer in float64, computed exactly by each path; the reference orders candidates with
a stable sort on (distance, index), so ties test the documented rule, not rounding.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdml.neighbors
from jaxdml._runtime._device import as_device
from jaxdml.neighbors import _shifted, _sparse_nonzero, knn_search, other_class_neighbors, same_class_neighbors


#: one shape, k and block for every device search below, so that the tests share compiled programs
N, M, K, BLOCK = 64, 48, 4, 37
#: at most this many references per chunk of the chunked device path in these tests: 48 references are
#: four equal chunks of 12, 64 are five of 13 (the last one padded)
CHUNK = 13


@pytest.fixture
def path(request, monkeypatch):
    """``device`` of a search: False (host), True (device), "chunked" (device, references in chunks)."""
    if request.param == "chunked":
        monkeypatch.setattr(jaxdml.neighbors, "REFERENCE_CHUNK", CHUNK)
    return request.param != False  # noqa: E712  (False: the host; True and "chunked": the device)


def _grid_data(n=N, m=None, seed=0):
    """Points on the integer grid {0..3}^2 (many repeated points and equal distances), 3 classes and a
    class of two samples (fewer classmates than ``K``)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 2)).astype(np.float64)
    y = rng.integers(0, 3, size=n)
    y[:2] = 3
    Y = None if m is None else rng.integers(0, 4, size=(m, 2)).astype(np.float64)
    return X, y, Y


def _reference(D, k, allowed):
    """The ``k`` nearest allowed columns of each row: stable sort on (distance, index); -1 / inf beyond."""
    idx = np.full((D.shape[0], k), -1)
    dist = np.full((D.shape[0], k), np.inf)
    for i in range(D.shape[0]):
        cols = np.flatnonzero(allowed[i])
        order = cols[np.argsort(D[i, cols], kind="stable")][:k]
        idx[i, :order.size], dist[i, :order.size] = order, D[i, order]
    return idx, dist


def _inputs(kind, X, Y):
    """The search input of ``kind`` and the exact squared distances it stands for (integers)."""
    R = X if Y is None else Y
    Xi, Ri = X.astype(np.int64), R.astype(np.int64)
    if kind == "points":
        return dict(source=X, Y=Y), ((Xi[:, None] - Ri[None]) ** 2).sum(-1).astype(np.float64)
    if kind == "distances":  # a precomputed (here Manhattan) distance: integers, heavily tied
        D = np.abs(Xi[:, None] - Ri[None]).sum(-1).astype(np.float64)
        return dict(source=D), D
    # a polynomial kernel (x.y + 1)^2 on integers: feature-space distances are exact integers
    K = (Xi @ Ri.T + 1) ** 2
    kq, kr = (Xi * Xi).sum(1) + 1, (Ri * Ri).sum(1) + 1
    kq, kr = kq**2, kr**2
    D = (kq[:, None] + kr[None, :] - 2 * K).astype(np.float64)
    return dict(source=K.astype(np.float64), diag=(kq.astype(np.float64), kr.astype(np.float64))), D


@pytest.mark.parametrize("kind, mode, path, square", [
    (kind, mode, path, square)
    for kind, mode, path, square in itertools.product(("points", "kernel", "distances"), ("any", "same", "other"),
                                                      (False, True, "chunked"), (True, False))
], indirect=["path"])
def test_knn_search_matches_brute_force(x64, kind, mode, path, square):
    device = path
    X, y, Y = _grid_data(N, None if square else M, seed=len(kind) + len(mode))
    labels_r = y if square else np.random.default_rng(1).integers(0, 4, size=Y.shape[0])
    kw, D = _inputs(kind, X, Y)
    allowed = np.ones(D.shape, bool)
    if square:
        np.fill_diagonal(allowed, False)
    if mode == "same":
        allowed &= y[:, None] == labels_r[None, :]
    elif mode == "other":
        allowed &= y[:, None] != labels_r[None, :]
    ref_idx, ref_d = _reference(D, K, allowed)
    lab = dict(labels=y, y_labels=None if square else labels_r) if mode != "any" else {}
    idx, dist = knn_search(k=K, kind=kind, mode=mode, device=device, block_elements=BLOCK * D.shape[1], **kw, **lab)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_d)


def test_too_few_candidates_give_minus_one():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    idx, dist = knn_search(X, 3, labels=y, mode="same", device=False)  # the device: in the test above
    np.testing.assert_array_equal(idx, [[1, -1, -1], [0, -1, -1], [3, -1, -1], [2, -1, -1]])
    assert np.isinf(dist[:, 1:]).all()


@pytest.mark.parametrize("kind", ["points", "kernel", "distances"])
def test_class_searches_host_equal_device(x64, kind):
    """same/other-class neighbours: the host and the device paths give identical indices on ties, and
    both equal the reference (classes padded to buckets on the device)."""
    X, y, _ = _grid_data(N, seed=3)
    y[2] = 4  # a class of one: no classmate at all
    kw, D = _inputs(kind, X, None)
    src = kw["source"]
    budget = BLOCK * N  # classes pad to N rows on the device: the searches of the test above
    same = [same_class_neighbors(src, y, K, kind=kind, device=d, block_elements=budget) for d in (False, True)]
    other = [other_class_neighbors(src, y, K, kind=kind, device=d, block_elements=budget) for d in (False, True)]
    for a, b in (same, other):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    allowed = (y[:, None] == y[None, :]) & ~np.eye(y.size, dtype=bool)
    ref, _ = _reference(D, K, allowed)
    ok = ref >= 0
    np.testing.assert_array_equal(same[0][0], np.where(ok, ref, np.arange(y.size)[:, None]))
    np.testing.assert_array_equal(same[0][1], ok)
    ref, _ = _reference(D, K, y[:, None] != y[None, :])
    np.testing.assert_array_equal(other[0][0], ref)


@pytest.mark.parametrize("kind", ["points", "kernel", "distances"])
@pytest.mark.parametrize("path", [False, True, "chunked"], indirect=True)
def test_class_searches_of_some_query_rows(x64, kind, path):
    """``queries``: those rows get exactly the neighbours of the search of every row (found among all
    rows); every other row gets its own index with mask 0."""
    X, y, _ = _grid_data(N, seed=4)
    y[2] = 4
    src = _inputs(kind, X, None)[0]["source"]
    queries = np.random.default_rng(5).choice(N, 23, replace=False)
    rest = np.setdiff1d(np.arange(N), queries)
    for search in (same_class_neighbors, other_class_neighbors):
        full = search(src, y, K, kind=kind, device=path, block_elements=BLOCK * N)
        some = search(src, y, K, kind=kind, device=path, block_elements=BLOCK * N, queries=queries)
        for a, b in zip(full, some):
            np.testing.assert_array_equal(b[queries], a[queries])
        np.testing.assert_array_equal(some[0][rest], np.tile(rest[:, None], (1, K)))
        assert not some[1][rest].any()
    with pytest.raises(ValueError, match="queries"):
        same_class_neighbors(src, y, K, kind=kind, queries=[N])


def test_linear_map_and_rectangular_kernel(x64, rng):
    """``L`` maps both sides; a rectangular kernel needs its diagonals (and says so)."""
    X, Y = rng.normal(size=(N, 3)), rng.normal(size=(M, 3))
    L = rng.normal(size=(2, 3))
    D = (((X @ L.T)[:, None] - (Y @ L.T)[None]) ** 2).sum(-1)
    ref, _ = _reference(D, K, np.ones(D.shape, bool))
    for device in (False, True):
        idx, dist = knn_search(X, K, Y=Y, L=L, device=device, block_elements=BLOCK * M)
        np.testing.assert_array_equal(idx, ref)
        # GEMM-form round-off: a few ulps of the squared norms involved
        np.testing.assert_allclose(dist, np.take_along_axis(D, ref, 1), rtol=0, atol=1e-12 * (1 + D.max()))
    with pytest.raises(ValueError, match="diag"):
        knn_search(X @ Y.T, 3, kind="kernel")


@pytest.mark.parametrize("path", [False, True], indirect=True)
def test_float32_rows_far_from_the_origin_keep_their_neighbours(rng, path):
    """Rows of spread 1 around a point at distance 1e4 from the origin (as an embedding with a constant
    offset gives, e.g. LDA's map of collinear features): in float32 the GEMM form of the untranslated
    rows has squared norms of 1e8, whose round-off (about 8) exceeds the squared distances between
    neighbours; the device search translates the rows first (the host search computes in float64), so
    both find the neighbours that float64 differences find (up to float32 round-off of the rows
    themselves: distance gaps below 1e-2 are not asserted)."""
    Y = (rng.normal(size=(M, 3)) + 1e4).astype(np.float32)
    X = (rng.normal(size=(N, 3)) + 1e4).astype(np.float32)
    D = ((X.astype(np.float64)[:, None] - Y.astype(np.float64)[None]) ** 2).sum(-1)
    order = np.argsort(D, axis=1, kind="stable")
    idx, dist = knn_search(X, K, Y=Y, device=path, block_elements=BLOCK * M)
    gaps = np.diff(np.take_along_axis(D, order[:, :K + 1], 1), axis=1).min(axis=1)
    clear = gaps > 1e-2  # rows whose first K + 1 distances are well separated
    assert clear.sum() > N // 2
    np.testing.assert_array_equal(idx[clear], order[clear, :K])
    np.testing.assert_allclose(dist, np.take_along_axis(D, np.asarray(idx), 1), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("density", [0.0, 1e-4, 0.02, 0.3, 1.0])
def test_sparse_nonzero_is_flatnonzero_at_any_density(density):
    """The bit masks of the impostor searches are scanned 8 bytes at a time where they are sparse and byte by
    byte where they are not: the positions are np.flatnonzero's either way (lengths not a multiple of 8)."""
    rng = np.random.default_rng(1)
    for n in (0, 7, 8, 1001, 40_003):
        flat = np.where(rng.random(n) < density, rng.integers(1, 127, n), 0).astype(np.int8)
        got = _sparse_nonzero(flat)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.flatnonzero(flat))


def test_search_operands_translated_on_the_host_are_the_device_ones():
    """Host rows are translated by the first reference row on the host, in the device's dtype, before they are
    transferred (no eager device program per shape): the same operands, to the last bit, as translating device
    arrays on the device; a device array is never copied through the host."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3)) * 7 + 1e5  # far from the origin: the translation matters
    Y = rng.normal(size=(20, 3)) * 7 + 1e5
    dtype = jnp.result_type(float)
    for src, ref in ((X, None), (X, Y)):
        host = _shifted(src, ref, dtype)
        dev = _shifted(jnp.asarray(src, dtype), None if ref is None else jnp.asarray(ref, dtype), dtype)
        for h, d in zip(host, dev):
            assert isinstance(h, jax.Array) and h.dtype == d.dtype
            np.testing.assert_array_equal(np.asarray(h), np.asarray(d))
    Z = jnp.ones((4, 2), jnp.float32)
    assert as_device(Z) is Z and as_device(Z, np.float32) is Z
    assert as_device(Z, np.int32).dtype == np.int32
    assert as_device(np.arange(3), np.float32).dtype == np.float32
