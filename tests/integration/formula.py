"""The README's formulas in numpy, written independently of the C++ code."""
import numpy as np


def a_values(step, elements, seed, dtype):
    """Kernel A: u = (i * 2654435761) ^ (s * 2654435769 + seed), x = (u >> 8) * 2^-24 (uint32 wrap)."""
    i = np.arange(elements, dtype=np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    u = ((i * np.uint64(2654435761)) & mask) ^ (
        (np.uint64(step & 0xFFFFFFFF) * np.uint64(2654435769) + np.uint64(seed)) & mask)
    return ((u >> np.uint64(8)).astype(np.float64) * 2.0 ** -24).astype(dtype)


def y_values(step, elements, seed, alpha, dtype):
    """Kernel B: y = alpha * x, one rounding in the tensor's type."""
    return (dtype(alpha) * a_values(step, elements, seed, dtype)).astype(dtype)
