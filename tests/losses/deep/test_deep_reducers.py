"""Reducers of the deep losses, from their definitions on the loss's own terms (``reduction="none"``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdml.losses import deep

LOSSES = {
    "triplet": lambda Z, y, r: deep.triplet_margin(Z, y, margin=0.5, reduction=r),
    "batch_hard": lambda Z, y, r: deep.triplet_margin(Z, y, margin=0.5, triplets=deep.batch_hard(Z, y), reduction=r),
    "contrastive": lambda Z, y, r: deep.contrastive(Z, y, reduction=r),
    "margin": lambda Z, y, r: deep.margin_loss(Z, y, reduction=r),
    "lifted": lambda Z, y, r: deep.lifted_structure(Z, y, reduction=r),
    "ntxent": lambda Z, y, r: deep.ntxent(Z, y, reduction=r),
    "proxy_nca": lambda Z, y, r: deep.proxy_nca(Z, y, jnp.eye(3, 4), reduction=r),
}


def _batch():
    rng = np.random.default_rng(1)
    return jnp.asarray(rng.normal(size=(12, 4)).astype(np.float32)), np.arange(12) % 3


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_reducers_equal_their_definition_on_the_terms(name):
    Z, y = _batch()
    f = LOSSES[name]
    terms = np.asarray(f(Z, y, "none"), np.float64)  # weighted terms, 0 where there is none (0/1 weights)
    pos = terms[terms > 0]
    expected = pos.mean() if pos.size else 0.0
    assert float(f(Z, y, deep.avg_non_zero)) == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert float(f(Z, y, "avg_non_zero")) == pytest.approx(expected, rel=1e-5, abs=1e-7)
    low, high = np.quantile(pos, 0.25) if pos.size else 0.0, np.quantile(pos, 0.9) if pos.size else 1.0
    inside = pos[(pos > low) & (pos < high)]
    got = float(f(Z, y, deep.threshold(low=float(low), high=float(high))))
    assert got == pytest.approx(inside.mean() if inside.size else 0.0, rel=1e-4, abs=1e-6)
    assert float(f(Z, y, deep.divisor(7.0))) == pytest.approx(terms.sum() / 7.0, rel=1e-5, abs=1e-7)
    assert float(f(Z, y, "sum")) == pytest.approx(terms.sum(), rel=1e-5, abs=1e-7)


def test_a_custom_reducer_and_jit():
    Z, y = _batch()
    top = lambda values, weights: jnp.max(jnp.where(weights > 0, values, -jnp.inf))  # noqa: E731
    terms = np.asarray(deep.triplet_margin(Z, y, reduction="none"))
    assert float(deep.triplet_margin(Z, y, reduction=top)) == pytest.approx(terms.max(), rel=1e-6)
    g = jax.jit(jax.grad(lambda Z: deep.triplet_margin(Z, y, reduction=deep.threshold(low=0.05))))(Z)
    assert np.all(np.isfinite(np.asarray(g)))


def test_no_term_and_nan():
    Z, _ = _batch()
    one_class = np.zeros(12, int)  # no negative: no triplet
    for r in (deep.avg_non_zero, "avg_non_zero", deep.threshold(low=0.1)):
        assert float(deep.triplet_margin(Z, one_class, reduction=r)) == 0.0
    Zn = np.asarray(Z).copy()
    Zn[3, 1] = np.nan
    for r in (deep.avg_non_zero, "avg_non_zero", deep.threshold(high=10.0), deep.divisor(3.0)):
        assert np.isnan(float(deep.contrastive(jnp.asarray(Zn), np.arange(12) % 3, reduction=r)))


@pytest.mark.parametrize("make,match", [
    (lambda: deep.threshold(low=1.0, high=0.5), "low must be below high"),
    (lambda: deep.threshold(low=float("nan")), "low must be a finite number"),
    (lambda: deep.divisor(0), "d must be a positive number"),
    (lambda: deep.triplet_margin(*_batch(), reduction="median"), "reduction must be one of"),
])
def test_bad_reducers(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def _terms_and_counts(f, Z, y):
    """The (values, weights) a loss hands its reducer."""
    seen = {}

    def capture(values, weights):
        seen.update(values=np.asarray(values, np.float64), weights=np.asarray(weights, np.float64))
        return jnp.sum(values * 0.0)

    f(Z, y, capture)
    return seen["values"], seen["weights"]


@pytest.mark.parametrize("name", ["triplet", "contrastive", "margin", "ntxent", "proxy_nca"])
@pytest.mark.parametrize("non_zero", [False, True])
def test_per_anchor_is_the_mean_over_anchors_of_their_mean_term(name, non_zero):
    """Loops over the anchors (the first axis of the dense terms): each anchor's weighted mean term, then their
    plain mean over the anchors that have a term."""
    Z, y = _batch()
    f = LOSSES[name]
    values, weights = _terms_and_counts(f, Z, y)
    means = []
    for a in range(values.shape[0]):
        v, w = values[a].ravel(), weights[a].ravel()
        if non_zero:
            w = np.where(v > 0, w, 0.0)
        if w.sum() > 0:
            means.append((v * w).sum() / w.sum())
    want = np.mean(means) if means else 0.0
    assert float(f(Z, y, deep.per_anchor(non_zero=non_zero))) == pytest.approx(want, rel=1e-5, abs=1e-7)


def test_per_anchor_and_class_weighted_on_mined_triplets():
    """A flat layout (mined triplets) names each term's anchor; under jit the batch size comes with it."""
    Z, y = _batch()
    t = deep.batch_hard(Z, y)
    anchors = np.asarray(t.anchor)
    f = lambda r: deep.triplet_margin(Z, y, margin=0.5, triplets=t, reduction=r)  # noqa: E731
    values, weights = _terms_and_counts(lambda Z, y, r: f(r), Z, y)
    rows = [values[anchors == a][weights[anchors == a] > 0] for a in np.unique(anchors)]
    rows = [r for r in rows if r.size]
    want = np.mean([r.mean() for r in rows]) if rows else 0.0
    assert float(f(deep.per_anchor(anchors=anchors))) == pytest.approx(want, rel=1e-5, abs=1e-7)
    jitted = jax.jit(lambda Z, a: deep.triplet_margin(Z, y, margin=0.5, triplets=t,
                                                      reduction=deep.per_anchor(anchors=a, n_rows=12)))
    assert float(jitted(Z, jnp.asarray(anchors))) == pytest.approx(want, rel=1e-5, abs=1e-7)
    cw = np.array([0.5, 2.0, 1.0])
    scale = cw[y[anchors]]
    want_cw = (values * weights * scale).sum() / weights.sum() if weights.sum() else 0.0
    assert float(f(deep.class_weighted(cw, y, anchors=anchors))) == pytest.approx(want_cw, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("name", ["contrastive", "ntxent", "triplet"])
def test_class_weighted_scales_each_term_by_its_anchors_class(name):
    """sum(w v c[y_anchor]) / sum(w); with equal weights it is the mean."""
    Z, y = _batch()
    f = LOSSES[name]
    values, weights = _terms_and_counts(f, Z, y)
    cw = np.array([0.2, 1.0, 3.0])
    scale = cw[y].reshape((-1,) + (1,) * (values.ndim - 1))
    want = (values * weights * scale).sum() / weights.sum()
    assert float(f(Z, y, deep.class_weighted(cw, y))) == pytest.approx(want, rel=1e-5, abs=1e-7)
    assert float(f(Z, y, deep.class_weighted(np.ones(3), y))) == pytest.approx(float(f(Z, y, "mean")), rel=1e-5)
    with pytest.raises(ValueError, match="labels must be a 1-D integer array"):
        deep.class_weighted(cw, y.astype(float))
