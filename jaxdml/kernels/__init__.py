"""Kernels for kernel distance metric learning."""

from ._kernels import KERNELS, check_kernel_params, feature_space_sq_dists, kernel_matrix

__all__ = ["KERNELS", "kernel_matrix", "check_kernel_params", "feature_space_sq_dists"]
