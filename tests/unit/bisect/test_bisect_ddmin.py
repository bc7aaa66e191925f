"""ddmin on a noise-free test: it returns the whole conjunction, 1-minimal, within its bound."""

from __future__ import annotations

import anyio
import pytest

from repro.bisect.ddmin import ddmin, split

KNOBS = tuple(f"k{i:02d}" for i in range(20))


def run(deltas, culprit_sets, unresolved=frozenset()):
    """ddmin where a subset fails iff it contains one of `culprit_sets` (an OR of ANDs)."""
    tested: list[tuple[str, ...]] = []

    async def fails(subset):
        tested.append(subset)
        if frozenset(subset) in unresolved:
            return None
        return any(c <= set(subset) for c in culprit_sets)

    return anyio.run(ddmin, deltas, fails), tested


def test_split_sizes_differ_by_at_most_one():
    chunks = split(list("abcdefg"), 3)
    assert chunks == [("a", "b", "c"), ("d", "e"), ("f", "g")]


@pytest.mark.parametrize("culprit", [{"k03"}, {"k00", "k19"}, {"k02", "k07", "k13"}])
def test_returns_the_whole_conjunction(culprit):
    found, tested = run(KNOBS, [culprit])
    assert set(found) == culprit
    n = len(KNOBS)
    assert len(set(tested)) <= (n * n + 7 * n) / 2  # Zeller & Hildebrandt's worst case


def test_result_is_one_minimal_for_an_or_of_ands():
    found, _ = run(KNOBS, [{"k01", "k05"}, {"k10", "k11", "k12"}])
    assert set(found) in ({"k01", "k05"}, {"k10", "k11", "k12"})


def test_an_unresolved_test_counts_as_not_failing():
    # {k00,k01} would be the answer, but its own test never resolves: ddmin keeps a superset.
    found, _ = run(("k00", "k01", "k02", "k03"), [{"k00", "k01"}], {frozenset({"k00", "k01"})})
    assert {"k00", "k01"} < set(found)


def test_a_single_delta_is_returned_without_a_test():
    found, tested = run(("only",), [{"only"}])
    assert found == ("only",) and tested == []
