"""docs/OUTPUT.md's formulas in numpy, written independently of the C++ code."""
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


def allreduce_sum_values(step, elements, seed, group_size, dtype):
    """An all-reduce's x: rank r of the group adds its share ((u >> 8) >> 9) + r, times 2^-24;
    the sum of the group's shares is exact (below 2^24 units of 2^-24) in float32 and float64."""
    bits = np.round(a_values(step, elements, seed, np.float64) * 2.0 ** 24).astype(np.uint64)
    units = np.zeros(elements, dtype=np.uint64)
    for r in range(group_size):
        units += (bits >> np.uint64(9)) + np.uint64(r)
    return (units.astype(np.float64) * 2.0 ** -24).astype(dtype)


def allreduce_y_values(step, elements, seed, alpha, group_size, dtype):
    """B on an all-reduce's sum: y = alpha * x, one rounding in the tensor's type."""
    x = allreduce_sum_values(step, elements, seed, group_size, dtype)
    return (dtype(alpha) * x).astype(dtype)


def relay_y_values(step, elements, seed, alpha, stage, dtype):
    """Stage k of a relay keeps y = alpha^k times A's output: k products y = alpha * x, each
    rounded in the tensor's type as its stage rounded it (exact when alpha is a power of two)."""
    y = a_values(step, elements, seed, dtype)
    for _ in range(stage):
        y = (dtype(alpha) * y).astype(dtype)
    return y


def relay_stage(row, group_size):
    """The stage whose row of /y this is: rows number the receiving stages 1 .. n-1 of each
    group, group by group."""
    return row % (group_size - 1) + 1


def consumer_rows(pattern, group_size, ranks):
    """How many rows /y and the mismatch counts have: one per pair; for a broadcast one per
    receiver (every rank of groups of one); for an all-reduce one per rank; for a relay one per
    receiving stage."""
    if pattern == "pairs":
        return max(1, ranks // 2)
    n = group_size or ranks
    if pattern == "allreduce" or n == 1:
        return ranks
    return ranks - ranks // n


def y_rows(pattern, step, pairs, elements, seed, alpha, group_size, dtype):
    """What every row of /y holds for `step` (pairs x elements), as OUTPUT.md gives it."""
    if pattern == "allreduce":
        row = allreduce_y_values(step, elements, seed, alpha, group_size, dtype)
        return np.tile(row, (pairs, 1))
    if pattern == "relay":
        return np.stack([relay_y_values(step, elements, seed, alpha, relay_stage(r, group_size),
                                        dtype) for r in range(pairs)])
    return np.tile(y_values(step, elements, seed, alpha, dtype), (pairs, 1))
