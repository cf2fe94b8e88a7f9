"""The 95% interval of a median from order statistics, as benchstat: compare's and plot's rule."""
import math
from fractions import Fraction

CONFIDENCE = 0.95


def median_interval(values):
    """The k-th least and k-th largest value for the largest k that holds the median with chance
    CONFIDENCE, 1 - 2 P(Binomial(n, 1/2) < k); None for fewer than 6 values at 95%. Counted in
    fractions, so that no rounding moves a bound."""
    n, below, k = len(values), 0, 0
    for i in range(n // 2):
        below += math.comb(n, i)
        if Fraction(below, 2 ** n) > (1 - Fraction(str(CONFIDENCE))) / 2:
            break
        k = i + 1
    ordered = sorted(values)
    return (ordered[k - 1], ordered[n - k]) if k else None
