"""Data pytrees consumed by the pure losses, and their host-side builders.

A problem is a ``NamedTuple`` of arrays (a JAX pytree). Everything that depends on the data but
not on the parameters - label codes, target neighbours, impostor candidates, class centroids,
constraint pairs - is computed here, on the host, once, as fixed-shape index arrays. Rows can be
padded to a bucket size (``sample_mask`` is 0 there) so that data sets of similar size, such as the
folds of a cross-validation, share one compiled executable.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ._runtime._padding import bucket_size
from .neighbors import other_class_neighbors, same_class_neighbors
from ._validation import check_data, check_pair_labels, encode_labels, index_tuples
from ._runtime._warnings import warn as _warn

__all__ = [
    "LabeledProblem",
    "PairsProblem",
    "make_problem",
    "make_pairs_problem",
    "pairs_from_labels",
    "labelled_pairs",
    "bucket_size",
    "target_neighbors",
    "impostor_candidates",
]

Array = jax.Array


class LabeledProblem(NamedTuple):
    """Labelled data for supervised losses.

    Attributes
    ----------
    X : (n, d) float array (rows beyond the real samples are zero padding).
    y : (n,) int32 class codes in ``[0, n_classes)``.
    sample_mask : (n,) float, 1 for real samples and 0 for padding.
    class_counts : (n_classes,) float, number of real samples per class. Its length fixes
        ``n_classes`` statically.
    targets : (n, k) int32 target neighbours (same class, nearest under the Euclidean distance).
    target_mask : (n, k) float, 0 where a class is too small to provide ``k`` targets.
    impostors : (n, m) int32 impostor candidates (differently-labelled samples), or None, in which
        case losses consider every differently-labelled sample (exact).
    impostor_mask : (n, m) float or None.
    centroids : (c * n_centroids, d) class centroids (k-means per class) or None.
    centroid_labels : (c * n_centroids,) int32 class code of each centroid, or None.
    centroid_mask : (c * n_centroids,) float, 0 for centroids a small class cannot provide.
    """

    X: Array
    y: Array
    sample_mask: Array
    class_counts: Array
    targets: Optional[Array] = None
    target_mask: Optional[Array] = None
    impostors: Optional[Array] = None
    impostor_mask: Optional[Array] = None
    centroids: Optional[Array] = None
    centroid_labels: Optional[Array] = None
    centroid_mask: Optional[Array] = None

    @property
    def n_classes(self) -> int:
        """Number of classes (the length of ``class_counts``)."""
        return self.class_counts.shape[0]

    @property
    def n_valid(self):
        """Number of real (unpadded) samples: the sum of ``sample_mask``."""
        return jnp.sum(self.sample_mask)


class PairsProblem(NamedTuple):
    """Weakly supervised data: pairs of rows of ``X`` labelled similar or dissimilar.

    Attributes
    ----------
    X : (n, d) float array.
    a, b : (p,) int32 row indices of the two members of each pair.
    labels : (p,) float, +1 for a similar pair and -1 for a dissimilar one (the library's one
        convention for pair labels); 0 for padding pairs.
    pair_mask : (p,) float, 0 for padding pairs.

    ``similar`` and ``dissimilar`` are 0/1 flags derived from ``labels`` (``labels > 0`` and
    ``labels < 0``; both 0 on padding): the one way the losses turn the labels into weights.
    ``similar`` was the field that held the pair supervision, as 0/1 flags, before ``labels``
    replaced it; as a derived property it keeps that meaning.
    """

    X: Array
    a: Array
    b: Array
    labels: Array
    pair_mask: Array

    @property
    def similar(self):
        """(p,) 1 for a similar pair, 0 for a dissimilar or padding pair (``labels > 0``)."""
        return (self.labels > 0).astype(self.labels.dtype)

    @property
    def dissimilar(self):
        """(p,) 1 for a dissimilar pair, 0 for a similar or padding pair (``labels < 0``)."""
        return (self.labels < 0).astype(self.labels.dtype)


def _float_dtype():
    return jnp.result_type(float)


def target_neighbors(X: np.ndarray, codes: np.ndarray, k: int, *, warn: bool = True):
    """The ``k`` nearest same-class neighbours of every row (Euclidean, self excluded).

    Returns ``(targets, mask)`` of shape ``(n, k)``; a class with ``n_c <= k`` samples gives its
    members ``n_c - 1`` targets and the remaining slots point at the row itself with mask 0.
    The search is :func:`jaxdml.neighbors.same_class_neighbors` (exact, memory-bounded, on the host
    or, above :data:`jaxdml.neighbors.DEVICE_SEARCH_ABOVE` rows, on the device; ties by lowest index).
    """
    small = [(int(c), int(np.sum(codes == c))) for c in np.unique(codes) if np.sum(codes == c) - 1 < k]
    targets, mask = same_class_neighbors(X, codes, k)
    if small and warn:
        _warn(
            f"{len(small)} class(es) have too few samples for n_neighbors={k} target neighbours "
            f"(class code, size: {small[:5]}); their samples use fewer target neighbours.",
            UserWarning
        )
    return targets, mask


def impostor_candidates(X: np.ndarray, codes: np.ndarray, m: int, L: np.ndarray | None = None):
    """The ``m`` nearest differently-labelled rows of every row, under ``L`` (default identity).

    Returns ``(impostors, mask)`` of shape ``(n, m)``
    (:func:`jaxdml.neighbors.other_class_neighbors`).
    """
    return other_class_neighbors(X, codes, m, L=L)


def class_centroids(X: np.ndarray, codes: np.ndarray, n_classes: int, n_centroids: int, random_state=None):
    """k-means centroids per class (``n_centroids`` each), with labels and a validity mask."""
    from sklearn.cluster import KMeans

    d = X.shape[1]
    C = np.zeros((n_classes * n_centroids, d))
    lab = np.repeat(np.arange(n_classes, dtype=np.int32), n_centroids)
    mask = np.zeros(n_classes * n_centroids, dtype=np.float32)
    for c in range(n_classes):
        Xc = X[codes == c]
        kc = min(n_centroids, len(Xc))
        if kc == 1:
            C[c * n_centroids] = Xc.mean(axis=0)
        else:
            km = KMeans(n_clusters=kc, n_init=3, random_state=random_state).fit(Xc)
            C[c * n_centroids : c * n_centroids + kc] = km.cluster_centers_
        mask[c * n_centroids : c * n_centroids + kc] = 1.0
    return C, lab, mask


def _device(a, dtype=None):
    """A device array from host data, cast on the host to JAX's (canonical) ``dtype``.

    ``jnp.asarray`` compiles a small program per shape and dtype (a cast, or staging the array);
    a NumPy cast and ``jax.device_put`` compile nothing, so the first fit of a process pays less.
    """
    a = np.asarray(a)
    return jax.device_put(a.astype(jax.dtypes.canonicalize_dtype(a.dtype if dtype is None else dtype), copy=False))


def make_problem(
    X,
    y,
    *,
    n_neighbors: int | None = 3,
    n_impostors: int | None = None,
    n_centroids: int | None = None,
    pad_to: int | None = None,
    random_state=None,
    dtype=None,
    warn: bool = True,
    targets=None,
    validate: bool = True,
) -> LabeledProblem:
    """Build a :class:`LabeledProblem` from a design matrix and labels.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), any hashable labels (strings work).
    n_neighbors : int or None, default=3
        Number of target neighbours per sample (same class, Euclidean). None skips them.
    n_impostors : int or None, default=None
        None: losses consider every differently-labelled sample as a potential impostor (exact).
        An int ``m``: keep the ``m`` nearest differently-labelled samples as candidates (an index
        array), for large data.
    n_centroids : int or None, default=None
        If set, k-means centroids per class are added (used by NCMC).
    pad_to : int or None, default=None
        Pad the rows up to this many (``sample_mask`` = 0 on padding). None keeps ``n_samples``.
    random_state : int, RandomState or None
        Seeds k-means.
    dtype : floating dtype, default: JAX's default float (float32 unless x64 is enabled).
    targets : (n_samples, k) int array, optional
        Precomputed target neighbours (e.g. nearest in a kernel feature space); overrides the
        Euclidean search. Entries must be same-class row indices other than the row itself.
    validate : bool, default=True
        Check ``X`` and ``y`` (:func:`jaxdml._validation.check_data`). ``False`` trusts the caller:
        ``X`` a finite float64 (n_samples, n_features) array and ``y`` a matching 1-D label array
        (what :func:`jaxdml.fit` passes after its own, single validation).

    Returns
    -------
    LabeledProblem

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.random.default_rng(0).normal(size=(20, 3)); y = np.arange(20) % 2
    >>> prob = jaxdml.make_problem(X, y, n_neighbors=3)
    >>> prob.targets.shape
    (20, 3)
    """
    if validate:
        X, y = check_data(X, y, owner="make_problem")
    classes, codes = encode_labels(y)
    n, d = X.shape
    n_classes = len(classes)
    pad_to = n if pad_to is None else int(pad_to)
    if pad_to < n:
        raise ValueError(f"make_problem: pad_to={pad_to} is smaller than n_samples={n}.")
    dtype = _float_dtype() if dtype is None else dtype

    def pad_rows(a, fill):
        if pad_to == n:
            return a
        extra = np.full((pad_to - n,) + a.shape[1:], fill, dtype=a.dtype)
        return np.concatenate([a, extra], axis=0)

    def pad_index(a):
        if pad_to == n:
            return a
        k = a.shape[1]
        extra = np.tile(np.arange(n, pad_to, dtype=np.int32)[:, None], (1, k))
        return np.concatenate([a, extra], axis=0)

    fields = dict(
        X=_device(pad_rows(X, 0.0), dtype=dtype),
        y=_device(pad_rows(codes, 0)),
        sample_mask=_device(pad_rows(np.ones(n, np.float32), 0.0), dtype=dtype),
        class_counts=_device(np.bincount(codes, minlength=n_classes), dtype=dtype),
    )
    if targets is not None:
        t = np.asarray(targets)
        if t.ndim != 2 or t.shape[0] != n or t.dtype.kind not in "iu":
            raise ValueError(f"make_problem: targets must be an int array of shape ({n}, k); got {t.shape}.")
        if t.size and (t.min() < 0 or t.max() >= n):
            raise ValueError(f"make_problem: targets must index rows 0..{n - 1}.")
        tm = ((codes[t] == codes[:, None]) & (t != np.arange(n)[:, None])).astype(np.float32)
        fields["targets"] = _device(pad_index(t.astype(np.int32)))
        fields["target_mask"] = _device(pad_rows(tm, 0.0), dtype=dtype)
    elif n_neighbors is not None:
        t, tm = target_neighbors(X, codes, int(n_neighbors), warn=warn)
        fields["targets"] = _device(pad_index(t))
        fields["target_mask"] = _device(pad_rows(tm, 0.0), dtype=dtype)
    if n_impostors is not None:
        im, imm = impostor_candidates(X, codes, int(n_impostors))
        fields["impostors"] = _device(pad_index(im))
        fields["impostor_mask"] = _device(pad_rows(imm, 0.0), dtype=dtype)
    if n_centroids is not None:
        C, lab, cm = class_centroids(X, codes, n_classes, int(n_centroids), random_state)
        fields["centroids"] = _device(C, dtype=dtype)
        fields["centroid_labels"] = _device(lab)
        fields["centroid_mask"] = _device(cm, dtype=dtype)
    return LabeledProblem(**fields)


def labelled_pairs(y, *, n_similar=None, n_dissimilar=None, random_state=None):
    """Sample similar (same label) and dissimilar (different label) index pairs, with pair labels.

    ``None`` takes every pair (``i < j``). Returns ``(a, b, labels)`` as NumPy arrays: ``a``, ``b``
    int32 row indices (similar pairs first) and ``labels`` int64, +1 for a similar pair and -1 for a
    dissimilar one.
    """
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    y = np.asarray(y)
    n = y.shape[0]
    iu, ju = np.triu_indices(n, k=1)
    same = y[iu] == y[ju]
    out = []
    for want, sel, label in ((n_similar, same, 1), (n_dissimilar, ~same, -1)):
        a, b = iu[sel], ju[sel]
        if want is not None and want < a.size:
            pick = rng.choice(a.size, size=int(want), replace=False)
            a, b = a[pick], b[pick]
        out.append((a, b, np.full(a.size, label, dtype=np.int64)))
    a = np.concatenate([out[0][0], out[1][0]]).astype(np.int32)
    b = np.concatenate([out[0][1], out[1][1]]).astype(np.int32)
    labels = np.concatenate([out[0][2], out[1][2]])
    return a, b, labels


def pairs_from_labels(y, *, n_similar=None, n_dissimilar=None, random_state=None):
    """Sample similar (same label) and dissimilar (different label) index pairs.

    ``None`` takes every pair (``i < j``). Returns ``(a, b, similar)`` as NumPy arrays, ``similar``
    float 0/1 flags (1 similar, 0 dissimilar): the flags of :func:`labelled_pairs`'s +1/-1
    labels (``labels > 0``), the same pairs. Either form can be given to ``jaxdml.fit(...,
    similar=)`` and :func:`make_pairs_problem`.
    """
    a, b, labels = labelled_pairs(y, n_similar=n_similar, n_dissimilar=n_dissimilar, random_state=random_state)
    return a, b, (labels > 0).astype(np.float64)


def make_pairs_problem(X, pairs, similar, *, pad_to: int | None = None, dtype=None,
                       owner: str = "make_pairs_problem", validate: bool = True) -> PairsProblem:
    """Build a :class:`PairsProblem` from ``X``, an ``(p, 2)`` index array and pair labels.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    pairs : array-like of shape (n_pairs, 2)
        Row indices of ``X``: integers, or floats that hold whole numbers (the rule of
        :func:`jaxdml._validation.index_tuples`, the one check of index tuples).
    similar : array-like of shape (n_pairs,)
        Pair labels: +1/-1, 1/0 flags or booleans (+1, 1, True: similar), converted to +1/-1 by
        :func:`jaxdml._validation.check_pair_labels` (the one conversion); anything else, or a mix of
        -1 and 0, raises a ``ValueError``.
    pad_to : int or None, default=None
        Pad the pairs up to this many (label 0 and ``pair_mask`` 0 there). None keeps ``n_pairs``.
    dtype : floating dtype, default: JAX's default float.
    owner : str, default="make_pairs_problem"
        The caller named in messages.
    validate : bool, default=True
        Check ``X``, ``pairs`` and ``similar``. ``False`` trusts the caller (the library's solve steps,
        after their own door): ``X`` a finite float array, ``pairs`` an int array of valid row indices
        and ``similar`` +1/-1 labels.

    Returns
    -------
    PairsProblem
        ``labels`` hold +1/-1 (0 on padding); ``similar`` is their 0/1 view.

    Examples
    --------
    >>> import numpy as np, jaxdml
    >>> X = np.arange(8.0).reshape(4, 2)
    >>> prob = jaxdml.make_pairs_problem(X, [[0, 1], [2, 3]], [1, 0], pad_to=3)
    >>> np.asarray(prob.labels).tolist(), np.asarray(prob.similar).tolist()
    ([1.0, -1.0, 0.0], [1.0, 0.0, 0.0])
    """
    if validate:
        X, _ = check_data(X, None, owner=owner)
        pairs = index_tuples(pairs, owner, arity=2, n_rows=X.shape[0], what="pair", name="pairs")
        similar = check_pair_labels(similar, pairs.shape[0], owner, name="similar")
    pairs = np.asarray(pairs)
    labels = np.asarray(similar)
    p = pairs.shape[0]
    pad_to = p if pad_to is None else int(pad_to)
    if pad_to < p:
        raise ValueError(f"{owner}: pad_to={pad_to} is smaller than the number of pairs ({p}).")
    dtype = _float_dtype() if dtype is None else dtype
    pad = pad_to - p
    a = np.concatenate([pairs[:, 0], np.zeros(pad, np.int64)]).astype(np.int32)
    b = np.concatenate([pairs[:, 1], np.zeros(pad, np.int64)]).astype(np.int32)
    return PairsProblem(
        X=_device(X, dtype=dtype),
        a=_device(a),
        b=_device(b),
        labels=_device(np.concatenate([labels.astype(np.float64), np.zeros(pad)]), dtype=dtype),
        pair_mask=_device(np.concatenate([np.ones(p), np.zeros(pad)]), dtype=dtype),
    )
