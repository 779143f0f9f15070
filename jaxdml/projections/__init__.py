"""Projection operators (PSD cone, affine half-spaces, their intersection)."""

from ._projections import projection_halfspace, projection_intersection, projection_psd

__all__ = ["projection_psd", "projection_halfspace", "projection_intersection"]
