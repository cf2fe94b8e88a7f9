"""The two-sided Mann-Whitney U test, standard library only (SciPy is not on every node).

The method follows scipy.stats.mannwhitneyu's default ("auto", SciPy 1.7 to 1.10), so the two
give the same p-values: the exact distribution of U when either sample has at most 8 values and
there are no ties; otherwise the normal approximation with the tie correction and a continuity
correction of 0.5.
"""
import math

# SciPy's cut-off: above it on both sides the normal approximation is close, and the exact
# count grows as n1 * n2 * (n1 * n2).
EXACT_MAX_SMALLER = 8


def ranks(values):
    """Ranks 1..n of the values, ties given the mean of the ranks they span; and the sizes of
    the groups of ties."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    tie_sizes = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2.0 + 1.0
        tie_sizes.append(end - start + 1)
        start = end + 1
    return result, tie_sizes


def u_statistic(x, y):
    """U of x: the pairs (x_i, y_j) with x_i > y_j, ties counting one half; and the tie sizes."""
    ranked, tie_sizes = ranks(list(x) + list(y))
    n1 = len(x)
    return sum(ranked[:n1]) - n1 * (n1 + 1) / 2.0, tie_sizes


def u_counts(n1, n2):
    """[number of orderings of n1 x's and n2 y's (without ties) whose U is u, for u = 0..n1*n2].
    The largest value is an x (beating all n2 y's) or a y: f(i, j, u) = f(i-1, j, u-j) +
    f(i, j-1, u)."""
    rows = [[1]] * (n2 + 1)  # f(0, j) = 1 at u = 0
    for i in range(1, n1 + 1):
        current = [[1]]  # f(i, 0): U = 0
        for j in range(1, n2 + 1):
            counts = [0] * (i * j + 1)
            for u, c in enumerate(rows[j]):
                counts[u + j] += c
            for u, c in enumerate(current[j - 1]):
                counts[u] += c
            current.append(counts)
        rows = current
    return rows[n2]


def exact_p(u, n1, n2):
    counts = u_counts(n1, n2)
    # The distribution is symmetric about n1*n2/2: the lower tail of the smaller U, doubled.
    low = int(min(u, n1 * n2 - u))
    return min(1.0, 2.0 * sum(counts[: low + 1]) / math.comb(n1 + n2, n1))


def normal_p(u, n1, n2, tie_sizes):
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in tie_sizes)
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:
        return 1.0  # every value equal: nothing tells the samples apart
    z = (max(u, n1 * n2 - u) - n1 * n2 / 2.0 - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))


def mann_whitney_p(x, y):
    """The two-sided p-value of the Mann-Whitney U test of samples x and y (each non-empty)."""
    if not x or not y:
        raise ValueError("mann_whitney_p needs two non-empty samples")
    u, tie_sizes = u_statistic(x, y)
    n1, n2 = len(x), len(y)
    if min(n1, n2) <= EXACT_MAX_SMALLER and all(t == 1 for t in tie_sizes):
        return exact_p(u, n1, n2)
    return normal_p(u, n1, n2, tie_sizes)


def smallest_p(n1, n2):
    """The smallest p-value samples of these sizes can give (completely separated, no ties)."""
    if min(n1, n2) <= EXACT_MAX_SMALLER:
        return exact_p(0, n1, n2)
    return normal_p(0, n1, n2, [1] * (n1 + n2))
