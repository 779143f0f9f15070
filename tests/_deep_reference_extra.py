"""Naive NumPy references for the further deep losses, miners and regularizers (tests/_deep_reference.py's
companions): written from the papers' formulas with plain loops over anchors, pairs and triplets, in
float64, independent of jaxdml's code. ``rows`` is the list of real (unpadded) rows. ``refs``, where a function
takes it, is the list of reference rows (the rows after the queries in a stacked array): the anchors are then
``rows`` and their positives and negatives the ``refs`` of equal / other labels, every one of them (no
self-pair left out)."""

import math

import numpy as np

from ._deep_reference import SIM, measure


def _mean(terms):
    return sum(terms) / len(terms) if terms else 0.0


def _unit(v):
    v = np.asarray(v, float)
    n = math.sqrt(sum(x * x for x in v))
    return v / n if n > 0 else v


def _cos(a, b):
    """The cosine, clipped to [-1, 1] (rounding may put equal rows' cosine just above 1)."""
    return min(max(float(sum(x * y for x, y in zip(_unit(a), _unit(b)))), -1.0), 1.0)


def _lse(xs):
    """log sum exp of a list; 0 for an empty list (PML's convention for an empty log-sum-exp)."""
    return math.log(sum(math.exp(x) for x in xs)) if xs else 0.0


def _positives(y, rows, a, refs=None):
    if refs is not None:
        return [p for p in refs if y[p] == y[a]]
    return [p for p in rows if p != a and y[p] == y[a]]


def _negatives(y, rows, a, refs=None):
    return [n for n in (rows if refs is None else refs) if y[n] != y[a]]


def _cross_entropy(logits, target):
    return math.log(sum(math.exp(v) for v in logits)) - logits[target]


# ------------------------------------------------------------------------------------------ losses

def generalized_lifted(Z, y, rows, distance, mp, mn, refs=None):
    terms = []
    for a in rows:
        v_p = [measure(Z[a], Z[p], distance) for p in _positives(y, rows, a, refs)]
        v_n = [measure(Z[a], Z[n], distance) for n in _negatives(y, rows, a, refs)]
        if distance in SIM:
            s = _lse([mp - v for v in v_p]) + _lse([v - mn for v in v_n])
        else:
            s = _lse([v - mp for v in v_p]) + _lse([mn - v for v in v_n])
        terms.append(max(s, 0.0))
    return _mean(terms)


def _pos_pairs(y, rows, triplets, refs=None):
    """Positive pairs: every one of the batch (or of its queries and references), or the (a, p) of given triplets."""
    if triplets is None:
        return [(a, p) for a in rows for p in _positives(y, rows, a, refs)]
    return [(a, p) for a, p, _ in triplets]


def tuplet_margin(Z, y, rows, margin, scale, triplets=None, refs=None):
    """``triplets``: mined (a, p, n); then the negatives of anchor a are the n of its triplets."""
    terms = []
    for a, p in _pos_pairs(y, rows, triplets, refs):
        negs = _negatives(y, rows, a, refs) if triplets is None else [n for b, _, n in triplets if b == a]
        pos = math.cos(math.acos(_cos(Z[a], Z[p])) - margin)
        terms.append(math.log(1 + sum(math.exp(scale * (_cos(Z[a], Z[n]) - pos)) for n in negs)))
    return _mean(terms)


def angular(Z, y, rows, alpha, triplets=None, refs=None):
    """``triplets``: mined (a, p, n) give the positive pairs; the negatives are every row of another class."""
    t2 = math.tan(alpha) ** 2
    X = [_unit(z) for z in Z]
    terms = []
    for a, p in _pos_pairs(y, rows, triplets, refs):
        f = [4 * t2 * float(np.dot(X[a] + X[p], X[n])) - 2 * (1 + t2) * float(np.dot(X[a], X[p]))
             for n in _negatives(y, rows, a, refs)]
        terms.append(math.log(1 + sum(math.exp(v) for v in f)))
    return _mean(terms)


def instance(Z, y, gamma):
    n = len(Z)
    codes = list(range(n)) if y is None else [sorted(set(y.tolist())).index(v) for v in y]
    return _mean([_cross_entropy([gamma * _cos(Z[i], Z[j]) for j in range(n)], codes[i]) for i in range(n)])


def triplet_swap(Z, y, rows, distance, margin, triplets=None):
    if triplets is None:
        triplets = [(a, p, n) for a in rows for p in _positives(y, rows, a) for n in _negatives(y, rows, a)]
    terms = []
    for a, p, n in triplets:
        d = {k: measure(Z[i], Z[j], distance) for k, (i, j) in dict(ap=(a, p), an=(a, n), pn=(p, n)).items()}
        if distance in SIM:
            terms.append(max(margin + max(d["an"], d["pn"]) - d["ap"], 0.0))
        else:
            terms.append(max(margin + d["ap"] - min(d["an"], d["pn"]), 0.0))
    return _mean(terms)


def fast_ap(Z, y, rows, num_bins):
    delta = 4.0 / num_bins
    X = [_unit(z) for z in Z]
    terms = []
    for a in rows:
        P = _positives(y, rows, a)
        if not P:
            continue
        others = [j for j in rows if j != a]
        h_pos, h_all = [], []
        for z in range(num_bins + 1):
            k = {j: max(1 - abs(float(np.sum((X[a] - X[j]) ** 2)) - z * delta) / delta, 0.0) for j in others}
            h_pos.append(sum(k[j] for j in P))
            h_all.append(sum(k.values()))
        ap = 0.0
        for z in range(num_bins + 1):
            H_pos, H_all = sum(h_pos[: z + 1]), sum(h_all[: z + 1])
            if h_pos[z] * H_pos > 0:
                ap += h_pos[z] * H_pos / H_all
        terms.append(1 - ap / len(P))
    return _mean(terms)


def smooth_ap(Z, y, rows, tau, include_anchor=False):
    terms = []
    for a in rows:
        P = _positives(y, rows, a) + ([a] if include_anchor else [])
        if not P:
            continue
        s = {j: _cos(Z[a], Z[j]) for j in rows if j != a or include_anchor}

        def sig(x):
            return 1 / (1 + math.exp(-x / tau))

        ap = 0.0
        for p in P:
            r_pos = 1 + sum(sig(s[k] - s[p]) for k in P if k != p)
            r_all = 1 + sum(sig(s[k] - s[p]) for k in s if k != p)
            ap += r_pos / r_all
        terms.append(1 - ap / len(P))
    return _mean(terms)


def _psi(theta, m1, m2):
    a = m1 * theta + m2
    k = math.floor(a / math.pi)
    return (-1) ** k * math.cos(a) - 2 * k


def subcenter_arcface(Z, y, C, rows, scale, margin):
    terms = []
    for i in rows:
        cos = [max(_cos(Z[i], w) for w in C[j]) for j in range(len(C))]
        logits = [scale * (_psi(math.acos(c), 1, margin) if j == y[i] else c) for j, c in enumerate(cos)]
        terms.append(_cross_entropy(logits, y[i]))
    return _mean(terms)


def soft_triple(Z, y, C, rows, la, gamma, delta, tau=0.0):
    terms = []
    for i in rows:
        logits = []
        for c in range(len(C)):
            s = [_cos(Z[i], w) for w in C[c]]
            e = [math.exp(v / gamma) for v in s]
            S = sum(ek * v for ek, v in zip(e, s)) / sum(e)
            logits.append(la * (S - (delta if c == y[i] else 0.0)))
        terms.append(_cross_entropy(logits, y[i]))
    n_classes, K = len(C), len(C[0])
    reg = 0.0
    if tau and K > 1:
        for c in range(n_classes):
            for t in range(K):
                for s in range(t + 1, K):
                    reg += math.sqrt(float(np.sum((_unit(C[c][t]) - _unit(C[c][s])) ** 2)))
        reg = tau * reg / (n_classes * K * (K - 1))
    return _mean(terms) + reg


def l_softmax(Z, y, W, rows, m, scale):
    """The paper's Eq. 7 (cos(m theta) as a polynomial in cos theta) and Eq. 6's piecewise psi."""
    terms = []
    for i in rows:
        xn = math.sqrt(float(np.sum(Z[i] ** 2)))
        logits = []
        for j, w in enumerate(W):
            c = _cos(Z[i], w)
            wn = math.sqrt(float(np.sum(w ** 2)))
            if j == y[i]:
                cos_m = sum((-1) ** n * math.comb(m, 2 * n) * c ** (m - 2 * n) * (1 - c * c) ** n
                            for n in range(m // 2 + 1))
                k = math.floor(math.acos(c) * m / math.pi)
                c = (-1) ** k * cos_m - 2 * k
            logits.append(scale * wn * xn * c)
        terms.append(_cross_entropy(logits, y[i]))
    return _mean(terms)


def vicreg(Z, R, rows, lam, mu, nu, eps):
    Z, R = np.asarray(Z)[rows], np.asarray(R)[rows]
    n, d = Z.shape
    inv = sum((Z[i, k] - R[i, k]) ** 2 for i in range(n) for k in range(d)) / (n * d)

    def var(A):
        out = 0.0
        for k in range(d):
            m = sum(A[:, k]) / n
            out += max(1 - math.sqrt(sum((A[i, k] - m) ** 2 for i in range(n)) / (n - 1) + eps), 0.0)
        return out / d

    def cov(A):
        m = [sum(A[:, k]) / n for k in range(d)]
        out = 0.0
        for k in range(d):
            for j in range(d):
                if k != j:
                    c = sum((A[i, k] - m[k]) * (A[i, j] - m[j]) for i in range(n)) / (n - 1)
                    out += c * c
        return out / d

    return lam * inv + mu * 0.5 * (var(Z) + var(R)) + nu * (cov(Z) + cov(R))


# ---------------------------------------------------------------------------------- regularizers

def lp(Z, rows, p, power):
    return _mean([sum(abs(x) ** p for x in Z[i]) ** (power / p) for i in rows])


def zero_mean(Z, rows):
    return _mean([abs(sum(Z[i])) for i in rows])


def center_invariant(W):
    sq = [float(np.sum(w ** 2)) for w in W]
    m = sum(sq) / len(sq)
    return _mean([(s - m) ** 2 / 4 for s in sq])


def regular_face(W, nearest_at=None):
    """``nearest_at``: the weights at which each class's nearest other class is chosen (held fixed in
    the gradient, as the paper's)."""
    A = W if nearest_at is None else nearest_at
    terms = []
    for j in range(len(W)):
        k = max((k for k in range(len(W)) if k != j), key=lambda k: (_cos(A[j], A[k]), -k))
        terms.append(_cos(W[j], W[k]))
    return _mean(terms)


# ---------------------------------------------------------------------------------------- miners

def _D(Z, i, j, distance):
    v = measure(Z[i], Z[j], distance)
    return -v if distance in SIM else v


def margin_triplets(Z, y, rows, distance, margin, kind, refs=None):
    out = set()
    for a in rows:
        for p in _positives(y, rows, a, refs):
            for n in _negatives(y, rows, a, refs):
                t = _D(Z, a, n, distance) - _D(Z, a, p, distance)
                keep = {"all": t <= margin, "hard": t <= 0, "semihard": 0 < t <= margin, "easy": t > margin}[kind]
                if keep:
                    out.add((a, p, n))
    return out


def _pick(cands, key, farthest):
    """The candidate with the largest (``farthest``) or smallest key; ties to the lowest index."""
    best = None
    for j in sorted(cands):
        if best is None or (key(j) > key(best) if farthest else key(j) < key(best)):
            best = j
    return best


def easy_hard(Z, y, rows, distance, pos_strategy, neg_strategy, pos_range=None, neg_range=None, refs=None):
    """{anchor: (positive, negative)} for strategies other than "all"."""
    out = {}

    def in_range(a, j, r):
        return r is None or r[0] <= measure(Z[a], Z[j], distance) <= r[1]

    for a in rows:
        P = [p for p in _positives(y, rows, a, refs) if in_range(a, p, pos_range)]
        N = [n for n in _negatives(y, rows, a, refs) if in_range(a, n, neg_range)]

        def d(j):
            return _D(Z, a, j, distance)

        if pos_strategy == "semihard":
            n = _pick(N, d, farthest=neg_strategy == "easy")
            p = None if n is None else _pick([q for q in P if d(q) < d(n)], d, farthest=True)
        else:
            p = _pick(P, d, farthest=pos_strategy == "hard")
            if neg_strategy == "semihard":
                n = None if p is None else _pick([q for q in N if d(q) > d(p)], d, farthest=False)
            else:
                n = _pick(N, d, farthest=neg_strategy == "easy")
        if p is not None and n is not None:
            out[a] = (p, n)
    return out


def distance_weighted_probs(Z, y, rows, cutoff, nonzero_cutoff, refs=None):
    """{anchor: {negative: probability}}: q(d)^-1 normalised over the anchor's negatives with d < nonzero_cutoff."""
    dim = len(Z[0])
    X = [_unit(z) for z in Z]
    out = {}
    for a in rows:
        w = {}
        for n in _negatives(y, rows, a, refs):
            d = math.sqrt(float(np.sum((X[a] - X[n]) ** 2)))
            if d >= nonzero_cutoff:
                continue
            d = max(d, cutoff)
            w[n] = d ** (2 - dim) * (1 - d * d / 4) ** (-(dim - 3) / 2)
        total = sum(w.values())
        if total > 0:
            out[a] = {n: v / total for n, v in w.items()}
    return out
