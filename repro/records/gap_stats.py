"""Inter-token gaps as figures: count, sum, max and a log-bucket histogram.

Each gap lands in a bucket 1/16 of an octave wide (4.4%), so a percentile read back from the
pooled buckets of many turns is within 2.2% of the exact one, while a turn stores a few
(bucket, count) pairs: the buckets its gaps used. While a turn streams, the client keeps only
the time of each read that brought tokens (8 bytes, one C-level append); `from_read_stamps`
turns them into these figures once, at the turn's end, in numpy (bucketing each read in
the read callback cost a sixth of its instructions, bench/RESULTS.md, read_callback). The
loop-lag probe (harness.load.loop_probe) adds its samples one by one with `add`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

BUCKETS_PER_OCTAVE = 16
FLOOR_S = 1e-6  # gaps below a microsecond (tokens that came in one read) share bucket 0
_SCALE = BUCKETS_PER_OCTAVE / math.log(2)
_LOG_FLOOR = math.log(FLOOR_S)


def bucket_of(gap_s: float) -> int:
    """The histogram bucket of one gap: 0 below FLOOR_S, then 16 per doubling."""
    if gap_s < FLOOR_S:
        return 0
    return int((math.log(gap_s) - _LOG_FLOOR) * _SCALE) + 1


def bucket_value_s(bucket: int) -> float:
    """The value a bucket stands for: its geometric middle (0 for bucket 0)."""
    if bucket <= 0:
        return 0.0
    return FLOOR_S * 2.0 ** ((bucket - 0.5) / BUCKETS_PER_OCTAVE)


@dataclass(slots=True)
class GapStats:
    """Running figures of one turn's gaps; `add` is called once per read, not per token."""

    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    buckets: dict[int, int] = field(default_factory=dict)

    def add(self, gap_s: float, more_at_once: int = 0) -> None:
        """One gap, and `more_at_once` gaps of zero (tokens that came in the same read)."""
        self.count += 1 + more_at_once
        self.total_s += gap_s
        self.max_s = max(self.max_s, gap_s)
        b = bucket_of(gap_s)
        self.buckets[b] = self.buckets.get(b, 0) + 1
        if more_at_once:
            self.buckets[0] = self.buckets.get(0, 0) + more_at_once

    @property
    def mean_s(self) -> float | None:
        return self.total_s / self.count if self.count else None

    @classmethod
    def from_read_stamps(cls, stamps: Sequence[float], tokens: int) -> GapStats:
        """The figures of a turn whose reads that brought tokens came at `stamps` (ascending
        run-clock seconds), `tokens` tokens in all: a gap between consecutive reads, and a
        gap of zero for every further token of one read (they arrived together)."""
        import numpy as np

        stats = cls()
        if tokens <= 1:
            return stats
        at = np.asarray(stamps, dtype=np.float64)
        zeros = tokens - at.size  # tokens beyond the first of their read
        gaps = np.diff(at)
        stats.count = gaps.size + zeros
        if gaps.size:
            stats.total_s = float(gaps.sum())
            stats.max_s = max(float(gaps.max()), 0.0)
            # bucket_of, over the whole array: 0 below FLOOR_S, else 16 per doubling.
            above = gaps >= FLOOR_S
            ids = np.zeros(gaps.size, dtype=np.int64)
            ids[above] = ((np.log(gaps[above]) - _LOG_FLOOR) * _SCALE).astype(np.int64) + 1
            used = np.bincount(ids)
            (present,) = np.nonzero(used)
            stats.buckets = dict(zip(present.tolist(), used[present].tolist(), strict=True))
        if zeros:
            stats.buckets[0] = stats.buckets.get(0, 0) + zeros
        return stats

    def bucket_columns(self) -> tuple[list[int], list[int]]:
        """(buckets, counts), sorted by bucket: how a turn row stores its histogram."""
        pairs = sorted(self.buckets.items())
        return [b for b, _ in pairs], [c for _, c in pairs]


def pooled_percentiles(
    buckets: Iterable[Sequence[int]],
    counts: Iterable[Sequence[int]],
    max_s: float,
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
) -> dict[str, float]:
    """p50/p90/p99 of every gap of many histograms, plus the exact max; {} with no gap."""
    import numpy as np

    flat_b = np.fromiter((b for row in buckets for b in row), dtype=np.int64)
    flat_c = np.fromiter((c for row in counts for c in row), dtype=np.float64)
    return percentiles_of(flat_b, flat_c, max_s, quantiles)


def percentiles_of(
    buckets: object, counts: object, max_s: float, quantiles: Sequence[float] = (0.5, 0.9, 0.99)
) -> dict[str, float]:
    """Percentiles of one pooled histogram (numpy arrays of bucket ids and their counts)."""
    import numpy as np

    b = np.asarray(buckets, dtype=np.int64)
    c = np.asarray(counts, dtype=np.float64)
    if b.size == 0 or c.sum() <= 0:
        return {}
    totals = np.bincount(b, weights=c)
    cumulative = np.cumsum(totals)
    out = {}
    for q in quantiles:
        # The nearest rank, as a bucket: the first bucket whose cumulative count reaches it.
        rank = max(1.0, math.ceil(q * cumulative[-1]))
        index = int(np.searchsorted(cumulative, rank))
        out[f"p{round(q * 100)}"] = min(bucket_value_s(index), max_s)
    out["max"] = max_s
    return out
