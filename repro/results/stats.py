"""Rates with honest uncertainty: Wilson intervals (closed form), Fisher's exact test (scipy)
and a score test of a ratio of rates (statsmodels).

The Wilson interval needs only the normal quantile (the standard library's NormalDist), so
`repro run` never imports scipy, which was half of its start-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Rate:
    """k of n with its Wilson interval; for k = 0 the upper bound is about 3/n."""

    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else 0.0

    def __str__(self) -> str:
        if not self.n:
            return "n/a (0 measured)"
        return f"{self.k}/{self.n} = {self.value:.1%} [{self.low:.1%}, {self.high:.1%}]"

    def stacked(self) -> str:
        """As str(), the interval on a line of its own: a narrow table cell wraps it whole."""
        return str(self).replace(" [", "\n[", 1)


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> Rate:
    """Wilson score interval, without continuity correction (as scipy's binomtest gives it);
    an empty sample gives [0, 1]."""
    if n == 0:
        return Rate(0, 0, 0.0, 1.0)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2 = z * z
    center = (k + z2 / 2) / (n + z2)
    half = z * math.sqrt(k * (n - k) / n + z2 / 4) / (n + z2)
    return Rate(k, n, max(0.0, center - half), min(1.0, center + half))


def ratio_below_p(k_a: float, n_a: float, k_b: float, n_b: float, ratio: float) -> float:
    """One-sided p-value that rate A is below `ratio` times rate B: the Farrington-Manning
    score test, whose null is the ratio itself, so "at least halved" can be shown. Counts
    may be fractional (effective counts, see repro/bisect/dispersion.py)."""
    from statsmodels.stats.proportion import test_proportions_2indep

    result = test_proportions_2indep(
        k_a, n_a, k_b, n_b, value=ratio, method="score", compare="ratio", alternative="smaller"
    )
    return float(result.pvalue)


def fisher_two_sided(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """Two-sided Fisher exact p-value that rates A and B differ."""
    from scipy.stats import fisher_exact

    table = [[k_a, n_a - k_a], [k_b, n_b - k_b]]
    return float(fisher_exact(table).pvalue)
