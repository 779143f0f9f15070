"""SCML: record, host-side preparation (k-NN triplets from labels or given triplets, the bases), solve
step (stochastic RDA, :func:`jaxdml.solvers.scml_rda`) and estimator."""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.utils import check_random_state

from ..._runtime._device import to_device
from ..._runtime._padding import bucket_size
from ..._runtime._warnings import warn as _warn
from ..._runtime._warnings import warn_not_converged
from ..._validation import Interval, Options
from ...exceptions import ConvergenceWarning
from ...neighbors import knn_search
from ...solvers._scml import scml_rda
from ..core._index_tuples import TupleMetricLearner, check_index_tuples
from ..core._record import Method
from ..core._sampling import stratified_subsample
from ..core._tuple_classifiers import _TripletsClassifierMixin

__all__ = ["SCML", "SCML_METHOD", "SCML_MAX_TRIPLETS", "knn_triplets", "lda_basis", "triplet_diffs_basis"]

#: Most k-NN triplets SCML builds from labels: every row is an anchor up to
#: ``SCML_MAX_TRIPLETS / (k_genuine * k_impostor)`` rows (33 333 with the defaults), a stratified
#: subset of anchors above (their neighbours still searched among all rows). The default solver
#: draws ``max_iter * batch_size = 100 000`` triplets in all, so more would not be visited.
SCML_MAX_TRIPLETS = 1_000_000

_CONSTRAINTS = {
    "k_genuine": [Interval(numbers.Integral, 1, None)],
    "k_impostor": [Interval(numbers.Integral, 1, None)],
    "beta": [Interval(numbers.Real, 0, None, closed="left")],
    "basis": [Options({"auto", "lda", "triplet_diffs"}), "array-like"],
    "n_basis": [Interval(numbers.Integral, 1, None), None],
    "gamma": [Interval(numbers.Real, 0, None, closed="neither")],
    "output_iter": [Interval(numbers.Integral, 1, None), None],
}


def knn_triplets(X, codes, k_genuine, k_impostor, max_triplets=None, random_state=None):
    """``(i, j, l)`` for each anchor row ``i``, its ``k_genuine`` nearest same-class rows ``j`` and
    its ``k_impostor`` nearest other-class rows ``l`` (Euclidean, among all rows; all combinations;
    equal distances: the lower row index first, the rule of :func:`jaxdml.neighbors.knn_search`).

    Every row is an anchor while that makes at most ``max_triplets`` triplets (None: no cap);
    above, a class-stratified random subset of ``max_triplets // (k_genuine * k_impostor)``
    anchors (:data:`SCML_MAX_TRIPLETS`)."""
    counts = np.bincount(codes)
    kg = min(int(k_genuine), int(counts[counts > 0].min()) - 1)
    ki = min(int(k_impostor), int(codes.shape[0] - counts.max()))
    if kg < 1 or ki < 1:
        raise ValueError(
            "SCML: every class needs at least 2 samples and another class (k-NN triplets); got class "
            f"sizes {counts.tolist()}."
        )
    n = X.shape[0]
    anchors = np.arange(n)
    if max_triplets is not None and n * kg * ki > max_triplets:
        anchors = stratified_subsample(codes, max(int(max_triplets) // (kg * ki), 1), random_state,
                                       min_per_class=1)
    Xq, cq = X[anchors], codes[anchors]
    # the anchors are queries among all rows: kg + 1 same-class neighbours, then the anchor itself is
    # dropped (where duplicates of it push it out of the kg + 1, the farthest one is)
    near, _ = knn_search(Xq, kg + 1, Y=X, labels=cq, y_labels=codes, mode="same", exclude_self=False)
    keep = near != anchors[:, None]
    keep[keep.all(axis=1), -1] = False
    gen = near[keep].reshape(anchors.size, kg).astype(np.int64)
    imp, _ = knn_search(Xq, ki, Y=X, labels=cq, y_labels=codes, mode="other", exclude_self=False)
    imp = imp.astype(np.int64)
    i = np.repeat(anchors, kg * ki)
    j = np.repeat(gen, ki, axis=1).ravel()
    l = np.tile(imp, (1, kg)).ravel()
    return np.stack([i, j, l], axis=1)


def _local_lda(Xs, cls, n_cls, num_eig):
    """Unit discriminant directions of a batch of neighbourhoods ``Xs`` (C, m, d) sharing the class
    pattern ``cls`` (m,): whitening by the within-class scatter (rank-truncated), then the leading
    right singular vectors of the whitened class means (LDA's directions, batched eigh/SVD)."""
    onehot = np.eye(n_cls)[cls]  # (m, n_cls)
    counts = onehot.sum(0)
    means = np.einsum("cmd,mk->ckd", Xs, onehot) / counts[None, :, None]
    Xc = Xs - means[:, cls]
    w, V = np.linalg.eigh(np.einsum("cmi,cmj->cij", Xc, Xc))
    keep = w > 1e-8 * np.maximum(w[:, -1:], 1e-300)  # singular values above 1e-4 of the largest
    W = V * np.where(keep, 1.0 / np.sqrt(np.where(keep, w, 1.0)), 0.0)[:, None, :]
    Mb = (means - Xs.mean(1, keepdims=True)) * np.sqrt(counts)[None, :, None]
    _, _, Vb = np.linalg.svd(Mb @ W, full_matrices=False)  # (C, n_cls, d)
    B = np.einsum("cij,ckj->cki", W, Vb[:, :num_eig])  # (C, num_eig, d)
    return (B / np.maximum(np.linalg.norm(B, axis=2, keepdims=True), 1e-300)).reshape(-1, Xs.shape[2])


def lda_basis(X, codes, n_basis, rng):
    """SCML's local discriminative bases: LDA directions of the neighbourhoods (nearest members of
    each class, at two scales) of k-means centres (Shi et al. 2014, section 5)."""
    from sklearn.cluster import KMeans

    n, d = X.shape
    counts = np.bincount(codes)
    num_eig = min(int(np.sum(counts > 0)) - 1, d)
    n_basis = min(20 * d, 2 * n * num_eig - 1) if n_basis is None else int(n_basis)
    n_classes = int(np.sum(counts > 0))
    if n_basis < n_classes:
        _warn(f"SCML: n_basis={n_basis} is less than the number of classes ({n_classes}): too few local "
              "discriminative bases to separate every class; expect a poorly discriminative metric (use "
              f"n_basis >= {n_classes}).", UserWarning)
    n_clusters = min(int(np.ceil(n_basis / (2 * num_eig))), n)
    centres = KMeans(n_clusters, n_init=1, random_state=rng).fit(X).cluster_centers_
    scales = (20, 50) if d > 50 else (10, 20)
    members = {c: np.flatnonzero(codes == c) for c in np.flatnonzero(counts)}
    out = []
    for k in scales:
        parts = [rows[knn_search(centres, min(k, rows.size), Y=X[rows], exclude_self=False)[0]]
                 for rows in members.values()]
        local = np.concatenate(parts, axis=1)  # (n_clusters, sum_c k_c), the same class pattern in each row
        cls = np.searchsorted(np.flatnonzero(counts), codes[local[0]])
        out.append(_local_lda(X[local], cls, len(members), num_eig))
    B = np.concatenate(out)
    return B[np.linalg.norm(B, axis=1) > 0][:n_basis]


def triplet_diffs_basis(X, T, n_basis, rng):
    """Bases from triplet differences: eigenvectors (non-zero eigenvalue) of
    ``sum (x_a - x_p)(x_a - x_p)^T - (x_a - x_n)(x_a - x_n)^T`` over random groups of ``d`` triplets."""
    d = X.shape[1]
    n_basis = 80 * d if n_basis is None else int(n_basis)
    m = min(d, T.shape[0])
    n_groups = int(np.ceil(n_basis / max(m, 1))) + 2
    out, total = [], 0
    while total < n_basis:
        sel = np.stack([rng.choice(T.shape[0], m, replace=False) for _ in range(n_groups)])
        Vp, Vn = X[T[sel, 0]] - X[T[sel, 1]], X[T[sel, 0]] - X[T[sel, 2]]  # (groups, m, d)
        C = np.einsum("gmi,gmj->gij", Vp, Vp) - np.einsum("gmi,gmj->gij", Vn, Vn)
        w, V = np.linalg.eigh(C)
        keep = np.abs(w) > 1e-10 * np.maximum(np.abs(w).max(axis=1, keepdims=True), 1e-300)
        vecs = np.swapaxes(V, 1, 2)[keep]
        if vecs.shape[0] == 0:
            raise ValueError("SCML: the triplets give no basis (all their difference vectors are zero).")
        out.append(vecs)
        total += vecs.shape[0]
    return np.concatenate(out)[:n_basis]


def _triplet_pairs(X, T):
    """The difference vectors ``V`` of the distinct pairs of the triplets and the index of each
    triplet's two pairs (``(a, p)`` and ``(a, n)``)."""
    pairs = np.sort(np.concatenate([T[:, [0, 1]], T[:, [0, 2]]]), axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    inv = inv.ravel()
    return X[uniq[:, 0]] - X[uniq[:, 1]], inv[: T.shape[0]], inv[T.shape[0]:]


def _projections(X, T, B):
    """``P`` (n_pairs, n_basis) over the distinct pairs of the triplets, ``P[k, i] = (b_i^T v_k)^2``,
    and the index of each triplet's two pairs: the matrix :func:`jaxdml.losses._scml.scml_objective`
    reads (the solver never forms it)."""
    V, iab, ian = _triplet_pairs(X, T)
    return (V @ B.T) ** 2, iab, ian


def _padded(V, B, iab, ian):
    """Pad the pairs, the bases and the triplets to bucket sizes (cross-validation folds of similar
    sizes share one compiled solver); zero bases get zero weight, padded triplets mask 0."""
    n_p, n_b, n_t = V.shape[0], B.shape[0], iab.shape[0]
    V = np.pad(V, ((0, bucket_size(n_p) - n_p), (0, 0)))
    B = np.pad(B, ((0, bucket_size(n_b) - n_b), (0, 0)))
    pad = bucket_size(n_t) - n_t
    mask = np.r_[np.ones(n_t), np.zeros(pad)]
    return V, B, np.r_[iab, np.zeros(pad, iab.dtype)], np.r_[ian, np.zeros(pad, ian.dtype)], mask


def _scml(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose, k_genuine, k_impostor,
          beta, basis, n_basis, gamma, output_iter, triplets, batch_size="auto"):
    """Triplets and bases on the host, then the jitted stochastic RDA on the weights."""
    rng = check_random_state(random_state)
    if triplets is None:
        if codes is None:
            raise ValueError("method 'scml' needs class labels y, or triplets=(n, 3) row indices; got neither.")
        if n_classes < 2:
            raise ValueError(f"method 'scml': y has {n_classes} class(es); triplets need at least 2.")
        T = knn_triplets(X, codes, k_genuine, k_impostor, SCML_MAX_TRIPLETS, rng)
    else:
        T = check_index_tuples("scml", X, triplets, 3, "triplets", codes)
    if isinstance(basis, str) and basis == "auto":
        basis = "lda" if codes is not None else "triplet_diffs"
    if isinstance(basis, str) and basis == "lda":
        if codes is None:
            raise ValueError("SCML: basis='lda' needs labels; use basis='triplet_diffs' with triplets.")
        B = lda_basis(X, codes, n_basis, rng)
    elif isinstance(basis, str):
        B = triplet_diffs_basis(X, T, n_basis, rng)
    else:
        try:
            B = np.asarray(basis, np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"SCML: basis must be a numeric (n_basis, {X.shape[1]}) array; got {basis!r:.80}.") \
                from None
        if B.ndim != 2 or B.shape[1] != X.shape[1] or not np.all(np.isfinite(B)):
            raise ValueError(f"SCML: basis must be a finite (n_basis, {X.shape[1]}) array; got shape {B.shape}.")
    V, iab, ian = _triplet_pairs(X, T)
    V, Bp, iab, ian, mask = _padded(V, B, iab, ian)
    max_iter = 10000 if max_iter is None else int(max_iter)
    if output_iter is None:
        output_iter = min(500, max_iter)
    elif output_iter > max_iter:  # metric-learn refuses it too: no iterate would ever be evaluated
        raise ValueError(f"SCML: output_iter={output_iter} must be at most max_iter={max_iter} (the objective is "
                         "evaluated every output_iter steps).")
    tol = 1e-3 if tol is None else float(tol)
    block = int(output_iter)
    batch_size = 10 if batch_size in (None, "auto") else int(batch_size)
    dtype = jnp.result_type(float)
    st = scml_rda(to_device(V, dtype), to_device(Bp, dtype), to_device(iab), to_device(ian), to_device(mask, dtype),
                  float(beta),
                  float(gamma), tol,
                  jax.random.PRNGKey(int(rng.randint(2**31 - 1))), batch_size=int(batch_size), block=block,
                  max_blocks=max(max_iter // block, 1))
    converged, blocks = bool(st.converged), int(st.n_iter)
    w = np.asarray(st.w, np.float64)[: B.shape[0]]
    if not np.any(w > 0):
        converged = False
        _warn("SCML: every weight is zero (no basis direction lowered the triplet loss), so the metric is zero; "
              "try other bases (basis, n_basis), a smaller beta or more iterations.", ConvergenceWarning)
    elif not converged:
        warn_not_converged("scml", max_iter, tol)
    M = (B.T * w) @ B
    hist = np.asarray(st.history, np.float64)[: blocks + 1]
    return dict(metric=0.5 * (M + M.T), n_iter=blocks * block, converged=converged, loss=float(st.best),
                loss_history=hist, info=dict(basis=B, weights=w, triplets=T))


SCML_METHOD = Method(
    "scml", "M", _scml,
    defaults=dict(k_genuine=3, k_impostor=10, beta=1e-5, basis="auto", n_basis=None, gamma=5e-3, output_iter=None,
                  triplets=None),
    constraints={**_CONSTRAINTS, "triplets": ["array-like", None]}, settings=frozenset({"batch_size"}),
    supervised=False, full_rank_only=True, estimator="SCML",
)


class SCML(_TripletsClassifierMixin, TupleMetricLearner):
    r"""Sparse Compositional Metric Learning (Shi, Bellet, Sha, 2014) on triplets.

    The metric is a sparse non-negative combination of rank-one bases,
    :math:`M = \sum_i w_i b_i b_i^\top`, fitted to triplets ``(a, p, n)`` (``a`` closer to ``p``
    than to ``n``) with a unit-margin hinge and an L1 penalty:

    .. math::

        \min_{w \ge 0} \frac{1}{|T|} \sum_t \big[1 + d_w(a_t, p_t) - d_w(a_t, n_t)\big]_+
        + \beta \|w\|_1

    solved as in the paper by stochastic regularised dual averaging with AdaGrad steps
    (:func:`jaxdml.solvers.scml_rda`, jitted), keeping the iterate with the best full objective
    (evaluated every ``output_iter`` steps).

    From labels (metric-learn's ``SCML_Supervised``): triplets of each row with its
    ``k_genuine`` nearest same-class rows and ``k_impostor`` nearest other-class rows, and
    ``basis="lda"``: the LDA directions of local neighbourhoods around k-means centres, at two
    scales. Weakly supervised, ``fit(X, triplets=T)`` with ``T`` an ``(n, 3)`` int array of rows of
    ``X`` and ``basis="triplet_diffs"``: eigenvectors of sums of triplet difference outer products.

    Parameters
    ----------
    k_genuine, k_impostor : int, default=3, 10
    beta : float, default=1e-5
        L1 weight on ``w``.
    basis : {"auto", "lda", "triplet_diffs"} or ndarray of shape (n_basis, n_features), default="auto"
        "auto": "lda" with labels, "triplet_diffs" with triplets.
    n_basis : int, default=None
        Default ``min(20 d, 2 n (n_classes - 1) - 1)`` for "lda", ``80 d`` for "triplet_diffs".
    gamma : float, default=5e-3
        Inverse step size of the dual averaging.
    batch_size : int, default=10
    output_iter : int, default=None
        Steps between evaluations of the full objective (None: 500, or ``max_iter`` when smaller;
        a value above ``max_iter`` raises, as in metric-learn).
    max_iter : int, default=None
        Stochastic steps (default 10000).
    tol : float, default=1e-3
        Stop when ``output_iter`` steps improve the best objective by less than ``tol`` relative
        (the stochastic method converges slowly: this is a plateau test, not an optimality test).
    random_state : int, RandomState or None
    verbose : int, default=0

    Attributes
    ----------
    components_, metric_ : ndarray of shape (n_features, n_features)
    weights_ : ndarray of shape (n_basis,)
    basis_ : ndarray of shape (n_basis, n_features)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import jaxdml
    >>> X, y = load_iris(return_X_y=True)
    >>> jaxdml.SCML(random_state=0).fit(X, y).metric_.shape
    (4, 4)

    References
    ----------
    Y. Shi, A. Bellet, F. Sha. Sparse compositional metric learning. AAAI 2014.
    """

    _record = SCML_METHOD
    _tuple_kind = "triplets"
    _parameter_constraints = {
        **_CONSTRAINTS,
        "batch_size": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None), None],
        "tol": [Interval(numbers.Real, 0, None)],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
        "preprocessor": ["array-like", "callable", None],
    }

    def __init__(self, k_genuine=3, k_impostor=10, *, beta=1e-5, basis="auto", n_basis=None, gamma=5e-3,
                 batch_size=10, output_iter=None, max_iter=None, tol=1e-3, random_state=None, verbose=0,
                 preprocessor=None):
        self.preprocessor = preprocessor
        self.k_genuine = k_genuine
        self.k_impostor = k_impostor
        self.beta = beta
        self.basis = basis
        self.n_basis = n_basis
        self.gamma = gamma
        self.batch_size = batch_size
        self.output_iter = output_iter
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, triplets=None):
        """Learn from labels ``y`` or from ``triplets`` ((n, 3) row indices of ``X``: anchor, closer, farther).

        Returns
        -------
        self
        """
        return self._fit_index_tuples(X, y, triplets)

    def _store(self, result):
        super()._store(result)
        self.weights_ = np.asarray(result.info["weights"])
        self.basis_ = np.asarray(result.info["basis"])
