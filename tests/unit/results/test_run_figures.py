"""The numbers behind the HTML plots: turns in flight, round bins, binned rates and latency."""

from __future__ import annotations

import numpy as np
import pytest

from repro.results.run_figures import (
    FIRST_CORRUPTED,
    Bin,
    bin_values,
    in_flight_at,
    latency_by_bin,
    rates_by_bin,
    run_figures,
    turns_frame,
)
from repro.results.stats import wilson
from repro.results.summary import percentiles
from tests.unit.results.test_store import record


def span(session_id: int, sent: float, ended: float, **kw):
    return record(session_id=session_id, sent_at_s=sent, first_token_at_s=sent + 0.1, ended_at_s=ended, **kw)  # fmt: skip


def test_turns_in_flight_at_each_send_counts_overlaps_and_itself() -> None:
    # A spans 0-10; B (2-5) and C (4-6) start inside it; D starts as A ends: A is over.
    turns = [span(0, 0, 10), span(1, 2, 5), span(2, 4, 6), span(3, 10, 12)]
    assert turns_frame(turns).in_flight.tolist() == [1, 2, 3, 1]
    sent, ended = np.array([0, 2, 4, 10.0]), np.array([10, 5, 6, 12.0])
    assert in_flight_at(sent, ended, np.array([-1, 0, 4.5, 5, 6, 11, 12])).tolist() == [
        0, 1, 3, 2, 1, 1, 0,
    ]  # fmt: skip


def test_turns_in_flight_agree_with_counting_every_pair() -> None:
    rng = np.random.default_rng(7)
    sent = rng.uniform(0, 100, 400)
    ended = sent + rng.exponential(5, 400)
    pairwise = [int(((sent <= t) & (t < ended)).sum()) for t in sent]
    assert in_flight_at(sent, ended, sent).tolist() == pairwise


@pytest.mark.parametrize(
    ("values", "bins"),
    [
        ([1_200, 9_900, 34_999], [Bin(0, 4_999), Bin(5_000, 9_999), Bin(30_000, 34_999)]),
        ([1, 2, 2, 6], [Bin(1, 1), Bin(2, 2), Bin(6, 6)]),
        ([3, 80], [Bin(0, 9), Bin(80, 89)]),
        ([42], [Bin(42, 42)]),
        ([], []),
    ],
)
def test_bins_have_round_widths_and_only_hold_values(values: list[int], bins: list[Bin]) -> None:
    index, found = bin_values(np.array(values), max_bins=10)
    assert found == bins
    assert all(b.low <= v <= b.high for v, b in zip(values, (found[i] for i in index), strict=True))


def test_bin_labels() -> None:
    assert Bin(10_000, 14_999).label == "10,000–14,999" and Bin(3, 3).label == "3"


def test_binned_rates_carry_the_summarys_wilson_interval() -> None:
    tokens = np.array([1_000] * 10 + [6_000] * 40 + [12_000] * 3)
    corrupted = np.array([True] * 2 + [False] * 8 + [True] * 5 + [False] * 35 + [False] * 3)
    rates = rates_by_bin(tokens, corrupted, max_bins=3)
    assert [r.bin for r in rates] == [Bin(0, 4_999), Bin(5_000, 9_999), Bin(10_000, 14_999)]
    assert [r.rate for r in rates] == [wilson(2, 10), wilson(5, 40), wilson(0, 3)]


def test_latency_by_bin_is_the_summarys_percentiles_per_bin() -> None:
    tokens = np.array([100, 200, 300, 5_000, 5_100])
    ttft = np.array([0.1, 0.2, np.nan, 1.0, 2.0])
    e2e = np.array([1.0, 2.0, 3.0, 10.0, 20.0])
    first, second = latency_by_bin(tokens, ttft, e2e, max_bins=2)
    assert first.ttft_s == percentiles([0.1, 0.2]) and first.e2e_s == percentiles([1, 2, 3.0])
    assert second.bin == Bin(5_000, 9_999) and second.e2e_s == percentiles([10, 20.0])


def test_run_figures_judge_ok_turns_and_mark_every_failure() -> None:
    turns = [
        span(0, 0, 2, turn=0, corrupted=True, prompt_tokens=3_000),
        span(0, 2, 4, turn=1, prompt_tokens=None),
        span(1, 1, 3, turn=0, outcome="timeout", corrupted=False),
        span(2, 1, 1.5, turn=0, outcome="aborted"),
        span(3, 0.5, 2.5, turn=0, outcome="stalled"),
    ]
    figures = run_figures(turns)
    assert [r.rate for r in figures.by_context] == [wilson(1, 1)]
    assert figures.judged_without_prompt_tokens == 1
    # Sent at 0 alone; sent at 2 with the timeout and the stall still open (and itself).
    assert [(r.bin.label, r.rate.k, r.rate.n) for r in figures.by_concurrency] == [
        ("1", 1, 1), ("3", 0, 1),
    ]  # fmt: skip
    assert {k: v.tolist() for k, v in figures.events_s.items()} == {
        "corrupted": [2.0], "timeout": [3.0], "stalled": [2.5], "aborted": [1.5],
    }  # fmt: skip
    assert figures.in_flight_counts.max() == 4 and figures.in_flight_counts[-1] == 0
    assert [(r.session_id, r.turn) for r in figures.first_corrupted] == [(0, 0)]


def test_the_first_corrupted_turns_are_the_earliest_sent() -> None:
    turns = [span(i, 100 - i, 101 - i, corrupted=True) for i in range(30)]
    first = run_figures(turns).first_corrupted
    assert len(first) == FIRST_CORRUPTED and [r.session_id for r in first[:2]] == [29, 28]


def test_an_empty_run_has_empty_figures() -> None:
    figures = run_figures([])
    assert figures.by_context == figures.by_concurrency == figures.latency_by_context == []
    assert figures.in_flight_times_s.size == 0 and figures.events_s["corrupted"].size == 0
