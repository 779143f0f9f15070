"""Deep metric learning: losses, miners and index tuples on a batch of embeddings.

Every function here is pure and works on a batch ``(embeddings, labels)``: ``embeddings`` (B, d)
from any model (plain JAX, flax, equinox, haiku: only the array matters), ``labels`` (B,) integer
classes. Losses return a scalar (``reduction="mean"``, the paper's normalisation; ``"sum"``;
``"avg_non_zero"``, the mean of the positive terms; a reducer such as :func:`threshold`,
:func:`divisor`, :func:`per_anchor` or :func:`class_weighted`; ``"none"`` for the per-pair / per-triplet /
per-anchor terms), and are ``jax.jit``-, ``jax.grad``- and
``jax.vmap``-able. They compose by weight with each other and with the Mahalanobis losses of
:mod:`jaxdml.losses` (a sum of functions is a loss).

Common keyword arguments:

``distance``
    ``"euclidean"`` :math:`\\|a-b\\|`, ``"sq_euclidean"`` :math:`\\|a-b\\|^2`, ``"cosine"``
    :math:`\\hat a^\\top \\hat b` or ``"dot"`` :math:`a^\\top b` (the last two are similarities:
    larger is closer). Each loss has the default of its paper.
``L``
    A (k, d) learned linear map applied to the rows first (``euclidean`` is then the Mahalanobis
    distance under :math:`M = L^\\top L`); gradients reach it.
``mask``
    (B,) bool, False for padded rows: a padded row is never an anchor, a positive or a negative, so a
    batch padded to a fixed size gives the value of its real rows.
``pairs`` / ``triplets`` / ``miner``
    The tuples a loss uses: all of the batch by default, or a miner's output (:class:`Pairs`,
    :class:`Triplets`), or a miner called on the batch.
``ref_emb`` / ``ref_labels`` / ``ref_mask``
    References, for the pair- and triplet-based losses and the miners: the pairs are then (batch row,
    reference row), every one of them, with no self-pair left out (``ref_mask``: (R,) False for empty
    reference rows, or (B, R) False for pairs that do not exist); labels of queries and references are
    encoded jointly. Mined tuples: anchors index the batch, the other indices the references. Taken by
    the losses :func:`contrastive`, :func:`triplet_margin`, :func:`lifted_structure`,
    :func:`generalized_lifted_structure`, :func:`multi_similarity`, :func:`circle`, :func:`margin_loss`,
    :func:`ntxent`, :func:`infonce`, :func:`npair`, :func:`supervised_contrastive`, :func:`tuplet_margin`,
    :func:`angular_loss`, :func:`nca` and :func:`lmnn`, and by every miner (:func:`batch_hard`,
    :func:`batch_all`, :func:`semi_hard`, :func:`multi_similarity_pairs`, :func:`pair_margin`,
    :func:`triplet_margin_miner`, :func:`batch_easy_hard`, :func:`distance_weighted` and
    :func:`distance_weighted_probabilities`). Not by the losses that are not pair-based: the proxy and
    classifier losses, :func:`instance_loss`, :func:`fast_ap`, :func:`smooth_ap`, :func:`vicreg` (whose
    ``ref_emb`` is the second view). A cross-batch memory (:func:`memory_init`, :func:`memory_update`,
    :func:`memory_loss`) keeps earlier batches' rows as the references, in the training state.

Several devices: :func:`data_parallel` compiles a training step with its batch split by rows across
devices (``jax.sharding``: a one-axis ``Mesh``, the batch ``NamedSharding(mesh, P("batch"))``, the
parameters and a memory replicated). Each device embeds its rows; every loss and miner still sees the
whole batch's pairs (XLA gathers the embeddings), so the step equals the single-device step up to the
order of floating-point sums.

Degenerate batches have defined values, never NaN: a batch of one class (no negatives), a class with
one row (no positive), a batch with no valid tuple (the mean of no terms is 0).

>>> import jax, jax.numpy as jnp
>>> from jaxdml.losses import deep
>>> Z = jax.random.normal(jax.random.key(0), (32, 8)); y = jnp.arange(32) % 4
>>> loss = deep.triplet_margin(Z, y, triplets=deep.batch_hard(Z, y), margin=0.2)
>>> both = loss + 0.5 * deep.multi_similarity(Z, y, miner=deep.multi_similarity_pairs)
>>> bool(jnp.isfinite(both))
True
"""

from ._base import DISTANCES, pairwise
from ._centers import large_margin_softmax, soft_triple, subcenter_arcface
from ._classic import lmnn, nca
from ._infonce import infonce, npair, ntxent, supervised_contrastive
from ._memory import Memory, memory_init, memory_loss, memory_update
from ._miners import batch_all, batch_hard, multi_similarity_pairs, pair_margin, semi_hard
from ._mining import batch_easy_hard, distance_weighted, distance_weighted_probabilities, triplet_margin_miner
from ._parallel import data_parallel
from ._pairs import circle, contrastive, lifted_structure, margin_loss, multi_similarity
from ._proxies import proxy_anchor, proxy_nca
from ._ranking import fast_ap, smooth_ap
from ._reducers import avg_non_zero, class_weighted, divisor, per_anchor, threshold
from ._regularizers import center_invariant, lp_regularizer, regular_face, zero_mean
from ._samplers import PKSampler
from ._selfsup import vicreg
from ._softmax import angular_margin, arcface, cosface, sphereface
from ._structured import angular_loss, generalized_lifted_structure, instance_loss, tuplet_margin
from ._triplets import triplet_margin
from ._tuples import Pairs, Triplets, all_pairs, all_triplets

__all__ = [
    # losses
    "contrastive", "triplet_margin", "lifted_structure", "ntxent", "infonce", "npair", "supervised_contrastive",
    "multi_similarity", "circle", "margin_loss", "proxy_nca", "proxy_anchor", "angular_margin", "arcface",
    "cosface", "sphereface", "nca", "lmnn", "generalized_lifted_structure", "tuplet_margin", "angular_loss",
    "instance_loss", "fast_ap", "smooth_ap", "subcenter_arcface", "soft_triple", "large_margin_softmax", "vicreg",
    # regularizers
    "lp_regularizer", "zero_mean", "center_invariant", "regular_face",
    # miners and tuples
    "batch_hard", "batch_all", "semi_hard", "multi_similarity_pairs", "pair_margin", "triplet_margin_miner",
    "batch_easy_hard", "distance_weighted", "distance_weighted_probabilities", "Pairs", "Triplets", "all_pairs",
    "all_triplets",
    # distances
    "pairwise", "DISTANCES",
    # batch sampling, reducers
    "PKSampler", "avg_non_zero", "threshold", "divisor", "per_anchor", "class_weighted",
    # cross-batch memory
    "Memory", "memory_init", "memory_update", "memory_loss",
    # several devices
    "data_parallel",
]
