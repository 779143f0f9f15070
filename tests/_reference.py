"""Naive NumPy implementations written directly from the seed's formulas (appendix
"Algorithms for Distance Metric Learning: Detailed Explanation"). Loops and explicit outer
products: slow, obviously correct, independent of the library code."""

import numpy as np


def outer(a, b):
    d = a - b
    return np.outer(d, d)


def nca_objective(L, X, y):
    """f(L) = sum_i sum_{j in C_i} p_ij  (seed, NCA)."""
    N = len(X)
    Z = X @ L.T
    f = 0.0
    for i in range(N):
        e = np.array([np.exp(-np.sum((Z[i] - Z[k]) ** 2)) if k != i else 0.0 for k in range(N)])
        p = e / e.sum()
        f += p[y == y[i]].sum()
    return f


def nca_gradient(L, X, y):
    """grad f(L) = 2 L sum_i ( p_i sum_k p_ik O_ik - sum_{j in C_i} p_ij O_ij )  (seed, NCA)."""
    N, d = X.shape
    Z = X @ L.T
    S = np.zeros((d, d))
    for i in range(N):
        e = np.array([np.exp(-np.sum((Z[i] - Z[k]) ** 2)) if k != i else 0.0 for k in range(N)])
        p = e / e.sum()
        p_i = p[y == y[i]].sum()
        A = sum(p[k] * outer(X[i], X[k]) for k in range(N))
        B = sum(p[j] * outer(X[i], X[j]) for j in range(N) if y[j] == y[i])
        S += p_i * A - B
    return 2 * L @ S


def lmnn_objective_M(M, X, y, targets, mu=0.5, margin=1.0):
    """eps(M) = (1-mu) sum_{i, j~>i} d_ij + mu sum_{i, j~>i, l} (1-y_il)[margin + d_ij - d_il]_+"""
    N = len(X)
    d = lambda a, b: (X[a] - X[b]) @ M @ (X[a] - X[b])
    pull = push = 0.0
    for i in range(N):
        for j in targets[i]:
            dij = d(i, j)
            pull += dij
            for l in range(N):
                if y[l] != y[i]:
                    push += max(0.0, margin + dij - d(i, l))
    return (1 - mu) * pull + mu * push


def lmnn_subgradient_M(M, X, y, targets, mu=0.5, margin=1.0):
    """G = (1-mu) sum_{i,j~>i} O_ij + mu sum_{(i,j,l) in N} (O_ij - O_il)  (seed, LMNN)."""
    N, dim = X.shape
    d = lambda a, b: (X[a] - X[b]) @ M @ (X[a] - X[b])
    G = np.zeros((dim, dim))
    for i in range(N):
        for j in targets[i]:
            Oij = outer(X[i], X[j])
            G += (1 - mu) * Oij
            dij = d(i, j)
            for l in range(N):
                if y[l] != y[i] and margin + dij - d(i, l) > 0:
                    G += mu * (Oij - outer(X[i], X[l]))
    return G


def principal_angles_max(A, B):
    """Largest principal angle (radians) between the column spaces of A and B."""
    Qa, _ = np.linalg.qr(A)
    Qb, _ = np.linalg.qr(B)
    s = np.linalg.svd(Qa.T @ Qb, compute_uv=False)
    return float(np.arccos(np.clip(s.min(), -1.0, 1.0)))


#: scikit-learn's classifier checks that call ``predict`` on points. A learner that fits on tuples is a
#: tuple classifier to scikit-learn (as metric-learn's are): its ``predict`` classifies pairs, triplets or
#: quadruplets, and it fits on points too, as a transformer (these checks fit it on points, then call
#: ``predict`` on points). Its classifier contract on tuples is tested by ``test_pair_classifier``.
TUPLE_CLASSIFIER_CHECKS = {
    name: "a tuple classifier: predict takes tuples (pairs, triplets or quadruplets), not the checks' points"
    for name in ("check_classifier_data_not_an_array", "check_classifiers_classes", "check_classifiers_train",
                 "check_supervised_y_2d")
}


def expected_failed_checks(estimator) -> dict:
    """``expected_failed_checks`` of ``parametrize_with_checks``: :data:`TUPLE_CLASSIFIER_CHECKS` for a
    tuple classifier, none for any other estimator."""
    from sklearn.base import is_classifier

    return TUPLE_CLASSIFIER_CHECKS if is_classifier(estimator) and hasattr(estimator, "_tuple_arities") else {}
