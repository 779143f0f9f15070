"""Cross-batch memory: a fixed-size queue of earlier batches' embeddings, the references of a loss.

Wang et al. (XBM) observe that embeddings drift slowly once training settles, so that the embeddings of
earlier batches can serve as references: a batch of B rows is then compared with the S rows of a memory,
not only with its own B - 1. The memory here is a value of the training state (a :class:`Memory`, a pytree
of fixed shapes), and the functions are pure, so a training step stays one ``jax.jit``:

* :func:`memory_init` - an empty memory of ``size`` slots;
* :func:`memory_update` - the memory with a batch enqueued (first in, first out: the oldest slots are
  overwritten once the queue has wrapped around);
* :func:`memory_loss` - the loss of a batch against the memory, and the new memory: the batch is enqueued
  first, then its rows are the queries and the memory's filled slots the references, the pair of a row with
  its own copy in the memory left out (the semantics of pytorch-metric-learning's ``CrossBatchMemory``).

The memory holds constants (``jax.lax.stop_gradient``): gradients reach the batch's rows, not the queue.

>>> import jax, jax.numpy as jnp
>>> from jaxdml.losses import deep
>>> mem = deep.memory_init(64, 8)
>>> Z = jax.random.normal(jax.random.key(0), (16, 8)); y = jnp.arange(16) % 4
>>> value, mem = deep.memory_loss(deep.contrastive, Z, y, mem)
>>> int(mem.count), int(mem.position)
(16, 16)

References
----------
X. Wang, H. Zhang, W. Huang, M. R. Scott. Cross-Batch Memory for Embedding Learning. CVPR 2020.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._base import check_batch, check_mask

__all__ = ["Memory", "memory_init", "memory_loss", "memory_update"]


class Memory(NamedTuple):
    """A cross-batch memory: a queue of ``size`` embedding slots (a pytree: keep it in the training state).

    Attributes
    ----------
    embeddings : (size, d) float array
        The enqueued rows (zeros in empty slots).
    labels : (size,) int32 array
    filled : (size,) bool array
        True for a slot that holds a row (the references' mask).
    position : () int32 array
        The next slot to write; it wraps around to 0 after ``size - 1``.
    """

    embeddings: jax.Array
    labels: jax.Array
    filled: jax.Array
    position: jax.Array

    @property
    def size(self) -> int:
        """The number of slots."""
        return self.embeddings.shape[0]

    @property
    def count(self):
        """The number of filled slots (a traced int inside ``jax.jit``)."""
        return jnp.sum(self.filled)


def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{name} must be a positive int; got {v!r}.")
    return int(v)


def memory_init(size: int, dim: int, *, dtype=None) -> Memory:
    """An empty memory of ``size`` slots for ``dim``-dimensional embeddings.

    Parameters
    ----------
    size : int
        The number of slots (at least the batch size: a batch must fit in the queue).
    dim : int
        The embeddings' dimension.
    dtype : float dtype, optional
        Default: JAX's default float (float32, or float64 with x64 enabled).

    Returns
    -------
    Memory
    """
    size, dim = _positive_int("size", size), _positive_int("dim", dim)
    dtype = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a float dtype; got {dtype}.")
    return Memory(jnp.zeros((size, dim), dtype), jnp.zeros(size, jnp.int32), jnp.zeros(size, bool),
                  jnp.zeros((), jnp.int32))


def _check_memory(memory):
    if not isinstance(memory, Memory):
        raise TypeError(f"memory must be a Memory (from memory_init); got {type(memory).__name__}.")
    return memory


def _slots(memory: Memory, enqueue):
    """The slot of each row to enqueue (``enqueue`` True), in row order from ``position`` on, wrapping
    around; ``size`` (out of range: dropped by the scatter) for the other rows."""
    rank = jnp.cumsum(enqueue.astype(jnp.int32)) - 1
    return jnp.where(enqueue, (memory.position + rank) % memory.size, memory.size)


def _enqueue(memory: Memory, Z, y, enqueue):
    """``(new memory, slots)``: the rows of ``Z`` with ``enqueue`` True written to the queue."""
    slots = _slots(memory, enqueue)
    Z = jax.lax.stop_gradient(Z).astype(memory.embeddings.dtype)
    new = Memory(memory.embeddings.at[slots].set(Z, mode="drop"),
                 memory.labels.at[slots].set(y.astype(jnp.int32), mode="drop"),
                 memory.filled.at[slots].set(True, mode="drop"),
                 ((memory.position + jnp.sum(enqueue)) % memory.size).astype(jnp.int32))
    return new, slots


def _check_rows(memory, embeddings, labels, mask):
    """The batch checked against the memory: (B, d) rows, int labels, (B,) mask; B at most the size."""
    if labels is not None and not isinstance(labels, jax.core.Tracer):
        kind = np.asarray(labels).dtype.kind
        if kind not in "iu":
            raise TypeError(f"labels must be integer class codes (the memory keeps them across batches, so they "
                            f"cannot be re-encoded per batch); got dtype {np.asarray(labels).dtype}.")
    Z, y, valid = check_batch(embeddings, labels, mask, encode_labels=False)
    if Z.shape[1] != memory.embeddings.shape[1]:
        raise ValueError(f"embeddings have {Z.shape[1]} columns and the memory {memory.embeddings.shape[1]}; "
                         "memory_init(size, dim) takes the embeddings' dimension.")
    if Z.shape[0] > memory.size:
        raise ValueError(f"a batch of {Z.shape[0]} rows does not fit in a memory of {memory.size} slots; make the "
                         "memory at least as large as the batch.")
    return Z, y, valid


def memory_update(memory: Memory, embeddings, labels, mask=None) -> Memory:
    """The memory with the batch's real rows enqueued, in row order from ``memory.position`` on.

    Once the queue is full the oldest rows are overwritten (first in, first out). The rows are stored
    without gradient.

    Parameters
    ----------
    memory : Memory
    embeddings : (B, d) array
        ``B`` at most ``memory.size``.
    labels : (B,) int array
        Integer class codes (the memory keeps them across batches, so they are not re-encoded).
    mask : (B,) bool array, optional
        False for padded rows (not enqueued; they take no slot).

    Returns
    -------
    Memory
    """
    memory = _check_memory(memory)
    Z, y, valid = _check_rows(memory, embeddings, labels, mask)
    return _enqueue(memory, Z, y, valid)[0]


def memory_loss(loss, embeddings, labels, memory: Memory, *, mask=None, enqueue_mask=None, **loss_kwargs):
    """The loss of a batch against a cross-batch memory, and the memory with the batch enqueued.

    The batch is enqueued first (:func:`memory_update`); then ``loss`` is called with the batch's rows as
    queries and the memory's filled slots as references (``ref_emb``, ``ref_labels``, and a (B, size)
    ``ref_mask`` that leaves out each row's pair with its own new slot, and the empty slots). So the first
    batch is compared with itself (less the self-pairs), and later ones with the earlier batches too.

    With ``enqueue_mask`` the batch is split: its rows with ``enqueue_mask`` True only go to the memory,
    the others are only queries (and nothing is left out: the queries are not in the memory).

    Parameters
    ----------
    loss : callable
        A pair- or triplet-based loss of :mod:`jaxdml.losses.deep` (or any function with its signature and
        the ``ref_emb``, ``ref_labels``, ``ref_mask`` arguments), e.g. ``deep.contrastive`` or
        ``functools.partial(deep.triplet_margin, margin=0.1)``.
    embeddings : (B, d) array
    labels : (B,) int array
    memory : Memory
    mask : (B,) bool array, optional
        False for padded rows (neither queries nor enqueued).
    enqueue_mask : (B,) bool array, optional
        True for the rows that only go to the memory.
    **loss_kwargs
        Passed on to ``loss`` (``miner=``, ``distance=``, ``reduction=``, ...): a miner is run on the
        batch against the memory. A triplet loss without a miner takes every (B, size, size) triplet:
        give it a miner (:func:`~jaxdml.losses.deep.batch_hard`, :func:`~jaxdml.losses.deep.semi_hard`)
        for a large memory.

    Returns
    -------
    (value, Memory)
        The loss (a scalar, or the terms with ``reduction="none"``) and the new memory; under
        ``jax.grad`` use ``has_aux=True``.

    Examples
    --------
    A training step with the memory in its state::

        def step(params, opt_state, memory, x, y):
            def objective(p):
                return deep.memory_loss(deep.contrastive, model(p, x), y, memory)
            (value, memory), grads = jax.value_and_grad(objective, has_aux=True)(params)
            updates, opt_state = optimizer.update(grads, opt_state)
            return optax.apply_updates(params, updates), opt_state, memory, value
    """
    memory = _check_memory(memory)
    if not callable(loss):
        raise TypeError(f"loss must be a loss function (e.g. deep.contrastive); got {type(loss).__name__}.")
    for key in ("ref_emb", "ref_labels", "ref_mask"):
        if key in loss_kwargs:
            raise ValueError(f"memory_loss sets {key} itself (the memory is the references); do not pass it.")
    Z, y, valid = _check_rows(memory, embeddings, labels, mask)
    if enqueue_mask is None:
        new, slots = _enqueue(memory, Z, y, valid)
        own = slots[:, None] == jnp.arange(memory.size)[None, :]  # each row's own new slot
        queries = valid
    else:
        only = check_mask(enqueue_mask, Z.shape[0], "enqueue_mask")
        new, _ = _enqueue(memory, Z, y, valid & only)
        own = jnp.zeros((Z.shape[0], memory.size), bool)
        queries = valid & ~only
    ref_mask = new.filled[None, :] & ~own
    value = loss(Z, y, mask=queries, ref_emb=new.embeddings, ref_labels=new.labels, ref_mask=ref_mask,
                 **loss_kwargs)
    return value, new
