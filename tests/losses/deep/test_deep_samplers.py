"""The P x K batch sampler: its guarantees, from its definition."""

import numpy as np
import pytest

from jaxdml.losses import deep
from jaxdml.losses.deep import PKSampler

SIZES = [3, 5, 7, 9, 11, 13, 2, 20, 4, 6]  # imbalanced, one class smaller than k


def _labels(kind="int"):
    y = np.repeat(np.arange(len(SIZES)), SIZES)
    return {"int": y, "str": np.array([f"c{v}" for v in y])}[kind]


@pytest.mark.parametrize("kind", ["int", "str"])
@pytest.mark.parametrize("class_weights", ["uniform", "size"])
def test_every_batch_is_p_classes_times_k_rows(kind, class_weights):
    y = _labels(kind)
    sampler = PKSampler(y, p=4, k=3, class_weights=class_weights, seed=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == -(-len(y) // 12)
    for idx in batches:
        assert idx.shape == (12,) and idx.dtype == np.int64
        classes = y[idx].reshape(4, 3)
        assert len(set(classes[:, 0])) == 4 and np.all(classes == classes[:, :1])  # 4 classes, 3 rows each
        for block, rows in zip(classes[:, 0], idx.reshape(4, 3)):
            if np.sum(y == block) >= 3:
                assert len(set(rows)) == 3  # distinct rows wherever the class has enough


def test_uniform_classes_come_in_cycles_and_rows_cover_each_class():
    y = _labels()
    sampler = PKSampler(y, p=5, k=2, n_batches=40, seed=3)
    batches = [y[idx].reshape(5, 2)[:, 0] for idx in sampler]
    visits = np.bincount(np.concatenate(batches), minlength=len(SIZES))
    assert visits.max() - visits.min() <= 1  # class-balanced: 200 visits of 10 classes, 20 each
    # rows of a class in cycles: the first ceil(n_c / k) visits of a class draw each of its rows once
    sampler = PKSampler(y, p=5, k=2, n_batches=40, seed=3)
    drawn = {c: [] for c in range(len(SIZES))}
    for idx in sampler:
        for rows in idx.reshape(5, 2):
            drawn[int(y[rows[0]])].extend(rows.tolist())
    for c, rows in drawn.items():
        n_c = SIZES[c]
        if n_c >= 2:
            first = rows[: n_c - n_c % 2]
            assert len(set(first)) == len(first)


def test_cover_epoch_draws_every_row():
    y = _labels()
    sampler = PKSampler(y, p=4, k=3, n_batches="cover", seed=1)
    seen = np.unique(np.concatenate(list(sampler)))
    np.testing.assert_array_equal(seen, np.arange(len(y)))
    assert len(sampler) == int(np.ceil(np.ceil(max(SIZES) / 3) * len(SIZES) / 4))


def test_seeds_are_reproducible_and_epochs_continue_the_stream():
    y = _labels()
    a, b, c = (PKSampler(y, p=4, k=3, seed=s) for s in (7, 7, 8))
    ea, eb, ec = list(a), list(b), list(c)
    assert all(np.array_equal(u, v) for u, v in zip(ea, eb))
    assert not all(np.array_equal(u, v) for u, v in zip(ea, ec))
    assert not all(np.array_equal(u, v) for u, v in zip(ea, list(a)))  # the next epoch is another one


def test_a_sampled_batch_feeds_a_loss():
    rng = np.random.default_rng(0)
    y = _labels()
    X = rng.normal(size=(len(y), 5)).astype(np.float32)
    idx = next(iter(PKSampler(y, p=4, k=3, seed=0)))
    triplets = deep.batch_hard(X[idx], y[idx])
    assert int(np.sum(np.asarray(triplets.mask))) == 12  # every anchor has a positive and a negative
    assert np.isfinite(float(deep.triplet_margin(X[idx], y[idx], triplets=triplets)))


@pytest.mark.parametrize("kw,match", [
    (dict(p=11, k=2), "p=11 classes per batch"), (dict(p=0, k=2), "p must be a positive int"),
    (dict(p=2, k=1.5), "k must be a positive int"), (dict(p=2, k=2, n_batches=0), "n_batches"),
    (dict(p=2, k=2, class_weights="balanced"), "class_weights"),
    (dict(p=2, k=2, class_weights="size", n_batches="cover"), "cover"),
])
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        PKSampler(_labels(), **kw)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        PKSampler(np.zeros((3, 2)), p=1, k=1)
