"""myop: the reference custom operator bundled with opdoctor.

Importing the package loads ``libmyop.so`` next to this file, which registers
``torch.ops.myop.weighted_sum(x1, x2, alpha) = alpha*x1 + (1-alpha)*x2`` (CPU and CUDA kernels).
"""

import os

import torch

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libmyop.so")
torch.ops.load_library(_LIB)


def weighted_sum(x1: torch.Tensor, x2: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha*x1 + (1-alpha)*x2, through the registered operator."""
    return torch.ops.myop.weighted_sum(x1, x2, alpha)
