"""jaxdml.losses.deep against pytorch-metric-learning (PML) on the same float64 batches: the further losses,
miners and regularizers (generalized lifted structure, tuplet margin, angular, instance, FastAP,
Smooth-AP, the triplet anchor swap, Sub-center ArcFace, SoftTriple, L-Softmax, VICReg; the margin-triplet
and BatchEasyHard miners, the distance-weighted sampler's support and draw frequencies; the Lp,
zero-mean, centre-invariance and RegularFace regularizers). Values and gradients in the embeddings are
compared; a miner's tuples as sets. Optional: needs ``torch`` and ``pytorch-metric-learning`` (in a
separate environment); not a test.

PML's conventions are applied where they differ from the papers' defaults: its distances normalise the
rows unless told otherwise (``LpDistance(normalize_embeddings=False)`` here), its angles are in degrees,
its triplet loss averages over the non-zero terms, its Smooth-AP counts the anchor among its own positives
(``include_anchor=True``; PML also needs balanced batches sorted by class), and its AngularLoss leaves the
negatives unnormalised (so rows are unit vectors for that case, and its gradient, which PML's
normalisation of the anchor and positive only changes, is not compared). Exit status 1 on a mismatch.

    python benchmarks/compare_pml_deep.py     # with jaxdml importable (installed, or PYTHONPATH=.)
"""

from __future__ import annotations

import math
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

try:
    import torch
    from pytorch_metric_learning import losses, miners, regularizers
    from pytorch_metric_learning.distances import LpDistance
except ImportError:  # pragma: no cover - optional
    sys.exit("compare_pml_deep needs torch and pytorch-metric-learning (pip install torch pytorch-metric-learning).")

from jaxdml.losses import deep  # noqa: E402

torch.set_default_dtype(torch.float64)
B, D, C = 24, 8, 4


def _batch(seed=0, sorted_square=False):
    rng = np.random.default_rng(seed)
    if sorted_square:  # PML's Smooth-AP: classes of equal size, sorted, as many rows per class as classes
        return rng.normal(size=(16, D)), np.repeat(np.arange(4), 4)
    y = np.arange(B) % C
    y[-1] = 0
    return rng.normal(size=(B, D)), y


def _compare(name, pml_fn, jax_fn, Z, y):
    """(name, PML value, jaxdml value, largest gradient difference)."""
    Zt = torch.tensor(Z, requires_grad=True)
    value = pml_fn(Zt, torch.tensor(y))
    value.backward()
    v, g = jax.value_and_grad(lambda z: jax_fn(z, jnp.asarray(y)))(jnp.asarray(Z))
    return name, float(value.detach()), float(v), float(np.max(np.abs(Zt.grad.numpy() - np.asarray(g))))


def loss_cases():
    """(name, PML f(z, y), jaxdml f(z, y), unit rows?) per compared configuration."""
    raw = LpDistance(normalize_embeddings=False)
    torch.manual_seed(0)
    sub = losses.SubCenterArcFaceLoss(num_classes=C, embedding_size=D, sub_centers=3)
    Ws = jnp.asarray(sub.W.detach().numpy().T.reshape(C, 3, D))
    st = losses.SoftTripleLoss(num_classes=C, embedding_size=D, centers_per_class=3)
    Cs = jnp.asarray(st.fc.detach().numpy().T.reshape(C, 3, D))
    lsm = losses.LargeMarginSoftmaxLoss(num_classes=C, embedding_size=D, margin=3, scale=2)
    Wl = jnp.asarray(lsm.W.detach().numpy().T)
    R2 = np.random.default_rng(9).normal(size=(B, D))
    return [
        ("generalized lifted", losses.GeneralizedLiftedStructureLoss(distance=raw),
         deep.generalized_lifted_structure, False),
        ("tuplet margin", losses.TupletMarginLoss(margin=10, scale=8),
         lambda z, y: deep.tuplet_margin(z, y, margin=math.radians(10), scale=8.0), False),
        ("angular (unit rows)", losses.AngularLoss(), deep.angular_loss, True),
        ("instance", losses.InstanceLoss(gamma=8), lambda z, y: deep.instance_loss(z, y, gamma=8.0), False),
        ("FastAP", losses.FastAPLoss(), deep.fast_ap, False),
        ("triplet swap, batch-hard",
         lambda z, y: losses.TripletMarginLoss(margin=0.3, swap=True, distance=raw)(
             z, y, miners.BatchHardMiner(distance=raw)(z, y)),
         lambda z, y: deep.triplet_margin(z, y, margin=0.3, swap=True, miner=deep.batch_hard,
                                          reduction="avg_non_zero"), False),
        ("Sub-center ArcFace", sub, lambda z, y: deep.subcenter_arcface(z, y, Ws, margin=math.radians(28.6)), False),
        ("SoftTriple", st, lambda z, y: deep.soft_triple(z, y, Cs), False),
        ("L-Softmax m=3 s=2", lsm, lambda z, y: deep.large_margin_softmax(z, y, Wl, margin=3, scale=2.0), False),
        ("VICReg", lambda z, y: losses.VICRegLoss()(z, ref_emb=torch.tensor(R2)),
         lambda z, y: deep.vicreg(z, jnp.asarray(R2)), False),
        ("Lp regularizer p=1 power=2", lambda z, y: regularizers.LpRegularizer(p=1, power=2)(z),
         lambda z, y: deep.lp_regularizer(z, p=1, power=2), False),
        ("zero mean", lambda z, y: regularizers.ZeroMeanRegularizer()(z), lambda z, y: deep.zero_mean(z), False),
        ("centre invariance", lambda z, y: regularizers.CenterInvariantRegularizer()(z),
         lambda z, y: deep.center_invariant(z), False),
        ("RegularFace", lambda z, y: regularizers.RegularFaceRegularizer()(z),
         lambda z, y: deep.regular_face(z), False),
    ]


def _jset(t):
    return {(int(a), int(p), int(n)) for a, p, n, m in zip(*map(np.asarray, t)) if m}


def miner_cases(Z, y):
    """(name, same tuples?) per compared miner configuration."""
    raw = LpDistance(normalize_embeddings=False)
    Zt, yt, Zj, yj = torch.tensor(Z), torch.tensor(y), jnp.asarray(Z), jnp.asarray(y)
    out = []
    for kind in ("all", "hard", "semihard", "easy"):
        a, p, n = miners.TripletMarginMiner(margin=0.3, type_of_triplets=kind, distance=raw)(Zt, yt)
        got = _jset(deep.triplet_margin_miner(Zj, yj, margin=0.3, kind=kind))
        out.append((f"TripletMarginMiner {kind}", set(zip(a.tolist(), p.tolist(), n.tolist())) == got))
    for ps, ns in [("easy", "semihard"), ("hard", "hard"), ("semihard", "hard"), ("hard", "semihard")]:
        for pr, nr in [(None, None), ((0.5, 3.5), (1.0, 5.0))]:
            a, p, _, n = miners.BatchEasyHardMiner(pos_strategy=ps, neg_strategy=ns, allowed_pos_range=pr,
                                                   allowed_neg_range=nr, distance=raw)(Zt, yt)
            got = _jset(deep.batch_easy_hard(Zj, yj, pos_strategy=ps, neg_strategy=ns, pos_range=pr, neg_range=nr))
            out.append((f"BatchEasyHard {ps}/{ns}{' ranges' if pr else ''}",
                        set(zip(a.tolist(), p.tolist(), n.tolist())) == got))
    a, _, n = miners.DistanceWeightedMiner()(Zt, yt)
    probs = np.asarray(deep.distance_weighted_probabilities(Zj, yj))
    out.append(("DistanceWeighted draws in jaxdml's support", all(probs[i, j] > 0
                                                                  for i, j in zip(a.tolist(), n.tolist()))))
    out.append(("DistanceWeighted draw frequencies (400 draws)", _frequencies_agree(Zt, yt, probs)))
    return out


def _frequencies_agree(Zt, yt, probs, n_draws=400):
    """PML's miner as a black box: each anchor's negatives over ``n_draws`` seeded calls, their frequencies
    within 5 standard errors of jaxdml's probabilities."""
    counts = np.zeros_like(probs)
    for seed in range(n_draws):
        torch.manual_seed(seed)
        a, _, n = miners.DistanceWeightedMiner()(Zt, yt)
        np.add.at(counts, (a.numpy(), n.numpy()), 1.0)
    ok = True
    for a in np.nonzero(counts.sum(axis=1))[0]:
        total = counts[a].sum()
        se = np.sqrt(probs[a] * (1 - probs[a]) / total)
        ok &= bool(np.all(np.abs(counts[a] / total - probs[a]) <= 5 * se + 1e-12))
    return ok


def main():
    Z, y = _batch()
    rows, bad = [], 0
    for name, pml_fn, jax_fn, unit in loss_cases():
        Zc = Z / np.linalg.norm(Z, axis=1, keepdims=True) if unit else Z
        rows.append(_compare(name, pml_fn, jax_fn, Zc, y))
    Zs, ys = _batch(1, sorted_square=True)
    for t in (0.01, 0.1):
        rows.append(_compare(f"Smooth-AP t={t}", losses.SmoothAPLoss(temperature=t),
                             lambda z, y, t=t: deep.smooth_ap(z, y, temperature=t, include_anchor=True), Zs, ys))
    print("| configuration | PML | jaxdml | gradient max diff |\n|---|---|---|---|")
    for name, vp, vj, g in rows:
        ok = abs(vp - vj) <= 1e-9 * max(1.0, abs(vp)) and (name.startswith("angular") or g <= 1e-9)
        bad += not ok
        print(f"| {name} | {vp:.12g} | {vj:.12g} | {g:.1e}{'' if ok else ' MISMATCH'} |")
    for name, same in miner_cases(Z, y):
        bad += not same
        print(f"| {name} | {'agrees' if same else 'MISMATCH'} | | |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
