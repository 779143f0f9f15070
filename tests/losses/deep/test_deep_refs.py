"""References (ref_emb / ref_labels / ref_mask) and the cross-batch memory of jaxdml.losses.deep.

With references, a loss's pairs are (query i, reference j), all of them: the references of the NumPy
reference functions (tests/_deep_reference.py) are the rows B.. of the stacked array [queries; references],
and the pairs (i, B + j). Values and gradients (in the queries and the references) in float64, gradients by
central differences of the reference."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxdml.losses import deep

from ... import _deep_reference as R
from ... import _deep_reference_extra as X

YQ = np.array([0, 0, 1, 1, 2, 5])  # class 5 has no reference
YR = np.array([0, 1, 1, 2, 2, 2, 3, 0])  # class 3 has no query
B, NR = len(YQ), len(YR)
QROWS = list(range(B))
YW, REFS = np.r_[YQ, YR], list(range(B, B + NR))  # the stacked rows' labels; the references' rows among them


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return 0.6 * rng.normal(size=(B, 3)), 0.6 * rng.normal(size=(NR, 3))


def _ref_pairs():
    return [(i, B + j, YQ[i] == YR[j]) for i in range(B) for j in range(NR)]


def _d(W, i, j, d):
    v = R.measure(W[i], W[j], d)
    return -v if d in R.SIM else v


def _lifted_ref(W, d, alpha):
    """Song et al.'s Eq. 4 with references: the negatives of query i are its references of another class,
    those of reference j the queries of another class."""
    terms = []
    for i in range(B):
        for j in range(NR):
            if YQ[i] != YR[j]:
                continue
            s = sum(np.exp(alpha - _d(W, i, B + k, d)) for k in range(NR) if YR[k] != YQ[i])
            s += sum(np.exp(alpha - _d(W, q, B + j, d)) for q in range(B) if YQ[q] != YR[j])
            terms.append(0.5 * max(np.log(s) + _d(W, i, B + j, d), 0.0) ** 2 if s > 0 else 0.0)
    return float(np.mean(terms))


def _nca_ref(W, d):
    total = 0.0
    for i in range(B):
        e = [np.exp(-_d(W, i, B + k, d)) for k in range(NR)]
        total -= sum(v for k, v in enumerate(e) if YR[k] == YQ[i]) / sum(e)
    return total / B


def _lmnn_ref(W, d, k, mu, margin, base):
    """Targets: the k nearest same-class references at ``base`` (held constant, as the loss selects them)."""
    total = 0.0
    for i in range(B):
        same = sorted((_d(base, i, B + j, d), j) for j in range(NR) if YR[j] == YQ[i])
        for _, j in same[:k]:
            total += (1 - mu) * _d(W, i, B + j, d)
            total += mu * sum(max(margin + _d(W, i, B + j, d) - _d(W, i, B + m, d), 0) for m in range(NR)
                              if YR[m] != YQ[i])
    return total / B


# name -> (jaxdml call f(Q, yq, **kw), reference on the stacked rows W)
CASES = {
    "contrastive": (lambda Q, y, **kw: deep.contrastive(Q, y, pos_margin=0.2, neg_margin=1.0, **kw),
                    lambda W: R.contrastive(W, _ref_pairs(), "euclidean", 0.2, 1.0)),
    "margin_loss": (lambda Q, y, **kw: deep.margin_loss(Q, y, beta=0.9, margin=0.3, nu=0.1, **kw),
                    lambda W: R.margin_loss(W, np.r_[YQ, YR], _ref_pairs(), "euclidean", 0.9, 0.3, 0.1)),
    "lifted_structure": (lambda Q, y, **kw: deep.lifted_structure(Q, y, margin=0.7, **kw),
                         lambda W: _lifted_ref(W, "euclidean", 0.7)),
    "multi_similarity": (lambda Q, y, **kw: deep.multi_similarity(Q, y, alpha=2.0, beta=10.0, base=0.4, **kw),
                         lambda W: R.multi_similarity(W, _ref_pairs(), QROWS, "cosine", 2.0, 10.0, 0.4)),
    "circle": (lambda Q, y, **kw: deep.circle(Q, y, margin=0.3, gamma=20.0, **kw),
               lambda W, at=None: R.circle(W, _ref_pairs(), QROWS, "cosine", 0.3, 20.0, weights_at=at)),
    "ntxent": (lambda Q, y, **kw: deep.ntxent(Q, y, temperature=0.5, **kw),
               lambda W: R.ntxent(W, _ref_pairs(), "cosine", 0.5)),
    "npair": (lambda Q, y, **kw: deep.npair(Q, y, l2_reg=0.05, **kw),
              lambda W: R.npair(W, _ref_pairs(), QROWS, "dot", 0.05)),
    "supervised_contrastive": (lambda Q, y, **kw: deep.supervised_contrastive(Q, y, temperature=0.3, **kw),
                               lambda W: R.supcon(W, _ref_pairs(), QROWS, "cosine", 0.3)),
    "triplet_margin": (lambda Q, y, **kw: deep.triplet_margin(Q, y, margin=0.3, **kw),
                       lambda W: R.triplet(W, [(i, B + p, B + n) for i in range(B) for p in range(NR)
                                               for n in range(NR) if YR[p] == YQ[i] and YR[n] != YQ[i]],
                                           "euclidean", 0.3, False)),
    "nca": (lambda Q, y, **kw: deep.nca(Q, y, **kw), lambda W: _nca_ref(W, "sq_euclidean")),
    "generalized_lifted_structure": (
        lambda Q, y, **kw: deep.generalized_lifted_structure(Q, y, pos_margin=0.1, neg_margin=0.9, **kw),
        lambda W: X.generalized_lifted(W, YW, QROWS, "euclidean", 0.1, 0.9, refs=REFS)),
    "tuplet_margin": (lambda Q, y, **kw: deep.tuplet_margin(Q, y, margin=0.1, scale=8.0, **kw),
                      lambda W: X.tuplet_margin(W, YW, QROWS, 0.1, 8.0, refs=REFS)),
    "angular_loss": (lambda Q, y, **kw: deep.angular_loss(Q, y, alpha=0.6, **kw),
                     lambda W: X.angular(W, YW, QROWS, 0.6, refs=REFS)),
    "lmnn": (lambda Q, y, **kw: deep.lmnn(Q, y, n_neighbors=2, mu=0.4, margin=0.5, **kw),
             lambda W, at=None: _lmnn_ref(W, "sq_euclidean", 2, 0.4, 0.5, W if at is None else at)),
}


@functools.cache
def _program(name):
    f = CASES[name][0]

    def loss(Q, Rf):
        return f(Q, jnp.asarray(YQ), ref_emb=Rf, ref_labels=jnp.asarray(YR))

    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))


@pytest.mark.parametrize("name", list(CASES))
def test_ref_loss_matches_reference(name, x64):
    """Value and gradients (in the queries and in the references) against loops over the (query,
    reference) pairs, every one of them (no self-pair exclusion)."""
    _, ref = CASES[name]
    Q, Rf = _data()
    W = np.vstack([Q, Rf])
    value, (gq, gr) = _program(name)(jnp.asarray(Q), jnp.asarray(Rf))
    np.testing.assert_allclose(float(value), ref(W), rtol=1e-10, atol=1e-12)
    g = np.vstack([np.asarray(gq), np.asarray(gr)])
    assert np.all(np.isfinite(g)) and np.any(g[B:] != 0.0)  # the references get gradients too
    fixed = {"at": W} if name in ("circle", "lmnn") else {}  # weights / targets held constant
    rng, eps = np.random.default_rng(1), 1e-5
    for _ in range(2):
        V = rng.normal(size=W.shape)
        fd = (ref(W + eps * V, **fixed) - ref(W - eps * V, **fixed)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * V), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["contrastive", "lifted_structure", "triplet_margin", "multi_similarity", "nca",
                                  "generalized_lifted_structure", "tuplet_margin", "angular_loss"])
def test_references_holding_the_queries_give_the_batch_loss(name, x64):
    """ref_emb = the batch itself with a (B, B) ref_mask False on the diagonal is the loss of the batch
    without references (its pairs are the same)."""
    f, _ = CASES[name]
    Z = np.vstack(_data())[:10]
    y = np.r_[YQ, [0, 1, 2, 2]]
    off = ~np.eye(10, dtype=bool)
    plain = f(jnp.asarray(Z), jnp.asarray(y))
    with_refs = f(jnp.asarray(Z), jnp.asarray(y), ref_emb=jnp.asarray(Z), ref_labels=jnp.asarray(y),
                  ref_mask=jnp.asarray(off))
    np.testing.assert_allclose(float(with_refs), float(plain), rtol=1e-10)


@pytest.mark.parametrize("mined", [False, True])
def test_anchor_swap_against_the_batch_as_references(mined, x64):
    """The anchor swap with references: d(p, n) is then a distance between two references; with the batch as its
    own reference set (self-pairs masked) the loss equals the swapped batch loss, dense and on mined triplets, and
    the swap changes it (some d(p, n) < d(a, n))."""
    Z = np.vstack(_data())[:10]
    y = np.r_[YQ, [0, 1, 2, 2]]
    off = ~np.eye(10, dtype=bool)
    kw = {"triplets": deep.semi_hard(jnp.asarray(Z), jnp.asarray(y), margin=1.0)} if mined else {}
    kw["margin"] = 1.0
    plain = deep.triplet_margin(jnp.asarray(Z), jnp.asarray(y), swap=True, **kw)
    with_refs = deep.triplet_margin(jnp.asarray(Z), jnp.asarray(y), swap=True, ref_emb=jnp.asarray(Z),
                                    ref_labels=jnp.asarray(y), ref_mask=jnp.asarray(off), **kw)
    np.testing.assert_allclose(float(with_refs), float(plain), rtol=1e-10)
    assert float(plain) != float(deep.triplet_margin(jnp.asarray(Z), jnp.asarray(y), **kw))


@pytest.mark.parametrize("name", ["contrastive", "generalized_lifted_structure", "tuplet_margin", "angular_loss"])
def test_ref_mask_drops_reference_rows(name, x64):
    """A (R,) ref_mask is the loss against the kept references only; junk in a dropped row reaches
    neither the value nor a gradient."""
    Q, Rf = _data()
    keep = np.array([1, 1, 0, 1, 1, 0, 1, 1], bool)
    junk = Rf.copy()
    junk[~keep] = np.nan
    f = CASES[name][0]

    def loss(q, r, y, mask):
        return f(q, jnp.asarray(YQ), ref_emb=r, ref_labels=y, ref_mask=mask)

    program = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    v, g = program(jnp.asarray(Q), jnp.asarray(junk), jnp.asarray(YR), jnp.asarray(keep))
    v0, g0 = program(jnp.asarray(Q), jnp.asarray(Rf[keep]), jnp.asarray(YR[keep]), None)
    np.testing.assert_allclose(float(v), float(v0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g[0]), np.asarray(g0[0]), rtol=1e-10, atol=1e-14)
    assert np.all(np.asarray(g[1])[~keep] == 0.0)


def test_string_labels_are_encoded_jointly(x64):
    """Labels of another type than integers get one set of codes over queries and references."""
    Q, Rf = _data()
    names = np.array(list("abcdefgh"))
    a = deep.contrastive(Q, names[YQ], ref_emb=Rf, ref_labels=names[YR])
    b = deep.contrastive(Q, YQ, ref_emb=Rf, ref_labels=YR)
    np.testing.assert_allclose(float(a), float(b), rtol=1e-12)


def test_miners_with_references(x64):
    """Miners index the references: batch-hard and the multi-similarity miner against loops; every
    miner with the batch as its references (diagonal masked) returns the batch's own selection."""
    Q, Rf = _data()
    W = np.vstack([Q, Rf])
    t = deep.batch_hard(Q, YQ, ref_emb=Rf, ref_labels=YR)
    for a in range(B):
        P = [j for j in range(NR) if YR[j] == YQ[a]]
        N = [j for j in range(NR) if YR[j] != YQ[a]]
        assert bool(t.mask[a]) == bool(P and N)
        if P and N:
            assert int(t.positive[a]) == max(P, key=lambda j: (_d(W, a, B + j, "euclidean"), -j))
            assert int(t.negative[a]) == min(N, key=lambda j: (_d(W, a, B + j, "euclidean"), j))
    p = deep.multi_similarity_pairs(Q, YQ, epsilon=0.1, ref_emb=Rf, ref_labels=YR)
    kept = {(int(i), int(j)) for i, j, m in zip(p.anchor, p.other, p.mask) if m}
    want = set()
    for i in range(B):
        S = {j: -_d(W, i, B + j, "cosine") for j in range(NR)}
        P = [j for j in S if YR[j] == YQ[i]]
        N = [j for j in S if YR[j] != YQ[i]]
        if P and N:
            want |= {(i, j) for j in N if S[j] > min(S[k] for k in P) - 0.1}
            want |= {(i, j) for j in P if S[j] < max(S[k] for k in N) + 0.1}
    assert kept == want and want

    Z, y = W[:10], np.r_[YQ, [0, 1, 2, 2]]
    off = ~np.eye(10, dtype=bool)
    weighted = functools.partial(deep.distance_weighted, key=jax.random.key(0), nonzero_loss_cutoff=2.0)
    for miner in (deep.batch_hard, deep.semi_hard, deep.batch_all, deep.multi_similarity_pairs, deep.pair_margin,
                  deep.triplet_margin_miner, deep.batch_easy_hard, weighted,
                  functools.partial(deep.batch_easy_hard, pos_strategy="all", neg_strategy="hard")):
        plain = miner(Z, y)
        refd = miner(Z, y, ref_emb=Z, ref_labels=y, ref_mask=off)
        for u, v in zip(plain, refd):
            np.testing.assert_array_equal(np.asarray(u)[np.asarray(plain.mask)], np.asarray(v)[np.asarray(plain.mask)])
        np.testing.assert_array_equal(np.asarray(plain.mask), np.asarray(refd.mask))


def _kept(tuples, shift=B):
    """The kept tuples of a miner's output, reference indices shifted to the stacked rows."""
    fields = [np.asarray(f) for f in tuples]
    return {(int(t[0]),) + tuple(int(v) + shift for v in t[1:-1]) for t in zip(*fields) if t[-1]}


def test_margin_and_easy_hard_miners_with_references(x64):
    """triplet_margin_miner and batch_easy_hard against loops over (query, reference, reference) triplets."""
    Q, Rf = _data()
    W, kw = np.vstack([Q, Rf]), {"ref_emb": Rf, "ref_labels": YR}
    for kind in ("all", "hard", "semihard", "easy"):
        t = deep.triplet_margin_miner(Q, YQ, margin=0.3, kind=kind, **kw)
        assert t.anchor.shape == (B * NR * NR,)
        want = X.margin_triplets(W, YW, QROWS, "euclidean", 0.3, kind, refs=REFS)
        assert _kept(t) == want and want
    packed = deep.triplet_margin_miner(Q, YQ, margin=0.3, size=300, **kw)
    assert _kept(packed) == X.margin_triplets(W, YW, QROWS, "euclidean", 0.3, "all", refs=REFS)
    for ps, ns, rng in (("easy", "semihard", None), ("hard", "hard", None), ("semihard", "easy", None),
                        ("hard", "easy", (0.0, 1.5))):
        t = deep.batch_easy_hard(Q, YQ, pos_strategy=ps, neg_strategy=ns, neg_range=rng, **kw)
        want = X.easy_hard(W, YW, QROWS, "euclidean", ps, ns, neg_range=rng, refs=REFS)
        assert {a: (p, n) for a, p, n in _kept(t)} == want and want
    p = deep.batch_easy_hard(Q, YQ, pos_strategy="all", neg_strategy="hard", **kw)
    assert p.anchor.shape == (B * NR + B,)
    got = {(int(a), int(o) + B, bool(q)) for a, o, q, m in zip(*p) if m}
    want = {(a, j + B, True) for a in range(B) for j in range(NR) if YQ[a] == YR[j]}  # every positive pair
    for a in QROWS:  # and each query's closest negative reference
        want.add((a, X._pick(X._negatives(YW, QROWS, a, REFS), lambda j, a=a: X._D(W, a, j, "euclidean"), False),
                  False))
    assert got == want


def test_new_miners_skip_dropped_references(x64):
    """With a (R,) ref_mask the miners select among the kept references only (junk rows never chosen): the
    same tuples as on the kept references, their indices mapped back."""
    Q, Rf = _data()
    keep = np.array([1, 1, 0, 1, 1, 0, 1, 1], bool)
    junk = Rf.copy()
    junk[~keep] = np.nan
    back = np.flatnonzero(keep)
    miners = (functools.partial(deep.triplet_margin_miner, margin=0.3), deep.batch_easy_hard,
              functools.partial(deep.batch_easy_hard, pos_strategy="hard", neg_strategy="easy"))
    for miner in miners:
        masked = _kept(miner(Q, YQ, ref_emb=junk, ref_labels=YR, ref_mask=keep), shift=0)
        kept = _kept(miner(Q, YQ, ref_emb=Rf[keep], ref_labels=YR[keep]), shift=0)
        assert masked == {(a,) + tuple(int(back[v]) for v in t) for a, *t in kept} and kept
    # distance-weighted draws differ with the number of references; its probabilities do not
    P = np.asarray(deep.distance_weighted_probabilities(Q, YQ, ref_emb=junk, ref_labels=YR, ref_mask=keep))
    P0 = np.asarray(deep.distance_weighted_probabilities(Q, YQ, ref_emb=Rf[keep], ref_labels=YR[keep]))
    np.testing.assert_allclose(P[:, keep], P0, rtol=1e-12, atol=1e-15)
    assert np.all(P[:, ~keep] == 0.0) and np.any(P0 > 0)
    t = deep.distance_weighted(Q, YQ, key=jax.random.key(0), ref_emb=junk, ref_labels=YR, ref_mask=keep)
    assert all(keep[p] and keep[n] for _, p, n in _kept(t, shift=0)) and np.any(t.mask)


def test_distance_weighted_with_references(x64):
    """The sampling probabilities over the references against a loop; every positive (query, reference) pair
    gets a negative reference of positive probability."""
    Q, Rf = _data()
    W, kw = np.vstack([Q, Rf]), {"ref_emb": Rf, "ref_labels": YR}
    P = np.asarray(deep.distance_weighted_probabilities(Q, YQ, cutoff=0.3, nonzero_loss_cutoff=1.9, **kw))
    want = X.distance_weighted_probs(W, YW, QROWS, 0.3, 1.9, refs=REFS)
    assert P.shape == (B, NR) and want
    for a in range(B):
        np.testing.assert_allclose(P[a], [want.get(a, {}).get(B + j, 0.0) for j in range(NR)], rtol=1e-10,
                                   atol=1e-15)
    t = deep.distance_weighted(Q, YQ, key=jax.random.key(3), cutoff=0.3, nonzero_loss_cutoff=1.9, **kw)
    assert t.anchor.shape == (B * NR,)
    kept = _kept(t, shift=0)
    assert kept == {(a, j, int(t.negative[a * NR + j])) for a in want for j in range(NR) if YQ[a] == YR[j]}
    assert all(P[a, n] > 0 for a, _, n in kept)


def test_loss_with_miner_and_references(x64):
    """A miner given to a loss with references mines among the references; the same as mining first."""
    Q, Rf = _data()
    kw = {"ref_emb": jnp.asarray(Rf), "ref_labels": jnp.asarray(YR)}
    t = deep.batch_hard(Q, YQ, **kw)
    a = deep.triplet_margin(Q, YQ, miner=deep.batch_hard, **kw)
    b = deep.triplet_margin(Q, YQ, triplets=t, **kw)
    want = R.triplet(np.vstack([Q, Rf]), [(i, B + int(t.positive[i]), B + int(t.negative[i])) for i in range(B)
                                          if t.mask[i]], "euclidean", 0.2, False)
    np.testing.assert_allclose([float(a), float(b)], want, rtol=1e-10)
    c = deep.contrastive(Q, YQ, miner=deep.pair_margin, **kw)
    assert np.isfinite(float(c))
    t = deep.batch_easy_hard(Q, YQ, pos_strategy="hard", neg_strategy="easy", distance="cosine", **kw)  # its measure
    v = deep.tuplet_margin(Q, YQ, scale=8.0, miner=functools.partial(deep.batch_easy_hard, pos_strategy="hard",
                                                                      neg_strategy="easy"), **kw)
    mined = sorted(_kept(t))
    want = X.tuplet_margin(np.vstack([Q, Rf]), YW, QROWS, 0.1, 8.0, triplets=mined)
    np.testing.assert_allclose(float(v), want, rtol=1e-10)


def test_ref_input_errors():
    Q, Rf = _data()
    with pytest.raises(ValueError, match="need ref_emb"):
        deep.contrastive(Q, YQ, ref_labels=YR)
    with pytest.raises(ValueError, match="ref_emb must have the embeddings' 3 columns"):
        deep.contrastive(Q, YQ, ref_emb=Rf[:, :2], ref_labels=YR)
    with pytest.raises(ValueError, match="ref_labels are required"):
        deep.contrastive(Q, YQ, ref_emb=Rf)
    with pytest.raises(ValueError, match="ref_labels must be a 1-D array"):
        deep.contrastive(Q, YQ, ref_emb=Rf, ref_labels=YR[:3])
    with pytest.raises(ValueError, match=r"2-D ref_mask must have shape \(batch, references\)"):
        deep.contrastive(Q, YQ, ref_emb=Rf, ref_labels=YR, ref_mask=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="ref_mask must have shape"):
        deep.contrastive(Q, YQ, ref_emb=Rf, ref_labels=YR, ref_mask=np.ones(3, bool))
    with pytest.raises(ValueError, match=r"triplets.positive must hold row indices in \[0, 7\]"):
        t = deep.Triplets(np.zeros(2, np.int32), np.array([0, 8], np.int32), np.zeros(2, np.int32), np.ones(2, bool))
        deep.triplet_margin(Q, YQ, triplets=t, ref_emb=Rf, ref_labels=YR)


# ------------------------------------------------------------------------------------ memory


def test_memory_queue_wraps_around():
    """Batches are written in order from the position on, wrapping around (the oldest rows overwritten);
    padded rows take no slot; against a plain Python queue."""
    size, dim = 10, 2
    mem = deep.memory_init(size, dim)
    slots = [None] * size
    pos = 0
    rng = np.random.default_rng(0)
    for step in range(6):
        Z = rng.normal(size=(4, dim)).astype(np.float32)
        y = rng.integers(0, 5, size=4)
        mask = np.array([1, 1, 1, 1], bool) if step % 2 == 0 else np.array([1, 0, 1, 1], bool)
        mem = deep.memory_update(mem, Z, y, mask=mask)
        for z, lab in zip(Z[mask], y[mask]):
            slots[pos] = (z, lab)
            pos = (pos + 1) % size
        assert int(mem.position) == pos
        for s in range(size):
            assert bool(mem.filled[s]) == (slots[s] is not None)
            if slots[s] is not None:
                np.testing.assert_array_equal(np.asarray(mem.embeddings[s]), slots[s][0])
                assert int(mem.labels[s]) == slots[s][1]
    assert int(mem.count) == size


def test_memory_update_jits_and_checks_input():
    mem = deep.memory_init(6, 3)
    upd = jax.jit(deep.memory_update)
    mem = upd(mem, jnp.ones((4, 3)), jnp.arange(4))
    mem = upd(mem, 2 * jnp.ones((4, 3)), jnp.arange(4))
    np.testing.assert_array_equal(np.asarray(mem.embeddings[:, 0]), [2, 2, 1, 1, 2, 2])
    assert int(mem.position) == 2
    with pytest.raises(ValueError, match="does not fit in a memory of 6 slots"):
        deep.memory_update(mem, np.ones((7, 3)), np.arange(7))
    with pytest.raises(ValueError, match="embeddings have 2 columns and the memory 3"):
        deep.memory_update(mem, np.ones((2, 2)), np.arange(2))
    with pytest.raises(TypeError, match="labels must be integer class codes"):
        deep.memory_update(mem, np.ones((2, 3)), np.array(["a", "b"]))
    with pytest.raises(ValueError, match="size must be a positive int"):
        deep.memory_init(0, 3)
    with pytest.raises(ValueError, match="memory_loss sets ref_emb itself"):
        deep.memory_loss(deep.contrastive, np.ones((2, 3)), np.arange(2), mem, ref_emb=np.ones((2, 3)))


def _contrastive_pairs_ref(Z, y, M, yM, pairs):
    """Contrastive (Hadsell) mean over ``pairs`` (query i, memory slot j) in NumPy."""
    terms = []
    for i, j in pairs:
        d = np.linalg.norm(Z[i] - M[j])
        terms.append(0.5 * d ** 2 if y[i] == yM[j] else 0.5 * max(1.0 - d, 0.0) ** 2)
    return np.mean(terms)


@jax.jit
def _memory_step(z, y, mem):
    return jax.value_and_grad(lambda z: deep.memory_loss(deep.contrastive, z, y, mem), has_aux=True)(z)


def test_memory_loss_semantics(x64):
    """The batch is enqueued first, then compared with every filled slot but its own copies: the first
    batch in an empty memory gives the batch's own loss; a later batch's pairs are checked against a
    loop; gradients reach the queries only."""
    rng = np.random.default_rng(3)
    mem = deep.memory_init(12, 3)
    Z1, y1 = rng.normal(size=(5, 3)), np.array([0, 0, 1, 1, 2])
    v1, mem = deep.memory_loss(deep.contrastive, Z1, y1, mem)
    np.testing.assert_allclose(float(v1), float(deep.contrastive(Z1, y1)), rtol=1e-12)
    M_before = np.asarray(mem.embeddings).copy()
    for step in range(2):  # 5 + 5 + 5 rows in 12 slots: the third batch wraps around
        Z, y = rng.normal(size=(5, 3)), rng.integers(0, 3, size=5)
        pos = int(mem.position)
        (v, new), g = _memory_step(jnp.asarray(Z), jnp.asarray(y), mem)
        own = [(pos + i) % 12 for i in range(5)]
        M, yM, filled = np.asarray(new.embeddings), np.asarray(new.labels), np.asarray(new.filled)
        np.testing.assert_allclose(M[own], Z)
        pairs = [(i, j) for i in range(5) for j in range(12) if filled[j] and j != own[i]]
        np.testing.assert_allclose(float(v), _contrastive_pairs_ref(Z, y, M, yM, pairs), rtol=1e-10)
        eps, V = 1e-6, rng.normal(size=Z.shape)
        fd = (_contrastive_pairs_ref(Z + eps * V, y, M, yM, pairs)
              - _contrastive_pairs_ref(Z - eps * V, y, M, yM, pairs)) / (2 * eps)
        np.testing.assert_allclose(np.sum(np.asarray(g) * V), fd, rtol=1e-6)  # the memory is a constant
        mem = new
    assert not np.allclose(np.asarray(mem.embeddings), M_before)


def test_memory_enqueue_mask(x64):
    """With enqueue_mask the marked rows only go to the memory and the others are only queries, nothing
    left out."""
    rng = np.random.default_rng(5)
    Z, y = rng.normal(size=(6, 3)), np.array([0, 1, 0, 1, 0, 1])
    only = np.array([0, 0, 0, 1, 1, 1], bool)
    v, mem = deep.memory_loss(deep.contrastive, Z, y, deep.memory_init(8, 3), enqueue_mask=only)
    assert int(mem.count) == 3
    np.testing.assert_allclose(np.asarray(mem.embeddings[:3]), Z[3:])
    want = deep.contrastive(Z[:3], y[:3], ref_emb=Z[3:], ref_labels=y[3:])
    np.testing.assert_allclose(float(v), float(want), rtol=1e-12)


def test_jitted_training_step_with_memory():
    """A jitted step (a linear embedding trained by contrastive + batch-hard triplets against the memory)
    compiles once, carries the memory in its state and lowers the loss on held-out batches."""
    rng = np.random.default_rng(0)
    centres = 3.0 * rng.normal(size=(4, 6))
    noise = np.diag([0.3, 0.3, 4.0, 4.0, 4.0, 4.0])  # class structure in 2 of 6 directions

    def batch(n=16):
        y = np.repeat(np.arange(4), n // 4)
        return (centres[y] + rng.normal(size=(n, 6)) @ noise).astype(np.float32), y

    traces = []
    opt = optax.adam(0.05)

    def both(z, y, **refs):  # two losses against the same references
        return deep.contrastive(z, y, **refs) + deep.triplet_margin(z, y, miner=deep.batch_hard, **refs)

    def objective(W, x, y, mem):
        return deep.memory_loss(both, x @ W.T, y, mem)

    @jax.jit
    def step(W, opt_state, mem, x, y):
        traces.append(1)
        (value, mem), g = jax.value_and_grad(objective, has_aux=True)(W, x, y, mem)
        updates, opt_state = opt.update(g, opt_state)
        return optax.apply_updates(W, updates), opt_state, mem, value

    W = jnp.asarray(0.3 * rng.normal(size=(3, 6)), jnp.float32)
    opt_state, mem = opt.init(W), deep.memory_init(48, 3)
    held = [batch() for _ in range(3)]

    def held_out(W):
        return np.mean([float(deep.contrastive(x @ W.T, y)) for x, y in held])

    before = held_out(W)
    for _ in range(40):
        x, y = batch()
        W, opt_state, mem, value = step(W, opt_state, mem, jnp.asarray(x), jnp.asarray(y))
        assert np.isfinite(float(value))
    assert len(traces) == 1
    assert int(mem.count) == 48 and int(mem.position) == (40 * 16) % 48
    assert held_out(W) < 0.5 * before
