"""The numbers behind the HTML report's plots: corruption by context length and by concurrency,
latency percentiles by context length, and the run's timeline, all from the turn records.

Rates cover judged turns (outcome `ok`, judged by the run's oracle) and use the same Wilson
interval as the summary; concurrency counts every turn, whatever its outcome, because each one held a request open.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repro.records import TurnOutcome, TurnRecord
from repro.results.stats import Rate, wilson
from repro.results.summary import percentiles

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MAX_BINS = 10
FIRST_CORRUPTED = 20  # corrupted turns listed by the page; failures.jsonl holds them all


@dataclass(frozen=True, slots=True)
class Bin:
    """The integers low..high, both included (prompt tokens, or turns in flight)."""

    low: int
    high: int

    @property
    def label(self) -> str:
        return f"{self.low:,}" if self.low == self.high else f"{self.low:,}–{self.high:,}"


@dataclass(frozen=True, slots=True)
class BinRate:
    bin: Bin
    rate: Rate


@dataclass(frozen=True, slots=True)
class BinLatency:
    """Percentiles in seconds as `percentiles` gives them ({} when no turn had the value)."""

    bin: Bin
    ttft_s: dict[str, float]
    e2e_s: dict[str, float]


@dataclass(frozen=True)
class RunFigures:
    """Everything the plots and the corrupted-turns table show."""

    by_context: list[BinRate]
    by_concurrency: list[BinRate]
    latency_by_context: list[BinLatency]
    in_flight_times_s: np.ndarray  # a step line: in_flight_counts[i] holds from times[i] on
    in_flight_counts: np.ndarray
    events_s: dict[str, np.ndarray]  # "corrupted" and each outcome but ok -> end times
    first_corrupted: list[TurnRecord]
    judged_without_prompt_tokens: int


def in_flight_at(sent_at_s: np.ndarray, ended_at_s: np.ndarray, at_s: np.ndarray) -> np.ndarray:
    """How many turns were open at each time in `at_s`: sent at or before it, not yet ended.

    Two sorted arrays and searchsorted: O(n log n) for n turns, not a pairwise comparison.
    """
    import numpy as np

    sent, ended = np.sort(sent_at_s), np.sort(ended_at_s)
    return np.searchsorted(sent, at_s, side="right") - np.searchsorted(ended, at_s, side="right")


def _nice_widths() -> itertools.chain[int]:
    return itertools.chain.from_iterable((m * 10**k for m in (1, 2, 5)) for k in itertools.count())


def bin_values(values: np.ndarray, max_bins: int = MAX_BINS) -> tuple[np.ndarray, list[Bin]]:
    """Each integer value's bin index, and the bins: equal widths of 1, 2 or 5 x 10^k.

    The width is the smallest that covers min..max in at most max_bins bins, so labels stay
    round (10,000–19,999). Only bins holding a value are returned; indexes point into them.
    """
    import numpy as np

    values = np.asarray(values, dtype="int64")
    if values.size == 0:
        return values, []
    lo, hi = int(values.min()), int(values.max())
    width = next(w for w in _nice_widths() if hi // w - lo // w + 1 <= max_bins)
    raw = values // width - lo // width
    used, index = np.unique(raw, return_inverse=True)
    first = lo // width
    bins = [Bin((first + k) * width, (first + k + 1) * width - 1) for k in used.tolist()]
    return index, bins


def rates_by_bin(
    values: np.ndarray, corrupted: np.ndarray, max_bins: int = MAX_BINS
) -> list[BinRate]:
    """The corrupted share of the turns in each bin of `values`, with its Wilson interval."""
    import numpy as np

    index, bins = bin_values(values, max_bins)
    n = np.bincount(index, minlength=len(bins))
    k = np.bincount(index, weights=np.asarray(corrupted, dtype="float64"), minlength=len(bins))
    return [BinRate(b, wilson(int(k[i]), int(n[i]))) for i, b in enumerate(bins)]


def latency_by_bin(
    values: np.ndarray, ttft_s: np.ndarray, e2e_s: np.ndarray, max_bins: int = MAX_BINS
) -> list[BinLatency]:
    """TTFT and end-to-end percentiles per bin of `values`; NaN TTFTs (no token) are left out."""
    index, bins = bin_values(values, max_bins)
    return [
        BinLatency(b, percentiles(ttft_s[index == i]), percentiles(e2e_s[index == i]))
        for i, b in enumerate(bins)
    ]


def turns_frame(records: Sequence[TurnRecord]) -> pd.DataFrame:
    """The columns the figures need, one row per turn; a missing number is NaN."""
    import numpy as np
    import pandas as pd

    def column(name: str, dtype: str) -> pd.Series:
        return pd.Series([getattr(r, name) for r in records], dtype=dtype)

    frame = pd.DataFrame(
        {
            "outcome": column("outcome", "object"),
            "corrupted": column("corrupted", "bool"),
            "judged": column("judged", "bool"),
            "sent_at_s": column("sent_at_s", "float64"),
            "first_token_at_s": column("first_token_at_s", "float64"),
            "ended_at_s": column("ended_at_s", "float64"),
            "prompt_tokens": column("prompt_tokens", "float64"),
        }
    )
    frame["ttft_s"] = frame.first_token_at_s - frame.sent_at_s
    frame["e2e_s"] = frame.ended_at_s - frame.sent_at_s
    sent, ended = frame.sent_at_s.to_numpy(), frame.ended_at_s.to_numpy()
    # A turn counts itself; at least 1 even for a turn that took no time at all.
    frame["in_flight"] = np.maximum(in_flight_at(sent, ended, sent), 1)
    return frame


def run_figures(records: Sequence[TurnRecord], max_bins: int = MAX_BINS) -> RunFigures:
    """The figures of one run; an empty run gives empty figures, never an error."""
    import numpy as np

    frame = turns_frame(records)
    judged = frame[(frame.outcome == TurnOutcome.OK) & frame.judged]
    sized = judged[judged.prompt_tokens.notna()]
    tokens = sized.prompt_tokens.to_numpy()
    sent, ended = frame.sent_at_s.to_numpy(), frame.ended_at_s.to_numpy()
    times = np.unique(np.concatenate([sent, ended]))
    events = {"corrupted": judged.ended_at_s[judged.corrupted].to_numpy()}
    for outcome in TurnOutcome:
        if outcome != TurnOutcome.OK and (frame.outcome == outcome).any():
            events[str(outcome)] = frame.ended_at_s[frame.outcome == outcome].to_numpy()
    corrupted = sorted(
        (r for r in records if r.corrupted and r.outcome == TurnOutcome.OK),
        key=lambda r: (r.sent_at_s, r.session_id),
    )
    return RunFigures(
        by_context=rates_by_bin(tokens, sized.corrupted.to_numpy(), max_bins),
        by_concurrency=rates_by_bin(
            judged.in_flight.to_numpy(), judged.corrupted.to_numpy(), max_bins
        ),
        latency_by_context=latency_by_bin(
            tokens, sized.ttft_s.to_numpy(), sized.e2e_s.to_numpy(), max_bins
        ),
        in_flight_times_s=times,
        in_flight_counts=in_flight_at(sent, ended, times),
        events_s=events,
        first_corrupted=corrupted[:FIRST_CORRUPTED],
        judged_without_prompt_tokens=len(judged) - len(sized),
    )
