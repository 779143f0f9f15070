"""jaxdml.losses.deep against NumPy references written from the papers' formulas (tests/_deep_reference.py):
values and gradients in float64, every distance, a learned map L, padded rows, degenerate batches."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdml
from jaxdml.losses import deep

from ... import _deep_reference as R

Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 0])  # class 3 has one row (no positive)
ROWS = list(range(len(Y)))
DISTANCES = ["euclidean", "sq_euclidean", "cosine", "dot"]


def _slow_unless(first, values):
    """``values`` as parameters, all but ``first`` marked slow."""
    return [v if v == first else pytest.param(v, marks=pytest.mark.slow) for v in values]


def _first(d):
    """Every distance, the loss's default first."""
    return [d] + [x for x in DISTANCES if x != d]

# margins on each measure's own scale
PM = dict(euclidean=0.2, sq_euclidean=0.1, cosine=0.8, dot=0.5)
NM = dict(euclidean=1.0, sq_euclidean=1.5, cosine=0.2, dot=-0.2)
BETA = dict(euclidean=0.9, sq_euclidean=0.8, cosine=0.3, dot=0.1)


def _data(seed=0, n=len(Y), d=3):
    return 0.6 * np.random.default_rng(seed).normal(size=(n, d))


# name -> (jaxdml call f(Z, y, distance, **kw), reference ref(Z, y, rows, pairs, distance), distances)
CASES = {
    "contrastive": (lambda Z, y, d, **kw: deep.contrastive(Z, y, distance=d, pos_margin=PM[d], neg_margin=NM[d], **kw),
                    lambda Z, y, rows, pairs, d: R.contrastive(Z, pairs, d, PM[d], NM[d]), DISTANCES),
    "margin_loss": (lambda Z, y, d, **kw: deep.margin_loss(Z, y, distance=d, beta=BETA[d], margin=0.3, nu=0.1, **kw),
                    lambda Z, y, rows, pairs, d: R.margin_loss(Z, y, pairs, d, BETA[d], 0.3, 0.1), DISTANCES),
    "lifted_structure": (lambda Z, y, d, **kw: deep.lifted_structure(Z, y, distance=d, margin=0.7, **kw),
                         lambda Z, y, rows, pairs, d: R.lifted(Z, pairs, d, 0.7), DISTANCES),
    "multi_similarity": (lambda Z, y, d, **kw: deep.multi_similarity(Z, y, distance=d, alpha=2.0, beta=10.0, base=0.4,
                                                                     **kw),
                         lambda Z, y, rows, pairs, d: R.multi_similarity(Z, pairs, rows, d, 2.0, 10.0, 0.4),
                         _first("cosine")),
    "circle": (lambda Z, y, d, **kw: deep.circle(Z, y, distance=d, margin=0.3, gamma=20.0, **kw),
               lambda Z, y, rows, pairs, d, at=None: R.circle(Z, pairs, rows, d, 0.3, 20.0, weights_at=at),
               ["cosine", "dot"]),
    "ntxent": (lambda Z, y, d, **kw: deep.ntxent(Z, y, distance=d, temperature=0.5, **kw),
               lambda Z, y, rows, pairs, d: R.ntxent(Z, pairs, d, 0.5), _first("cosine")),
    "npair": (lambda Z, y, d, **kw: deep.npair(Z, y, distance=d, l2_reg=0.05, **kw),
              lambda Z, y, rows, pairs, d: R.npair(Z, pairs, rows, d, 0.05), _first("dot")),
    "supervised_contrastive": (lambda Z, y, d, **kw: deep.supervised_contrastive(Z, y, distance=d, temperature=0.3,
                                                                                 **kw),
                               lambda Z, y, rows, pairs, d: R.supcon(Z, pairs, rows, d, 0.3), _first("cosine")),
    "triplet_margin": (lambda Z, y, d, **kw: deep.triplet_margin(Z, y, distance=d, margin=0.3, **kw),
                       lambda Z, y, rows, pairs, d: R.triplet(Z, R.label_triplets(y, rows), d, 0.3, False), DISTANCES),
    "triplet_soft": (lambda Z, y, d, **kw: deep.triplet_margin(Z, y, distance=d, margin=0.1, soft=True, **kw),
                     lambda Z, y, rows, pairs, d: R.triplet(Z, R.label_triplets(y, rows), d, 0.1, True), DISTANCES),
    "nca": (lambda Z, y, d, **kw: deep.nca(Z, y, distance=d, **kw),
            lambda Z, y, rows, pairs, d: R.nca(Z, y, rows, d), _first("sq_euclidean")),
    "lmnn": (lambda Z, y, d, **kw: deep.lmnn(Z, y, distance=d, n_neighbors=2, mu=0.4, margin=0.5, **kw),
             lambda Z, y, rows, pairs, d: R.lmnn(Z, y, rows, R.same_class_targets(Z, y, rows, 2, d), d, 0.4, 0.5),
             _first("sq_euclidean")),
}
# each loss on its default distance; the other distances are the slow part of the matrix
PARAMS = [(name, ds[0]) for name, (_, _, ds) in CASES.items()]
PARAMS += [pytest.param(name, d, marks=pytest.mark.slow) for name, (_, _, ds) in CASES.items() for d in ds[1:]]


def _grad_check(f_jax, f_ref, Z, n_dir=2, eps=1e-5, jax_grad=False):
    """jax.grad of the loss (or ``f_jax`` itself, when it is the gradient: ``jax_grad=True``) against
    central differences of the reference along random directions."""
    g = np.asarray(f_jax(jnp.asarray(Z)) if jax_grad else jax.jit(jax.grad(f_jax))(jnp.asarray(Z)))
    assert np.all(np.isfinite(g))
    rng = np.random.default_rng(1)
    for _ in range(n_dir):
        V = rng.normal(size=Z.shape)
        fd = (f_ref(Z + eps * V) - f_ref(Z - eps * V)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * V), fd, rtol=1e-6, atol=1e-8)
    return g


@functools.lru_cache(maxsize=None)
def _masked_value_and_grad(name, distance):
    f = CASES[name][0]
    return jax.jit(jax.value_and_grad(lambda z, labels, mask: f(z, labels, distance, mask=mask)))


def _value_and_grad(name, distance):
    """``(z, labels, mask=None) -> (value, gradient)``: one jitted program per loss and distance
    (labels and the row mask arguments; no mask: every row), shared by the tests of this module;
    call it in float64 mode."""
    program = _masked_value_and_grad(name, distance)
    return lambda z, labels, mask=None: program(z, labels, jnp.ones(len(labels), bool) if mask is None else mask)


@pytest.mark.parametrize("name,distance", PARAMS)
def test_loss_matches_reference(name, distance, x64):
    """Value and gradient against the paper's formula, on every distance the loss takes."""
    _, ref, _ = CASES[name]
    Z = _data()
    pairs = R.label_pairs(Y, ROWS)
    value, g = _value_and_grad(name, distance)(jnp.asarray(Z), jnp.asarray(Y))
    np.testing.assert_allclose(float(value), ref(Z, Y, ROWS, pairs, distance), rtol=1e-10, atol=1e-12)
    fixed = dict(at=Z) if name == "circle" else {}  # circle's weights are constants of the gradient
    _grad_check(lambda z: _value_and_grad(name, distance)(z, jnp.asarray(Y))[1],
                lambda z: ref(z, Y, ROWS, pairs, distance, **fixed), Z, jax_grad=True)


@pytest.mark.parametrize("name", list(CASES))
def test_padded_rows_change_nothing(name, x64):
    """A batch padded with junk rows (labels shared with real rows) and mask=False there has the value
    and real-row gradients of the unpadded batch, and zero gradient on the padding."""
    f, _, ds = CASES[name]
    d = ds[0]
    n = 7
    Z = _data()
    Z[n:] *= 5.0  # junk
    yp = np.r_[Y[:n], [0, 1, 7]]
    mask = np.arange(len(Y)) < n
    v, g = jax.jit(jax.value_and_grad(lambda z: f(z, jnp.asarray(Y[:n]), d)))(jnp.asarray(Z[:n]))
    vp, gp = _value_and_grad(name, d)(jnp.asarray(Z), jnp.asarray(yp), jnp.asarray(mask))
    np.testing.assert_allclose(float(vp), float(v), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gp[:n]), np.asarray(g), rtol=1e-10, atol=1e-14)
    assert np.all(np.asarray(gp[n:]) == 0.0)


DEGENERATE = {"one-class": np.zeros(10, int), "all-singletons": np.arange(10),
              "one-pair": np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8])}


@pytest.mark.parametrize("name", list(CASES))
def test_degenerate_batches_have_defined_values(name, x64):
    """One class (no negatives), no positives at all, a single positive pair: the reference's value,
    finite gradients, never NaN."""
    _, ref, ds = CASES[name]
    d = ds[0]
    Z = _data(2)
    value_and_grad = _value_and_grad(name, d)  # one program, every case (and test_loss_matches_reference's)
    for case, labels in DEGENERATE.items():
        v, g = value_and_grad(jnp.asarray(Z), jnp.asarray(labels))
        assert np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g))), case
        want = ref(Z, labels, ROWS, R.label_pairs(labels, ROWS), d)
        np.testing.assert_allclose(float(v), want, rtol=1e-10, atol=1e-12, err_msg=case)


@pytest.mark.parametrize("name", list(CASES))
def test_reductions(name, x64):
    """sum(reduction='none') == reduction='sum'."""
    f, _, ds = CASES[name]
    d = ds[0]
    Z, y = jnp.asarray(_data()), jnp.asarray(Y)
    terms = jax.jit(lambda z, y: f(z, y, d, reduction="none"))(Z, y)
    total = jax.jit(lambda z, y: f(z, y, d, reduction="sum"))(Z, y)
    if name == "npair":  # the embedding penalty is not a term
        total = total - 0.05 * jnp.sum(Z * Z)
    np.testing.assert_allclose(float(jnp.sum(terms)), float(total), rtol=1e-10)


# the eager call compiles every primitive on its own: one loss in the default suite, the others slow
@pytest.mark.parametrize("name", _slow_unless("triplet_margin", ["triplet_margin", "multi_similarity", "lmnn"]))
def test_jit_and_vmap(name, x64):
    """jit gives the eager value; vmap over a stack of batches gives each batch's value."""
    f, _, ds = CASES[name]
    d = ds[0]
    Z, y = jnp.asarray(_data()), jnp.asarray(Y)
    mean = f(Z, y, d)
    np.testing.assert_allclose(float(jax.jit(lambda z: f(z, y, d))(Z)), float(mean), rtol=1e-10)
    batched = jax.vmap(lambda z: f(z, y, d))(jnp.stack([Z, 2.0 * Z]))
    np.testing.assert_allclose(np.asarray(batched), [float(mean), float(f(2.0 * Z, y, d))], rtol=1e-10)


@pytest.mark.parametrize("name", _slow_unless("contrastive", ["contrastive", "triplet_margin", "multi_similarity",
                                                               "ntxent", "nca"]))
def test_learned_map_L(name, x64):
    """distance under L is the distance of the mapped rows; the gradient in L matches differences of
    the reference (the Mahalanobis case)."""
    f, ref, ds = CASES[name]
    d = ds[0]
    Z = _data()
    L = np.eye(2, 3) + 0.3 * np.random.default_rng(4).normal(size=(2, 3))
    y = jnp.asarray(Y)
    pairs = R.label_pairs(Y, ROWS)
    np.testing.assert_allclose(float(jax.jit(lambda z, l: f(z, y, d, L=l))(jnp.asarray(Z), jnp.asarray(L))),
                               ref(Z @ L.T, Y, ROWS, pairs, d), rtol=1e-10)
    _grad_check(lambda l: f(jnp.asarray(Z), y, d, L=l), lambda l: ref(Z @ l.T, Y, ROWS, pairs, d), L)


def test_defaults_follow_the_papers(x64):
    """The default hyper-parameters are the documented ones (checked through the reference)."""
    Z, y = _data(), jnp.asarray(Y)
    pairs = R.label_pairs(Y, ROWS)
    Zj = jnp.asarray(Z)
    checks = [
        (_jitted(deep.contrastive, Zj, y), R.contrastive(Z, pairs, "euclidean", 0.0, 1.0)),
        (_jitted(deep.contrastive, Zj, y, distance="cosine"), R.contrastive(Z, pairs, "cosine", 1.0, 0.0)),
        (_jitted(deep.triplet_margin, Zj, y), R.triplet(Z, R.label_triplets(Y, ROWS), "euclidean", 0.2, False)),
        (_jitted(deep.multi_similarity, Zj, y), R.multi_similarity(Z, pairs, ROWS, "cosine", 2.0, 50.0, 0.5)),
        (_jitted(deep.circle, Zj, y), R.circle(Z, pairs, ROWS, "cosine", 0.4, 80.0)),
        (_jitted(deep.margin_loss, Zj, y), R.margin_loss(Z, Y, pairs, "euclidean", 1.2, 0.2, 0.0)),
        (_jitted(deep.ntxent, Zj, y), R.ntxent(Z, pairs, "cosine", 0.1)),
        (_jitted(deep.infonce, Zj, y), R.ntxent(Z, pairs, "cosine", 0.1)),
        (_jitted(deep.supervised_contrastive, Zj, y), R.supcon(Z, pairs, ROWS, "cosine", 0.1)),
        (_jitted(deep.npair, Zj, y), R.npair(Z, pairs, ROWS, "dot", 0.0)),
        (_jitted(deep.lifted_structure, Zj, y), R.lifted(Z, pairs, "euclidean", 1.0)),
    ]
    for got, want in checks:
        np.testing.assert_allclose(float(got), want, rtol=1e-10)


def test_margin_loss_learns_per_class_beta(x64):
    """A per-class beta (indexed by the anchor's class) is a differentiable parameter."""
    Z = _data()
    beta = np.array([0.8, 1.0, 0.9, 1.1])
    pairs = R.label_pairs(Y, ROWS)

    def f(b):
        return deep.margin_loss(jnp.asarray(Z), jnp.asarray(Y), beta=b, margin=0.3, nu=0.2)

    np.testing.assert_allclose(float(f(jnp.asarray(beta))), R.margin_loss(Z, Y, pairs, "euclidean", beta, 0.3, 0.2),
                               rtol=1e-10)
    _grad_check(f, lambda b: R.margin_loss(Z, Y, pairs, "euclidean", b, 0.3, 0.2), beta)
    with pytest.raises(ValueError, match="labels in range|class indices"):
        deep.margin_loss(jnp.asarray(Z), jnp.asarray(Y), beta=jnp.ones(3))


@pytest.mark.parametrize("distance", _slow_unless("sq_euclidean", _first("sq_euclidean")))
@pytest.mark.parametrize("include_positive", [False, True])
def test_proxy_nca(distance, include_positive, x64):
    Z, P = _data(), _data(5, n=4)
    scale = 0.5 if distance == "dot" else 2.0

    def f(z, p):
        return deep.proxy_nca(z, jnp.asarray(Y), p, scale=scale, distance=distance, include_positive=include_positive)

    def ref(z, p):
        return R.proxy_nca(z, Y, p, ROWS, distance, scale, True, include_positive)

    np.testing.assert_allclose(float(jax.jit(f)(jnp.asarray(Z), jnp.asarray(P))), ref(Z, P), rtol=1e-10)
    _grad_check(lambda z: f(z, jnp.asarray(P)), lambda z: ref(z, P), Z)
    _grad_check(lambda p: f(jnp.asarray(Z), p), lambda p: ref(Z, p), P)


@pytest.mark.parametrize("distance", _slow_unless("cosine", _first("cosine")))
def test_proxy_anchor(distance, x64):
    Z, P = _data(), _data(5, n=6)  # proxies 4 and 5 have no row in the batch
    alpha = 4.0 if distance == "dot" else 16.0

    def f(z, p):
        return deep.proxy_anchor(z, jnp.asarray(Y), p, alpha=alpha, margin=0.15, distance=distance)

    def ref(z, p):
        return R.proxy_anchor(z, Y, p, ROWS, distance, alpha, 0.15)

    np.testing.assert_allclose(float(jax.jit(f)(jnp.asarray(Z), jnp.asarray(P))), ref(Z, P), rtol=1e-10)
    _grad_check(lambda z: f(z, jnp.asarray(P)), lambda z: ref(z, P), Z)
    _grad_check(lambda p: f(jnp.asarray(Z), p), lambda p: ref(Z, p), P)
    terms = deep.proxy_anchor(jnp.asarray(Z), jnp.asarray(Y), jnp.asarray(P), distance=distance, reduction="none")
    assert terms.shape == (6, 2) and float(terms[4, 0]) == 0.0 and float(terms[5, 0]) == 0.0


ANGULAR = {
    "arcface": (lambda Z, y, W: deep.arcface(Z, y, W, scale=8.0, margin=0.5), dict(scale=8.0, m1=1, m2=0.5, m3=0)),
    "cosface": (lambda Z, y, W: deep.cosface(Z, y, W, scale=8.0, margin=0.35), dict(scale=8.0, m1=1, m2=0, m3=0.35)),
    "sphereface": (lambda Z, y, W: deep.sphereface(Z, y, W, margin=4), dict(scale=None, m1=4, m2=0, m3=0)),
    "combined": (lambda Z, y, W: deep.angular_margin(Z, y, W, scale=4.0, m1=1.5, m2=0.2, m3=0.1),
                 dict(scale=4.0, m1=1.5, m2=0.2, m3=0.1)),
}


@pytest.mark.parametrize("name", list(ANGULAR))
def test_angular_margin_family(name, x64):
    f, hyper = ANGULAR[name]
    Z, W = _data(), _data(6, n=4)
    y = jnp.asarray(Y)
    np.testing.assert_allclose(float(jax.jit(f)(jnp.asarray(Z), y, jnp.asarray(W))), R.angular(Z, Y, W, ROWS, **hyper),
                               rtol=1e-9)
    _grad_check(lambda z: f(z, y, jnp.asarray(W)), lambda z: R.angular(z, Y, W, ROWS, **hyper), Z)
    _grad_check(lambda w: f(jnp.asarray(Z), y, w), lambda w: R.angular(Z, Y, w, ROWS, **hyper), W)


@pytest.mark.slow
def test_angular_margin_is_monotone_and_finite_at_the_poles(x64):
    """With the other class orthogonal to the plane of rotation, a row's loss grows as it turns away
    from its class over [0, pi] (psi is the monotone extension, also past pi - m); a row equal or
    opposite to its class weight (cos = +-1) has a finite gradient."""
    W = jnp.asarray([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    angles = np.linspace(0.0, np.pi, 40)
    rows = jnp.asarray(np.c_[np.cos(angles), np.sin(angles), np.zeros_like(angles)])
    y = jnp.zeros(len(angles), int)
    for fn in (functools.partial(deep.arcface, scale=1.0), deep.sphereface, functools.partial(deep.cosface, scale=1.0)):
        terms = np.asarray(jax.jit(lambda z: fn(z, y, W, reduction="none"))(rows))  # one term per row: its own loss
        assert np.all(np.diff(terms) > 0), fn
        g = jax.jit(jax.grad(lambda z: fn(z, y[:2], W)))(rows[jnp.asarray([0, -1])])  # cos = 1 and cos = -1
        assert np.all(np.isfinite(np.asarray(g))), fn


def _jitted(f, *args, **kw):
    """``f(*args, **kw)`` compiled as one program (array arguments traced, the others static)."""
    arrays = {k: v for k, v in kw.items() if isinstance(v, (jax.Array, np.ndarray, tuple))}
    static = {k: v for k, v in kw.items() if k not in arrays}
    return jax.jit(lambda a, k: f(*a, **k, **static))(args, arrays)


def test_mined_tuples_and_miner_argument(x64):
    """A loss on mined tuples is the reference on those tuples; miner= mines the same ones."""
    Z, y = _data(), jnp.asarray(Y)
    Zj = jnp.asarray(Z)
    t = _jitted(deep.batch_hard, Zj, y)
    trip = [(int(a), int(p), int(n)) for a, p, n, m in zip(*t) if m]
    want = R.triplet(Z, trip, "euclidean", 0.2, False)
    np.testing.assert_allclose(float(_jitted(deep.triplet_margin, Zj, y, triplets=t)), want, rtol=1e-10)
    np.testing.assert_allclose(float(_jitted(deep.triplet_margin, Zj, y, miner=deep.batch_hard)), want, rtol=1e-10)
    _grad_check(lambda z: deep.triplet_margin(z, y, triplets=t), lambda z: R.triplet(z, trip, "euclidean", 0.2, False),
                Z)
    # every triplet of the batch, mined or dense, is the same loss
    np.testing.assert_allclose(float(_jitted(deep.triplet_margin, Zj, y, triplets=_jitted(deep.batch_all, Zj, y))),
                               float(_jitted(deep.triplet_margin, Zj, y)), rtol=1e-10)
    # pairs of the multi-similarity miner in the multi-similarity loss
    p = _jitted(deep.multi_similarity_pairs, Zj, y, epsilon=0.1)
    pairs = [(int(a), int(o), bool(pos)) for a, o, pos, m in zip(*p) if m]
    want = R.multi_similarity(Z, pairs, ROWS, "cosine", 2.0, 50.0, 0.5)
    np.testing.assert_allclose(float(_jitted(deep.multi_similarity, Zj, y, pairs=p)), want, rtol=1e-10)
    np.testing.assert_allclose(float(_jitted(deep.multi_similarity, Zj, None, pairs=p)), want, rtol=1e-10)
    # triplets given to a pair loss: their (a, p) and (a, n) pairs
    tp = [(a, q, True) for a, q, _ in trip] + [(a, n, False) for a, _, n in trip]
    np.testing.assert_allclose(float(_jitted(deep.contrastive, Zj, y, pairs=t)), R.contrastive(Z, tp, "euclidean", 0.0, 1.0),
                               rtol=1e-10)


def test_zero_distances_give_finite_gradients(x64):
    """Identical rows (zero Euclidean distances, zero vectors for the cosine) never give NaN gradients."""
    Z = jnp.asarray(np.r_[np.ones((6, 3)), np.zeros((4, 3))])
    y = jnp.asarray(Y)
    for name, (f, _, ds) in CASES.items():
        for d in {ds[0], "cosine"} & set(ds):
            g = _value_and_grad(name, d)(Z, y)[1]  # the reference tests' programs (same shapes)
            assert np.all(np.isfinite(np.asarray(g))), (name, d)


def test_lmnn_with_given_targets_is_the_reference(x64):
    """Given target neighbours (any rows of the same class, the third slot unused by row 0) replace the
    in-batch nearest ones: the value and gradient are the formula's with exactly those targets."""
    Z = _data(3)
    t = np.array([[2, 9, 1], [0, 2, 0], [9, 1, 0], [5, 4, 4], [3, 5, 3], [4, 3, 4], [7, 7, 7], [6, 6, 6],
                  [8, 8, 8], [0, 1, 2]])
    used = np.ones(t.shape, bool)
    used[0, 2] = False
    used[8] = False  # the single row of class 3: no target
    targets = {i: [int(j) for j, u in zip(t[i], used[i]) if u] for i in ROWS}
    f = jax.jit(jax.value_and_grad(lambda z: deep.lmnn(z, jnp.asarray(Y), targets=jnp.asarray(t),
                                                       target_mask=jnp.asarray(used), mu=0.4, margin=0.5)))
    value, _ = f(jnp.asarray(Z))
    ref = lambda A: R.lmnn(A, Y, ROWS, targets, "sq_euclidean", 0.4, 0.5)  # noqa: E731
    np.testing.assert_allclose(float(value), ref(Z), rtol=1e-12)
    _grad_check(lambda z: f(z)[1], ref, Z, jax_grad=True)


@pytest.mark.slow
def test_nca_and_lmnn_equal_the_mahalanobis_losses(x64):
    """deep.nca / deep.lmnn with L are jaxdml.losses.nca / lmnn of L on the same data, so the deep losses
    compose by weight with the Mahalanobis ones."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(24, 4)), np.arange(24) % 3
    L = jnp.asarray(np.eye(3, 4) + 0.2 * rng.normal(size=(3, 4)))
    prob = jaxdml.make_problem(X, y, n_neighbors=2)
    # each side compiled (op-by-op dispatch takes seconds, tens under coverage)
    np.testing.assert_allclose(float(jax.jit(lambda L: deep.nca(prob.X, prob.y, L=L))(L)),
                               float(jax.jit(jaxdml.losses.nca)(L, prob)), rtol=1e-10)
    lm = jax.jit(lambda L: deep.lmnn(prob.X, prob.y, L=L, targets=prob.targets, target_mask=prob.target_mask > 0))(L)
    np.testing.assert_allclose(float(lm), float(jax.jit(jaxdml.losses.lmnn)(L, prob)), rtol=1e-10)

    def combined(L):
        return jaxdml.losses.lmnn(L, prob) + 0.5 * deep.triplet_margin(prob.X, prob.y, L=L, triplets=deep.batch_hard(
            prob.X, prob.y, L=L))

    g = jax.jit(jax.grad(combined))(L)
    assert g.shape == L.shape and np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("call,error,match", [
    (lambda Z, y: deep.contrastive(Z[0], y), ValueError, "2-D"),
    (lambda Z, y: deep.contrastive(Z, y[:-1]), ValueError, "one label per row"),
    (lambda Z, y: jax.jit(deep.contrastive)(Z, y.astype(float)), TypeError, "integers"),  # traced: not encoded
    (lambda Z, y: deep.contrastive(Z, y, distance="manhattan"), ValueError, "distance must be one of"),
    (lambda Z, y: deep.triplet_margin(Z, y, reduction="max"), ValueError, "reduction must be one of"),
    (lambda Z, y: deep.ntxent(Z, y, temperature=0.0), ValueError, "temperature must be > 0"),
    (lambda Z, y: deep.ntxent(Z, y, temperature="hot"), TypeError, "temperature must be a real number"),
    (lambda Z, y: deep.contrastive(Z, y, mask=jnp.ones(3)), ValueError, "mask must have shape"),
    (lambda Z, y: deep.contrastive(Z, y, L=jnp.ones((2, 5))), ValueError, "L must have shape"),
    (lambda Z, y: deep.circle(Z, y, distance="euclidean"), ValueError, "similarities"),
    (lambda Z, y: deep.proxy_nca(Z, y, jnp.ones((3, 3))), ValueError, "class indices"),
    (lambda Z, y: deep.proxy_anchor(Z, y, jnp.ones((4, 2))), ValueError, "proxies must have shape"),
    (lambda Z, y: deep.triplet_margin(Z, y, triplets=deep.all_pairs(y)), TypeError, "Triplets"),
    (lambda Z, y: deep.triplet_margin(Z, y, triplets=deep.batch_hard(Z, y), miner=deep.batch_hard), ValueError,
     "not both"),
    (lambda Z, y: deep.lmnn(Z, y, n_neighbors=0), ValueError, "n_neighbors"),
    (lambda Z, y: deep.lmnn(Z, y, targets=jnp.zeros((len(Y), 2))), ValueError, "int array of row indices"),
    (lambda Z, y: deep.lmnn(Z, y, targets=jnp.zeros((len(Y), 2), int), target_mask=jnp.ones((len(Y), 3), bool)),
     ValueError, "target_mask must have the shape"),
    (lambda Z, y: deep.contrastive(Z, None), ValueError, "labels are required"),
])
def test_bad_input_raises_a_clear_error(call, error, match):
    Z, y = jnp.asarray(_data(), jnp.float32), jnp.asarray(Y)
    with pytest.raises(error, match=match):
        call(Z, y)
