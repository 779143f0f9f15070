"""Loss values and gradients against the seed's formulas, finite differences and invariants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdml
from jaxdml import losses

from .. import _reference as ref


def _data(rng, n=24, d=4, c=3):
    X = rng.normal(size=(n, d))
    y = np.arange(n) % c
    return X, y


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(np.asarray(b)), 1e-300)


def test_nca_value_and_gradient_match_seed(rng, x64):
    X, y = _data(rng)
    L = rng.normal(size=(3, 4)) * 0.5
    prob = jaxdml.make_problem(X, y, n_neighbors=None)
    N = len(X)
    value = float(jax.jit(losses.nca)(jnp.asarray(L), prob))
    assert abs(-N * value - ref.nca_objective(L, X, y)) < 1e-9
    grad = np.asarray(jax.jit(jax.grad(losses.nca))(jnp.asarray(L), prob))
    # nca() is -f / N, so its gradient is -grad f / N
    assert _rel(-N * grad, ref.nca_gradient(L, X, y)) < 1e-6


def test_lmnn_metric_value_and_subgradient_match_seed(rng, x64):
    X, y = _data(rng, n=20)
    prob = jaxdml.make_problem(X, y, n_neighbors=2)
    targets = np.asarray(prob.targets)
    A = rng.normal(size=(4, 4))
    M = A.T @ A / 4
    N = len(X)
    value_and_grad = jax.jit(jax.value_and_grad(lambda M, mu, margin: losses.lmnn_metric(M, prob, mu=mu, margin=margin)))
    for mu, margin in [(0.5, 1.0), (0.3, 2.0)]:  # traced hyper-parameters: one program
        v, G = value_and_grad(jnp.asarray(M), mu, margin)
        assert abs(N * float(v) - ref.lmnn_objective_M(M, X, y, targets, mu, margin)) < 1e-8
        G = np.asarray(G)
        assert _rel(N * G, ref.lmnn_subgradient_M(M, X, y, targets, mu, margin)) < 1e-6


def test_lmnn_L_and_M_forms_agree(rng, x64):
    X, y = _data(rng)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    L = jnp.asarray(rng.normal(size=(4, 4)))
    assert abs(float(jax.jit(losses.lmnn)(L, prob)) - float(jax.jit(losses.lmnn_metric)(L.T @ L, prob))) < 1e-9
    # chain rule: dE/dL = 2 L dE/dM (symmetrised)
    gM = jax.jit(jax.grad(losses.lmnn_metric))(L.T @ L, prob)
    gL = jax.jit(jax.grad(losses.lmnn))(L, prob)
    assert _rel(gL, 2 * L @ (0.5 * (gM + gM.T))) < 1e-9


@pytest.mark.parametrize("name", ["nca", "lmnn"])
def test_check_grads_and_directional_fd(rng, x64, name):
    X, y = _data(rng)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    fn = getattr(losses, name)
    L = jnp.asarray(rng.normal(size=(2, 4)) * 0.7)
    f = jax.jit(lambda P: fn(P, prob))
    if name == "nca":  # smooth: JAX's own numerical check of reverse mode
        check_grads(f, (L,), order=1, modes=("rev",), atol=1e-5, rtol=1e-5)
    V = jnp.asarray(rng.normal(size=L.shape))
    eps = 1e-6
    fd = (f(L + eps * V) - f(L - eps * V)) / (2 * eps)
    assert abs(float(fd) - float(jnp.sum(jax.grad(f)(L) * V))) < 1e-5 * max(1.0, abs(float(fd)))


@pytest.mark.parametrize("name", [pytest.param("nca", marks=pytest.mark.slow), "lmnn", "lmnn_metric"])
def test_jit_vmap_and_blocking(rng, name):
    X, y = _data(rng, n=40, d=5)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    fn = getattr(losses, name)
    Ls = jnp.asarray(rng.normal(size=(3, 5, 5)).astype(np.float32))
    if name == "lmnn_metric":
        Ls = jnp.einsum("bij,bik->bjk", Ls, Ls)
    # one matrix at a time (compiled: op by op, every primitive of the loss would compile separately)
    single = np.array([float(jax.jit(fn)(P, prob)) for P in Ls])
    batched = np.asarray(jax.jit(jax.vmap(fn, in_axes=(0, None)))(Ls, prob))
    np.testing.assert_allclose(batched, single, rtol=1e-5)
    # small blocks (several lax.map iterations + checkpointing) give the same value and gradient
    g_full = jax.jit(jax.grad(fn))(Ls[0], prob)
    v_blk, g_blk = jax.jit(jax.value_and_grad(lambda P, prob: fn(P, prob, block_elements=7 * 40 * 4)))(Ls[0], prob)
    np.testing.assert_allclose(float(v_blk), single[0], rtol=1e-5)
    np.testing.assert_allclose(g_blk, g_full, rtol=1e-4, atol=1e-5)
    # users compose: jit(grad(loss))
    assert jax.jit(jax.grad(fn))(Ls[0], prob).shape == Ls[0].shape


@pytest.mark.parametrize("name", ["nca", "lmnn"])
def test_padding_does_not_change_loss(rng, name, x64):
    X, y = _data(rng, n=30)
    fn = getattr(losses, name)
    L = jnp.asarray(rng.normal(size=(4, 4)))
    p0 = jaxdml.make_problem(X, y, n_neighbors=3)
    p1 = jaxdml.make_problem(X, y, n_neighbors=3, pad_to=45)
    assert p1.X.shape[0] == 45
    vg = jax.jit(jax.value_and_grad(fn))
    (v1, g1), (v0, g0) = vg(L, p1), vg(L, p0)
    np.testing.assert_allclose(float(v1), float(v0), rtol=1e-12)
    np.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-12)


def test_lmnn_with_all_candidates_equals_exact(rng, x64):
    X, y = _data(rng, n=30)
    L = jnp.asarray(rng.normal(size=(4, 4)))
    exact = jaxdml.make_problem(X, y, n_neighbors=3)
    cand = jaxdml.make_problem(X, y, n_neighbors=3, n_impostors=20)  # every other-class sample
    lmnn = jax.jit(losses.lmnn)  # one program per problem shape (op by op, every primitive compiles)
    np.testing.assert_allclose(float(lmnn(L, cand)), float(lmnn(L, exact)), rtol=1e-12)
    few = jaxdml.make_problem(X, y, n_neighbors=3, n_impostors=3)  # a subset: a lower bound
    assert float(lmnn(L, few)) <= float(lmnn(L, exact)) + 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("name", ["nca", "lmnn", "lmnn_metric"])
def test_sampled_path_with_every_row_as_candidate_equals_exact(rng, x64, name):
    """The sampled-candidate path (lazily embedded rows) with candidates = all rows reproduces
    the exact loss and gradient on a subset of anchors (LMNN's push term is rescaled by n / S = 1)."""
    X, y = _data(rng, n=30)
    prob = jaxdml.make_problem(X, y, n_neighbors=3)
    P = jnp.asarray(rng.normal(size=(4, 4)))
    if name == "lmnn_metric":
        P = P @ P.T
    fn = getattr(losses, name)
    anchors = jnp.asarray([0, 3, 7, 11, 29])
    every = jnp.arange(30)
    # compiled: op-by-op dispatch of the two paths takes seconds (tens under coverage)
    exact = jax.jit(jax.value_and_grad(lambda p: fn(p, prob, anchors=anchors)))(P)
    sampled = jax.jit(jax.value_and_grad(lambda p: fn(p, prob, anchors=anchors, candidates=every)))(P)
    np.testing.assert_allclose(float(sampled[0]), float(exact[0]), rtol=1e-10)
    np.testing.assert_allclose(sampled[1], exact[1], rtol=1e-9, atol=1e-12)


def test_make_problem_targets_are_same_class_nearest(rng):
    X, y = _data(rng, n=30)
    prob = jaxdml.make_problem(X, y, n_neighbors=2)
    t = np.asarray(prob.targets)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    for i in range(30):
        same = np.flatnonzero((y == y[i]) & (np.arange(30) != i))
        expect = same[np.argsort(D[i, same])[:2]]
        assert set(t[i]) == set(expect)


def test_nca_penalty_is_the_range_weighted_frobenius_norm(rng, x64):
    """``nca(reg=lam)`` adds ``lam * sum_f r_f^2 ||L[:, f]||^2`` (``r_f``: range of feature f over the
    real samples, padding excluded); its gradient matches central finite differences."""
    X, y = _data(rng)
    X = X * np.array([1.0, 10.0, 0.1, 3.0])
    L = rng.normal(size=(3, 4)) * 0.5
    prob = jaxdml.make_problem(X, y, n_neighbors=None, pad_to=32)
    lam = 0.3
    r2 = (X.max(axis=0) - X.min(axis=0)) ** 2
    expected = float(jax.jit(losses.nca)(jnp.asarray(L), prob)) + lam * float(np.sum(L ** 2 * r2[None, :]))
    f = jax.jit(lambda A: losses.nca(A, prob, reg=lam))  # one program (op by op, every primitive compiles)
    assert abs(float(f(jnp.asarray(L))) - expected) < 1e-12 * max(1.0, abs(expected))
    check_grads(f, (jnp.asarray(L),), order=1, modes=("rev",), atol=1e-6, rtol=1e-6)


def test_default_blocks_are_cache_tiles_on_large_problems():
    from types import SimpleNamespace

    from jaxdml.linalg import CACHE_TILE_ELEMENTS
    from jaxdml.losses._common import row_block

    big, small = SimpleNamespace(X=np.zeros((20000, 1))), SimpleNamespace(X=np.zeros((500, 1)))
    assert row_block(big, 20000, None) * 20000 <= CACHE_TILE_ELEMENTS and row_block(big, 20000, None) >= 16
    assert row_block(small, 500, None) == 500  # small work: one block, as before
    assert row_block(big, 20000, 20000 * 3000) == 3000  # a budget the caller gives is used as given


@pytest.mark.parametrize("name", ["matmul_nt", "matmul_nn"])
def test_cpu_products_differentiate_as_the_plain_product(rng, x64, name):
    """``linalg.matmul_nt`` / ``matmul_nn`` (``a @ b.T`` / ``a @ b`` whose derivatives avoid a
    product over the left operand's first axis on a CPU): values, both modes and second order
    against finite differences, gradients and JVPs equal to the plain product's, under ``vmap`` too."""
    from jaxdml import linalg

    f = getattr(linalg, name)
    plain = (lambda a, b: a @ b.T) if name == "matmul_nt" else (lambda a, b: a @ b)
    a = rng.normal(size=(7, 4))
    b = rng.normal(size=(5, 4)) if name == "matmul_nt" else rng.normal(size=(4, 5))
    np.testing.assert_allclose(f(a, b), plain(a, b), rtol=1e-14, atol=1e-14)
    check_grads(f, (a, b), order=2, modes=("fwd", "rev"))
    w = rng.normal(size=(7, 5))
    mine = jax.grad(lambda a, b: jnp.sum(w * jnp.tanh(f(a, b))), argnums=(0, 1))(a, b)
    ref_ = jax.grad(lambda a, b: jnp.sum(w * jnp.tanh(plain(a, b))), argnums=(0, 1))(a, b)
    for m, r in zip(mine, ref_):
        np.testing.assert_allclose(m, r, rtol=1e-12, atol=1e-12)
    ta, tb = rng.normal(size=a.shape), rng.normal(size=b.shape)
    np.testing.assert_allclose(jax.jvp(f, (a, b), (ta, tb))[1], jax.jvp(plain, (a, b), (ta, tb))[1],
                               rtol=1e-12, atol=1e-12)
    hb = jax.hessian(lambda b: jnp.sum(jnp.tanh(f(a, b))))(b)
    np.testing.assert_allclose(hb, jax.hessian(lambda b: jnp.sum(jnp.tanh(plain(a, b))))(b), rtol=1e-10, atol=1e-12)
    batch = np.stack([a, 2 * a])
    gb = jax.vmap(jax.grad(lambda a, b: jnp.sum(w * f(a, b)), argnums=1), in_axes=(0, None))(batch, b)
    np.testing.assert_allclose(gb[1], 2 * gb[0], rtol=1e-12)
