"""Naive NumPy references for the deep metric learning losses, miners and retrieval metrics, written
from the papers' formulas with loops over pairs, triplets and anchors: slow, float64, obviously
correct, and independent of jaxdml's code (no GEMM identity, no masks, no log-sum-exp tricks).

Pairs are lists of ``(i, j, positive)`` over ordered pairs of real rows; triplets lists of
``(a, p, n)``. ``rows`` is the list of real (unpadded) rows.
"""

import math

import numpy as np

SIM = ("cosine", "dot")


def measure(a, b, distance):
    if distance == "euclidean":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    if distance == "sq_euclidean":
        return sum((x - y) ** 2 for x, y in zip(a, b))
    dot = sum(x * y for x, y in zip(a, b))
    if distance == "dot":
        return dot
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def label_pairs(y, rows):
    return [(i, j, y[i] == y[j]) for i in rows for j in rows if i != j]


def label_triplets(y, rows):
    return [(a, p, n) for a in rows for p in rows for n in rows if a != p and y[a] == y[p] and y[n] != y[a]]


def _mean(terms):
    return sum(terms) / len(terms) if terms else 0.0


# ------------------------------------------------------------------------------------------ losses

def contrastive(Z, pairs, distance, mp, mn):
    terms = []
    for i, j, pos in pairs:
        v = measure(Z[i], Z[j], distance)
        if distance in SIM:
            terms.append(0.5 * max(mp - v, 0) ** 2 if pos else 0.5 * max(v - mn, 0) ** 2)
        else:
            terms.append(0.5 * max(v - mp, 0) ** 2 if pos else 0.5 * max(mn - v, 0) ** 2)
    return _mean(terms)


def margin_loss(Z, y, pairs, distance, beta, alpha, nu):
    terms = []
    for i, j, pos in pairs:
        b = beta[y[i]] if np.ndim(beta) else beta
        v = measure(Z[i], Z[j], distance)
        yij = 1.0 if pos else -1.0
        hinge = max(alpha - yij * (v - b), 0) if distance in SIM else max(alpha + yij * (v - b), 0)
        terms.append(hinge + nu * b)
    return _mean(terms)


def triplet(Z, triplets, distance, margin, soft):
    terms = []
    for a, p, n in triplets:
        ap, an = measure(Z[a], Z[p], distance), measure(Z[a], Z[n], distance)
        t = margin + (an - ap if distance in SIM else ap - an)
        terms.append(math.log1p(math.exp(t)) if soft else max(t, 0.0))
    return _mean(terms)


def lifted(Z, pairs, distance, alpha):
    def D(i, j):
        v = measure(Z[i], Z[j], distance)
        return -v if distance in SIM else v

    negs = {}
    for i, j, pos in pairs:
        if not pos:
            negs.setdefault(i, []).append(j)
    terms = []
    for i, j, pos in pairs:
        if not pos:
            continue
        s = sum(math.exp(alpha - D(i, k)) for k in negs.get(i, []))
        s += sum(math.exp(alpha - D(j, l)) for l in negs.get(j, []))
        terms.append(0.5 * max(math.log(s) + D(i, j), 0.0) ** 2 if s > 0 else 0.0)
    return _mean(terms)  # = 1 / (2 |P|) sum over unordered pairs of [J]_+^2


def multi_similarity(Z, pairs, rows, distance, alpha, beta, lam):
    total = 0.0
    for i in rows:
        P = [j for a, j, pos in pairs if a == i and pos]
        N = [j for a, j, pos in pairs if a == i and not pos]

        def x(j):  # S - lambda (lambda - D for a distance)
            v = measure(Z[i], Z[j], distance)
            return v - lam if distance in SIM else lam - v

        total += math.log(1 + sum(math.exp(-alpha * x(j)) for j in P)) / alpha
        total += math.log(1 + sum(math.exp(beta * x(j)) for j in N)) / beta
    return total / len(rows)


def circle(Z, pairs, rows, distance, m, gamma, weights_at=None):
    """``weights_at``: the embeddings at which the weights alpha are evaluated (the paper holds them
    constant in the gradient: pass the base point when differentiating by finite differences)."""
    W = Z if weights_at is None else weights_at
    terms = []
    for i in rows:
        both = [(measure(Z[i], Z[j], distance), measure(W[i], W[j], distance), pos) for a, j, pos in pairs if a == i]
        sp = [(s, w) for s, w, pos in both if pos]
        sn = [(s, w) for s, w, pos in both if not pos]
        if not sp or not sn:
            continue
        pos_sum = sum(math.exp(-gamma * max(1 + m - w, 0) * (s - (1 - m))) for s, w in sp)
        neg_sum = sum(math.exp(gamma * max(w + m, 0) * (s - m)) for s, w in sn)
        terms.append(math.log(1 + neg_sum * pos_sum))
    return _mean(terms)


def _logit(Z, i, j, distance, temperature):
    v = measure(Z[i], Z[j], distance)
    return (v if distance in SIM else -v) / temperature


def ntxent(Z, pairs, distance, temperature):
    terms = []
    for a, p, pos in pairs:
        if not pos:
            continue
        negs = [n for b, n, q in pairs if b == a and not q]
        num = math.exp(_logit(Z, a, p, distance, temperature))
        terms.append(-math.log(num / (num + sum(math.exp(_logit(Z, a, n, distance, temperature)) for n in negs))))
    return _mean(terms)


def npair(Z, pairs, rows, distance, l2_reg):
    terms = []
    for a, p, pos in pairs:
        if not pos:
            continue
        negs = [n for b, n, q in pairs if b == a and not q]
        x_ap = _logit(Z, a, p, distance, 1.0)  # the similarity (a distance enters as -d)
        terms.append(math.log(1 + sum(math.exp(_logit(Z, a, n, distance, 1.0) - x_ap) for n in negs)))
    return _mean(terms) + l2_reg * sum(sum(v * v for v in Z[i]) for i in rows) / len(rows)


def supcon(Z, pairs, rows, distance, temperature):
    terms = []
    for i in rows:
        P = [j for a, j, pos in pairs if a == i and pos]
        A = [j for a, j, pos in pairs if a == i]
        if not P:
            continue
        den = sum(math.exp(_logit(Z, i, a, distance, temperature)) for a in A)
        terms.append(-sum(math.log(math.exp(_logit(Z, i, p, distance, temperature)) / den) for p in P) / len(P))
    return _mean(terms)


def _unit(v):
    return v / np.linalg.norm(v)


def proxy_nca(Z, y, P, rows, distance, scale, normalize, include_positive):
    total = 0.0
    for i in rows:
        x = _unit(Z[i]) if normalize and distance not in SIM else Z[i]
        logits = []
        for c in range(len(P)):
            p = _unit(P[c]) if normalize and distance not in SIM else P[c]
            v = measure(x, p, distance)
            logits.append(scale * (v if distance in SIM else -v))
        den = sum(math.exp(logits[c]) for c in range(len(P)) if include_positive or c != y[i])
        total += -math.log(math.exp(logits[y[i]]) / den)
    return total / len(rows)


def proxy_anchor(Z, y, P, rows, distance, alpha, delta):
    def s(i, c):
        v = measure(Z[i], P[c], distance)
        return v if distance in SIM else -v

    in_batch = [c for c in range(len(P)) if any(y[i] == c for i in rows)]
    pos = sum(math.log(1 + sum(math.exp(-alpha * (s(i, c) - delta)) if distance in SIM
                                   else math.exp(-alpha * (delta + s(i, c))) for i in rows if y[i] == c))
              for c in in_batch)
    neg = sum(math.log(1 + sum(math.exp(alpha * (s(i, c) + delta)) if distance in SIM
                                   else math.exp(alpha * (s(i, c) - delta)) for i in rows if y[i] != c))
              for c in range(len(P)))
    return (pos / len(in_batch) if in_batch else 0.0) + neg / len(P)


def sphereface_psi(theta, m1, m2):
    """cos(m1 theta + m2) continued monotonically: on the k-th interval of pi, (-1)^k cos(.) - 2k."""
    a = m1 * theta + m2
    k = 0
    while a >= (k + 1) * math.pi:
        k += 1
    return (-1) ** k * math.cos(a) - 2 * k


def angular(Z, y, W, rows, scale, m1, m2, m3):
    total = 0.0
    for i in rows:
        logits = []
        for c in range(len(W)):
            cos = float(_unit(Z[i]) @ _unit(W[c]))
            s = np.linalg.norm(Z[i]) if scale is None else scale
            if c == y[i]:
                logits.append(s * (sphereface_psi(math.acos(cos), m1, m2) - m3))
            else:
                logits.append(s * cos)
        total += -math.log(math.exp(logits[y[i]]) / sum(math.exp(v) for v in logits))
    return total / len(rows)


def nca(Z, y, rows, distance):
    total = 0.0
    for i in rows:
        e = {k: math.exp(_logit(Z, i, k, distance, 1.0)) for k in rows if k != i}
        total -= sum(v for k, v in e.items() if y[k] == y[i]) / sum(e.values()) if e else 0.0
    return total / len(rows)


def lmnn(Z, y, rows, targets, distance, mu, margin):
    def d(i, j):
        v = measure(Z[i], Z[j], distance)
        return -v if distance in SIM else v

    total = 0.0
    for i in rows:
        for j in targets[i]:
            total += (1 - mu) * d(i, j)
            total += mu * sum(max(margin + d(i, j) - d(i, l), 0) for l in rows if y[l] != y[i])
    return total / len(rows)


def same_class_targets(Z, y, rows, k, distance):
    """The k nearest same-class real rows of every row (ties: lower index)."""
    out = {}
    for i in rows:
        cand = sorted((measure(Z[i], Z[j], distance) * (-1 if distance in SIM else 1), j) for j in rows
                      if j != i and y[j] == y[i])
        out[i] = [j for _, j in cand[:k]]
    return out


# ------------------------------------------------------------------------------------------ miners

def _d(Z, i, j, distance):
    v = measure(Z[i], Z[j], distance)
    return -v if distance in SIM else v


def batch_hard(Z, y, rows, distance):
    out = {}
    for a in rows:
        P = [p for p in rows if p != a and y[p] == y[a]]
        N = [n for n in rows if y[n] != y[a]]
        if P and N:  # farthest positive, closest negative; ties: lower index
            p = max(P, key=lambda p: (_d(Z, a, p, distance), -p))
            n = min(N, key=lambda n: (_d(Z, a, n, distance), n))
            out[a] = (p, n)
    return out


def batch_all(Z, y, rows, distance, margin=None):
    return [(a, p, n) for a, p, n in label_triplets(y, rows)
            if margin is None or _d(Z, a, n, distance) < _d(Z, a, p, distance) + margin]


def semi_hard(Z, y, rows, distance, margin):
    out = {}
    for a in rows:
        for p in rows:
            if p == a or y[p] != y[a]:
                continue
            dap = _d(Z, a, p, distance)
            cand = [(_d(Z, a, n, distance), n) for n in rows
                    if y[n] != y[a] and dap < _d(Z, a, n, distance) < dap + margin]
            if cand:
                out[(a, p)] = min(cand)[1]
    return out


def ms_pairs(Z, y, rows, distance, eps):
    def S(i, j):
        return -_d(Z, i, j, distance)

    keep = set()
    for i in rows:
        P = [j for j in rows if j != i and y[j] == y[i]]
        N = [j for j in rows if y[j] != y[i]]
        if not P or not N:
            continue
        min_p, max_n = min(S(i, j) for j in P), max(S(i, j) for j in N)
        keep |= {(i, j) for j in N if S(i, j) > min_p - eps}
        keep |= {(i, j) for j in P if S(i, j) < max_n + eps}
    return keep


def pair_margin(Z, y, rows, distance, mp, mn):
    keep = set()
    for i, j, pos in label_pairs(y, rows):
        v = measure(Z[i], Z[j], distance)
        if distance in SIM:
            hit = v < mp if pos else v > mn
        else:
            hit = v > mp if pos else v < mn
        if hit:
            keep.add((i, j))
    return keep


# ------------------------------------------------------------------------------------------ retrieval

def retrieval(Q, yq, R, yr, same, distance="euclidean", ks=(1,), max_r=None):
    """Brute force: full distance matrix, stable sort (ties: lower index), the definitions as written."""
    per = []
    for i in range(len(Q)):
        order = [j for j in range(len(R)) if not (same and j == i)]
        key = [measure(Q[i], R[j], distance) * (-1 if distance in SIM else 1) for j in order]
        ranked = [order[t] for t in np.argsort(np.asarray(key), kind="stable")]
        hits = [1.0 if yr[j] == yq[i] else 0.0 for j in ranked]
        r = int(sum(hits))
        if r == 0:
            continue
        r = r if max_r is None else min(r, max_r)
        prec = [sum(hits[: t + 1]) / (t + 1) for t in range(len(hits))]
        row = [hits[0], sum(hits[:r]) / r, sum(hits[t] * prec[t] for t in range(r)) / r]
        row += [max(hits[:k]) for k in ks]
        per.append(row)
    return np.asarray(per).mean(axis=0)
