"""Weak supervision: pairs, triplets, quadruplets, chunklets, constraint generators."""
