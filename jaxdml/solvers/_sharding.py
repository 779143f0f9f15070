"""Data parallelism of the gradient loop: a 1-D device mesh and the objective split over it."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["make_mesh", "data_parallel_objective"]


def make_mesh(devices=None):
    """A 1-D data-parallel mesh (axis ``"data"``) over ``devices`` (default: all visible)."""
    from jax.sharding import AxisType

    devices = list(jax.devices() if devices is None else devices)
    return jax.make_mesh((len(devices),), ("data",), axis_types=(AxisType.Auto,), devices=devices)


def data_parallel_objective(loss_fn, static_kw, mesh, with_candidates: bool):
    """``obj(params, problem, hyper, anchors, candidates)``: the mean loss over valid anchors.

    Without a mesh the loss is called directly. With a mesh, the anchor rows are split across the
    devices (``shard_map``); each device evaluates its share against the replicated data and the
    parameters, and the weighted partial means are combined with ``psum``. Differentiating the
    whole function gives the all-reduced gradient, so parameters stay replicated.
    """

    def plain(params, problem, hyper, anchors, candidates):
        kw = {}
        if anchors is not None:
            kw["anchors"] = anchors
        if with_candidates:
            kw["candidates"] = candidates
        return loss_fn(params, problem, **static_kw, **hyper, **kw)

    if mesh is None:
        return plain
    from jax.sharding import PartitionSpec as P

    axis = mesh.axis_names[0]

    def local(params, problem, hyper, anchors, candidates):
        w = jnp.sum(problem.sample_mask[anchors])
        v = plain(params, problem, hyper, anchors, candidates)
        total = jax.lax.psum(jnp.where(w > 0, v * w, 0.0), axis)
        return total / jnp.maximum(jax.lax.psum(w, axis), 1.0)

    cand_spec = P() if with_candidates else None
    sharded = jax.shard_map(local, mesh=mesh, in_specs=(P(), P(), P(), P(axis), cand_spec), out_specs=P())

    def obj(params, problem, hyper, anchors, candidates):
        if anchors is None:
            anchors = jnp.arange(problem.X.shape[0], dtype=jnp.int32)
        return sharded(params, problem, hyper, anchors, candidates)

    return obj
