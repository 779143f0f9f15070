"""jaxdml.Constraints: metric-learn's constraint generation (pairs, chunklets, k-NN triplets).

Ported in spirit from metric-learn's test/test_constraints.py (chunk counts and their error, unknown
labels, the k-NN triplet edge cases and their warnings); added: pair sampling (labels, distinctness,
determinism, shortage warning, memory on large N) and triplets against a brute-force search.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.utils import shuffle

import jaxdml
from jaxdml.methods.weak._rca import chunks_from_labels

SEED = 42


def _labels_for_chunks(n_chunks, chunk_size, n_classes=10, n_unknown=5):
    classes = shuffle(np.arange(n_classes), random_state=SEED)
    per_class = chunk_size * (n_chunks // n_classes)
    major = chunk_size * n_chunks - per_class * (n_classes - 1)
    labels = np.concatenate([np.full(major, classes[0])] + [np.full(per_class, k) for k in classes[1:]]
                            + [-np.ones(n_unknown, int)])
    return shuffle(labels, random_state=SEED)


@pytest.mark.parametrize("n_chunks, chunk_size", [(5, 10), (10, 50)])
def test_chunks_exact_count_unknown_labels_and_shortage(n_chunks, chunk_size):
    labels = _labels_for_chunks(n_chunks, chunk_size)
    chunks = jaxdml.Constraints(labels).chunks(n_chunks=n_chunks, chunk_size=chunk_size, random_state=SEED)
    ids, sizes = np.unique(chunks[chunks >= 0], return_counts=True)
    assert ids.size == n_chunks and np.all(sizes == chunk_size)
    assert np.all(chunks[labels < 0] < 0)
    for k in ids:  # a chunklet is one class
        assert np.unique(labels[chunks == k]).size == 1
    with pytest.raises(ValueError) as e:  # one point short
        jaxdml.Constraints(labels[1:]).chunks(n_chunks=n_chunks, chunk_size=chunk_size, random_state=SEED)
    assert str(e.value) == (f"Not enough possible chunks of {chunk_size} elements in each class to form expected "
                            f"{n_chunks} chunks - maximum number of chunks is {n_chunks - 1}.")


def test_chunks_are_rcas_and_deterministic():
    y = np.repeat([3, 7, 9], [20, 31, 12])
    c = jaxdml.Constraints(y)
    a = c.chunks(30, 2, random_state=3)
    np.testing.assert_array_equal(a, c.chunks(30, 2, random_state=np.random.RandomState(3)))
    np.testing.assert_array_equal(a, chunks_from_labels(np.unique(y, return_inverse=True)[1], 30, 2, 3))


EDGE_X = np.array([[0, 0], [2, 2], [4, 4], [8, 8], [16, 16], [32, 32], [33, 33]])
EDGE_Y = np.array([1, 1, 1, 2, 2, 2, -1])


@pytest.mark.parametrize("k_genuine, k_impostor, expected", [
    (2, 2, [[0, 1, 3], [0, 1, 4], [0, 2, 3], [0, 2, 4], [1, 0, 3], [1, 0, 4], [1, 2, 3], [1, 2, 4],
            [2, 0, 3], [2, 0, 4], [2, 1, 3], [2, 1, 4], [3, 4, 1], [3, 4, 2], [3, 5, 1], [3, 5, 2],
            [4, 3, 1], [4, 3, 2], [4, 5, 1], [4, 5, 2], [5, 3, 1], [5, 3, 2], [5, 4, 1], [5, 4, 2]]),
    (1, 3, [[0, 1, 3], [0, 1, 4], [0, 1, 5], [1, 0, 3], [1, 0, 4], [1, 0, 5], [2, 1, 3], [2, 1, 4],
            [2, 1, 5], [3, 4, 0], [3, 4, 1], [3, 4, 2], [4, 3, 0], [4, 3, 1], [4, 3, 2], [5, 4, 0],
            [5, 4, 1], [5, 4, 2]]),
])
def test_knntriplets_edge_cases(k_genuine, k_impostor, expected):
    T = jaxdml.Constraints(EDGE_Y).generate_knntriplets(EDGE_X, k_genuine, k_impostor)
    assert sorted(T.tolist()) == expected


@pytest.mark.parametrize("k_genuine, k_impostor", [(3, 3), (2, 4), (10, 9)])
def test_knntriplets_too_few_neighbours_warn_and_use_all(k_genuine, k_impostor):
    every = [[a, g, i] for a in range(6) for g in range(6) for i in range(6)
             if a != g and EDGE_Y[a] == EDGE_Y[g] and EDGE_Y[i] != EDGE_Y[a]]
    with pytest.warns(UserWarning, match="not sufficient to generate"):
        T = jaxdml.Constraints(EDGE_Y).generate_knntriplets(EDGE_X, k_genuine, k_impostor)
    assert sorted(T.tolist()) == sorted(every)


def test_knntriplets_match_brute_force_and_index_all_rows():
    X, y = make_blobs(90, centers=3, n_features=4, random_state=SEED)
    y = y.copy()
    y[::10] = -1  # unlabelled rows: in no triplet, indices still into the full X
    T = jaxdml.Constraints(y).generate_knntriplets(X, 2, 3)
    known = np.flatnonzero(y >= 0)
    assert T.shape == (known.size * 6, 3) and not np.isin(T, np.flatnonzero(y < 0)).any()
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    for a in known[:20]:
        same = known[(y[known] == y[a]) & (known != a)]
        other = known[y[known] != y[a]]
        rows = T[T[:, 0] == a]
        assert set(rows[:, 1]) == set(same[np.argsort(D[a, same])[:2]])
        assert set(rows[:, 2]) == set(other[np.argsort(D[a, other])[:3]])


def test_pairs_labels_distinct_deterministic():
    y = np.repeat([0, 1, 2, -1], [30, 20, 10, 5])
    c = jaxdml.Constraints(y)
    a, b, cc, d = c.positive_negative_pairs(150, random_state=0)
    assert a.size == cc.size == 150
    assert np.all(y[a] == y[b]) and np.all(a != b) and np.all(y[cc] != y[d])
    assert np.all(y[np.concatenate([a, b, cc, d])] >= 0)
    for i, j in ((a, b), (cc, d)):
        assert np.unique(np.minimum(i, j) * 1000 + np.maximum(i, j)).size == i.size
    again = c.positive_negative_pairs(150, random_state=np.random.RandomState(0))
    for u, v in zip((a, b, cc, d), again):
        np.testing.assert_array_equal(u, v)
    other = c.positive_negative_pairs(150, random_state=1)
    assert not np.array_equal(a, other[0])


def test_pairs_shortage_warns_returns_all_and_same_length():
    y = np.array([0, 0, 0, 1, 1, 2])  # 3 + 1 same-label pairs, 15 - 4 = 11 different-label ones
    with pytest.warns(UserWarning, match="Only generated 4 positive constraints"):
        a, b, c, d = jaxdml.Constraints(y).positive_negative_pairs(8, random_state=0)
    assert a.size == 4 and c.size == 8
    with pytest.warns(UserWarning):
        a, b, c, d = jaxdml.Constraints(y).positive_negative_pairs(8, same_length=True, random_state=0)
    assert a.size == c.size == 4
    with pytest.raises(ValueError, match="one class"):
        jaxdml.Constraints(np.zeros(5, int)).positive_negative_pairs(3)
    with pytest.raises(ValueError, match="n_constraints must be a positive int"):
        jaxdml.Constraints(y).positive_negative_pairs(0)


def test_pairs_memory_linear_on_large_n():
    y = np.random.RandomState(0).randint(0, 5, 300_000)  # 4.5e10 pairs: enumerating them would not fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b, c, d = jaxdml.Constraints(y).positive_negative_pairs(5000, random_state=0)
    assert a.size == c.size == 5000 and np.all(y[a] == y[b]) and np.all(y[c] != y[d])


def test_bad_labels_rejected():
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        jaxdml.Constraints(np.linspace(0, 1, 10) + 0.05)
    with pytest.raises(ValueError, match="every label is negative"):
        jaxdml.Constraints(-np.ones(4, int))
    with pytest.raises(ValueError, match="one row per label"):
        jaxdml.Constraints(EDGE_Y).generate_knntriplets(EDGE_X[:3], 1, 1)
