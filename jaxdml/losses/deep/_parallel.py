"""Data parallelism for deep metric learning: a training step whose batch is split by rows across devices.

A deep metric loss couples the rows of a batch (pairs, triplets, a miner's hardest negative), so a
data-parallel step must not compute one loss per device on that device's rows: each loss and miner must
see every pair of the whole batch, as pytorch-metric-learning's distributed wrapper gathers the
embeddings of all processes. :func:`data_parallel` gets this from ``jax.sharding``: the batch's arrays
are placed on a one-axis :class:`~jax.sharding.Mesh`, split by rows (``NamedSharding(mesh, P("batch"))``),
the rest of the state (parameters, optimizer state, a :class:`~jaxdml.losses.deep.Memory`) replicated,
and the step is ``jax.jit``-compiled once for that placement. Each device computes the embeddings of its
rows; the loss is the same program as on one device, so XLA gathers the embeddings (an all-gather) where
the loss needs them, and the gradient of the parameters is summed across devices (a reduce). The result
is the single-device step's, up to the order of floating-point sums.
"""

from __future__ import annotations

import numbers

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

__all__ = ["data_parallel"]


def _argnums(batch_argnums):
    nums = (batch_argnums,) if isinstance(batch_argnums, numbers.Integral) else tuple(batch_argnums)
    if not nums or any(isinstance(i, bool) or not isinstance(i, numbers.Integral) or i < 0 for i in nums):
        raise ValueError(f"batch_argnums must be non-negative positions of the step's batch arguments; got "
                         f"{batch_argnums!r}.")
    return frozenset(int(i) for i in nums)


def data_parallel(step, *, batch_argnums=(1,), devices=None, axis: str = "batch"):
    """``step`` compiled for several devices, its batch split by rows across them.

    Parameters
    ----------
    step : callable
        A training step written for one device, e.g. ``step(params, x, y, opt_state, memory) -> (...)``,
        whose losses and miners take the whole batch (see :mod:`jaxdml.losses.deep`).
    batch_argnums : int or sequence of int, default=(1,)
        The positions of the batch's arguments (arrays, or pytrees of arrays, whose first axis is the
        batch's rows: inputs, labels, a row mask). Their rows are split across the devices; every other
        argument is replicated on each device.
    devices : sequence of jax.Device, optional
        Default: every device of the default backend (``jax.devices()``).
    axis : str, default="batch"
        The mesh axis' name.

    Returns
    -------
    callable
        ``run(*args)``, with the signature and results of ``step``. Each batch's row count must be a
        multiple of the number of devices (pad it and pass a row ``mask`` otherwise). ``run.mesh`` is the
        mesh and ``run.shard_batch(x)`` places an array as the batch is placed (e.g. to prefetch).

    Notes
    -----
    The step is one ``jax.jit`` program over the global batch: a loss's value and gradients are the
    single-device step's (every pair of the whole batch, a miner's choices among all rows), computed with
    the embeddings of each device's rows and gathered where the loss needs them. The speed-up is in the
    model's forward and backward passes over the rows; the loss's own (B, B) work is not split.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from jaxdml.losses import deep
    >>> def step(W, x, y):
    ...     loss, g = jax.value_and_grad(lambda W: deep.triplet_margin(x @ W, y, miner=deep.batch_hard))(W)
    ...     return W - 0.1 * g, loss
    >>> run = deep.data_parallel(step, batch_argnums=(1, 2))
    >>> x = jax.random.normal(jax.random.key(0), (8 * jax.device_count(), 5))
    >>> W, loss = run(jnp.eye(5, 3), x, jnp.arange(x.shape[0]) % 4)
    >>> W.shape
    (5, 3)
    """
    if not callable(step):
        raise TypeError(f"step must be a function (a training step); got {type(step).__name__}.")
    nums = _argnums(batch_argnums)
    devices = list(jax.devices() if devices is None else devices)
    if not devices or not all(isinstance(d, jax.Device) for d in devices):
        raise ValueError("devices must be a non-empty sequence of jax devices (e.g. jax.devices()).")
    mesh = Mesh(np.array(devices), (axis,))
    rows, replicated = NamedSharding(mesh, P(axis)), NamedSharding(mesh, P())
    jitted = jax.jit(step)

    def shard_batch(tree):
        def put(a):
            a = a if isinstance(a, jax.Array) else np.asarray(a)
            if a.ndim < 1 or a.shape[0] % len(devices):
                raise ValueError(f"a batch argument of shape {a.shape} cannot be split by rows across "
                                 f"{len(devices)} devices: its row count must be a multiple of {len(devices)} "
                                 "(pad the batch and pass a row mask).")
            return jax.device_put(a, rows)

        return jax.tree_util.tree_map(put, tree)

    def run(*args):
        if max(nums) >= len(args):
            raise ValueError(f"batch_argnums {sorted(nums)} name arguments the step was not given ({len(args)} "
                             "arguments).")
        placed = [shard_batch(a) if i in nums else jax.device_put(a, replicated) for i, a in enumerate(args)]
        return jitted(*placed)

    run.mesh = mesh
    run.shard_batch = shard_batch
    return run
