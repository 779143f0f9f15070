"""Kernels for kernel distance metric learning."""

from ._kernels import KERNELS, check_kernel_params, feature_space_sq_dists, kernel_matrix
from ._landmarks import kmeanspp_landmarks, nystrom_features, nystrom_map

__all__ = ["KERNELS", "kernel_matrix", "check_kernel_params", "feature_space_sq_dists", "kmeanspp_landmarks",
           "nystrom_map", "nystrom_features"]
