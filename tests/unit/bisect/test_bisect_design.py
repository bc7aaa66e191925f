"""Designs: full factorial and the resolution-IV fraction's run counts and strength 3."""

from __future__ import annotations

import itertools

import pytest

from repro.bisect.design import full_factorial, resolution_iv
from repro.errors import UsageError


def two_level(k: int) -> dict[str, tuple[str, str]]:
    return {f"f{i}": ("lo", "hi") for i in range(k)}


def test_full_factorial_has_every_combination_once():
    cells = full_factorial({"a": ("1", "2", "3"), "b": ("x", "y")})
    assert len(cells) == 6
    assert {tuple(c.values()) for c in cells} == set(itertools.product("123", "xy"))
    assert cells[0] == {"a": "1", "b": "x"} and cells[1] == {"a": "1", "b": "y"}


@pytest.mark.parametrize(("k", "runs"), [(4, 8), (5, 16), (6, 16), (8, 16), (9, 32), (16, 32)])
def test_fraction_run_counts(k, runs):
    assert len(resolution_iv(two_level(k))) == runs


@pytest.mark.parametrize("k", [4, 6, 8, 12])
def test_fraction_is_resolution_iv(k):
    cells = resolution_iv(two_level(k))
    names = list(two_level(k))
    # Every 3-factor projection is a full 2^3, each combination equally often (strength 3).
    for trio in itertools.combinations(names, 3):
        counts = {}
        for cell in cells:
            key = tuple(cell[n] for n in trio)
            counts[key] = counts.get(key, 0) + 1
        assert len(counts) == 8 and len(set(counts.values())) == 1
    # Balanced: each factor at each level in half the runs.
    for name in names:
        assert sum(cell[name] == "hi" for cell in cells) == len(cells) // 2


def test_the_seed_bug_cell_is_hit_twice_in_sixteen_runs():
    factors = {"topology": ("single", "pd"), "hicache": ("off", "on"), "index_k": ("fp8", "bf16")}
    factors |= {f"red_herring_{i}": ("off", "on") for i in range(5)}
    cells = resolution_iv(factors)
    bad = [c for c in cells if (c["topology"], c["hicache"], c["index_k"]) == ("pd", "on", "bf16")]
    assert len(cells) == 16 and len(bad) == 2  # bisect.md §5.2


def test_fraction_refuses_a_three_valued_factor():
    with pytest.raises(UsageError, match="two values per factor; 'a' has 3"):
        resolution_iv({"a": ("1", "2", "3"), "b": ("x", "y")})
