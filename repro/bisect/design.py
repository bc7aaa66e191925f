"""Experimental designs over knobs: the full factorial, and a resolution-IV two-level fraction.

The fraction takes 2^m runs on m base factors and gives every factor a column that is the
product of an odd number of base factors. A product of any three such columns has odd weight
and so is never the identity: no defining word is shorter than four, i.e. resolution IV,
and every three-factor projection holds all 8 level combinations (bisect.md §5.2). It needs
2^m >= 2k runs: 8 runs for 4 factors, 16 for 5..8, 32 for 9..16.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from repro.errors import UsageError


def full_factorial(factors: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Every combination, the last factor changing fastest."""
    names = list(factors)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*factors.values())]


def base_factor_count(factors: int) -> int:
    """Smallest m with 2^(m-1) odd-weight columns available for `factors` factors."""
    return max(1, math.ceil(math.log2(factors)) + 1) if factors > 1 else 1


def resolution_iv(factors: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """A two-level fraction of resolution IV (or better); the first value is the low level."""
    for name, values in factors.items():
        if len(values) != 2:
            raise UsageError(
                f"--fraction needs two values per factor; '{name}' has {len(values)} "
                f"({', '.join(values)})."
            )
    names = list(factors)
    base = base_factor_count(len(names))
    # Base factors first (weight 1), then weight-3 products, then weight 5...: odd only.
    columns = [
        subset
        for weight in range(1, base + 1, 2)
        for subset in itertools.combinations(range(base), weight)
    ][: len(names)]
    runs = []
    for row in range(2**base):
        levels = [(row >> bit) & 1 for bit in reversed(range(base))]
        run = {}
        for name, subset in zip(names, columns, strict=True):
            high = sum(levels[i] for i in subset) % 2  # product of ±1 levels, as parity
            run[name] = factors[name][high]
        runs.append(run)
    return runs
