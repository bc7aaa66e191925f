"""Gap figures kept as a histogram: percentiles of many turns pooled stay within 2.2%."""

from __future__ import annotations

import random

import numpy as np
import pytest

from repro.harness.gap_stats import GapStats, bucket_of, bucket_value_s, pooled_percentiles


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
