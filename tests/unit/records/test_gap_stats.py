"""Gap figures kept as a histogram: percentiles of many turns pooled stay within 2.2%."""

from __future__ import annotations

import random

import numpy as np
import pytest

from repro.records.gap_stats import GapStats, bucket_of, bucket_value_s, pooled_percentiles


def test_pooled_percentiles_are_within_bucket_precision_of_the_exact_ones() -> None:
    rng = random.Random(7)
    turns, every = [], []
    for _ in range(200):
        stats = GapStats()
        for _ in range(rng.randint(1, 300)):
            gap = rng.lognormvariate(-5, 1.2)  # about 7 ms, with a long tail
            stats.add(gap)
            every.append(gap)
        turns.append(stats)
    columns = [t.bucket_columns() for t in turns]
    figures = pooled_percentiles([b for b, _ in columns], [c for _, c in columns], max(every))
    for q in (50, 90, 99):
        exact = float(np.percentile(every, q, method="inverted_cdf"))  # nearest rank
        assert figures[f"p{q}"] == pytest.approx(exact, rel=0.022)
    assert figures["max"] == max(every)
    assert sum(t.count for t in turns) == len(every)
    assert sum(t.total_s for t in turns) == pytest.approx(sum(every))


def test_tokens_of_one_read_are_gaps_of_zero() -> None:
    stats = GapStats()
    stats.add(0.005, more_at_once=3)
    assert stats.count == 4 and stats.mean_s == pytest.approx(0.005 / 4)
    assert stats.bucket_columns() == ([0, bucket_of(0.005)], [3, 1])
    assert bucket_value_s(0) == 0.0
    assert bucket_value_s(bucket_of(0.005)) == pytest.approx(0.005, rel=0.022)


def test_a_turns_read_stamps_give_the_figures_of_its_gaps_added_one_by_one() -> None:
    # The client keeps only when each read with tokens came; the figures come at the end.
    rng = random.Random(11)
    for _ in range(50):
        reads = [(rng.lognormvariate(-5, 1.5), rng.choice((1, 1, 1, 2, 5))) for _ in range(300)]
        reads[rng.randrange(300)] = (1e-8, 1)  # a gap under the floor: bucket 0
        stamps, at, expected = [], 2.0, GapStats()
        for i, (gap, tokens) in enumerate(reads):
            at += gap
            stamps.append(at)
            if i == 0:
                if tokens > 1:  # the first read's extra tokens: gaps of zero after the first
                    expected.add(0.0, tokens - 2)
            else:
                expected.add(stamps[-1] - stamps[-2], tokens - 1)
        got = GapStats.from_read_stamps(stamps, sum(t for _, t in reads))
        assert got.count == expected.count == sum(t for _, t in reads) - 1
        assert got.buckets == expected.buckets
        assert got.max_s == expected.max_s
        assert got.total_s == pytest.approx(expected.total_s, rel=1e-12)


def test_a_turn_of_one_token_or_none_has_no_gap() -> None:
    for stamps, tokens in (([], 0), ([1.5], 1)):
        stats = GapStats.from_read_stamps(stamps, tokens)
        assert stats.count == 0 and stats.mean_s is None and stats.bucket_columns() == ([], [])
    one_read = GapStats.from_read_stamps([1.5], 4)  # four tokens in one read: three zeros
    assert one_read.count == 3 and one_read.bucket_columns() == ([0], [3])
