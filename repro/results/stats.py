"""Rates with honest uncertainty: Wilson intervals and Fisher's exact test (scipy)."""

from __future__ import annotations

from dataclasses import dataclass

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


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> Rate:
    """Wilson score interval (scipy's binomtest); an empty sample gives [0, 1]."""
    if n == 0:
        return Rate(0, 0, 0.0, 1.0)
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Rate(k, n, float(ci.low), float(ci.high))


def fisher_less(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that rate A is lower than rate B."""
    from scipy.stats import fisher_exact

    table = [[k_a, n_a - k_a], [k_b, n_b - k_b]]
    return float(fisher_exact(table, alternative="less").pvalue)


def fisher_two_sided(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """Two-sided Fisher exact p-value that rates A and B differ."""
    from scipy.stats import fisher_exact

    table = [[k_a, n_a - k_a], [k_b, n_b - k_b]]
    return float(fisher_exact(table).pvalue)
