"""Summary figures from turn records: denominators, intervals, errors, context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.results.store import RunStore
from repro.results.summary import RunSummary, summarize
from tests.unit.results.test_store import record


def test_rates_count_judged_turns_and_sessions() -> None:
    records = [
        record(session_id=0, turn=0), record(session_id=0, turn=1, corrupted=True),
        record(session_id=1, turn=0), record(session_id=1, turn=1),
        record(session_id=2, turn=0, outcome="timeout", error="slow"),
        record(session_id=3, turn=0, outcome="aborted"), record(session_id=3, turn=0),
    ]  # fmt: skip
    s = summarize(records, config={"topology": "pd"}, wall_s=10.0)
    assert (s.sessions, s.sessions_corrupted, s.turns, s.turns_corrupted) == (3, 1, 5, 1)
    assert s.session_corruption_rate == pytest.approx(
        1 / 3
    ) and s.turn_corruption_rate == pytest.approx(0.2)
    assert s.errors == 1 and s.aborted == 1 and s.sessions_started == 4
    assert s.defects == {"malformed_markup": 1}
    assert s.session_corruption_ci[0] < 1 / 3 < s.session_corruption_ci[1]
    assert s.failed  # a timeout means the run cannot vouch


def test_zero_of_n_still_has_an_upper_bound() -> None:
    s = summarize([record(session_id=i) for i in range(80)], config={}, wall_s=1.0)
    assert s.session_corruption_rate == 0.0
    assert 0.03 < s.session_corruption_ci[1] < 0.06  # about 3/n, Wilson gives 4.6% at n = 80


def test_context_and_throughput_figures() -> None:
    records = [record(session_id=s, turn=t) for s in range(3) for t in range(30)]
    s = summarize(records, config={}, wall_s=9.0)
    assert s.max_prompt_tokens == 2000 + 2600 * 29 and s.sessions_reaching_long_context == 3
    assert s.completion_tokens == 9000 and s.output_tokens_per_s == 1000.0
    assert s.latency_s["ttft"]["p50"] == pytest.approx(0.19)


def test_summary_round_trips_through_json(tmp_path: Path) -> None:
    s = summarize([record()], config={"index_k": "bf16"}, wall_s=2.5, wedge="no token for 31 s")
    RunStore.write_json(tmp_path / "summary.json", s.to_dict())
    again = RunSummary.from_file(tmp_path / "summary.json")
    assert again == s and again.stalls == 1


def test_the_context_row_counts_sessions_at_60k_only_when_prompts_got_there() -> None:
    from repro.results.report import summary_rows

    def context_row(prompt_tokens: list[int]) -> str:
        turns = [record(session_id=i, prompt_tokens=p) for i, p in enumerate(prompt_tokens)]
        rows = summary_rows(summarize(turns, config={}, wall_s=1.0), None)
        return next(row.text for row in rows if row.label == "context")

    assert context_row([61_000, 59_000, 80_000]) == (
        "max prompt 80,000 tokens; 2 of 3 sessions reached 60k"
    )
    assert context_row([14_000, 9_000]) == "max prompt 14,000 tokens"


def test_a_summary_written_before_the_threshold_had_a_name_reads_the_same(tmp_path: Path) -> None:
    old = summarize([record()], config={}, wall_s=1.0).to_dict()
    del old["sessions_reaching_long_context"], old["long_context_tokens"]
    old["sessions_reaching_60k"] = 7
    (tmp_path / "summary.json").write_text(json.dumps(old))
    again = RunSummary.from_file(tmp_path / "summary.json")
    assert again.sessions_reaching_long_context == 7 and again.long_context_tokens == 60_000


def test_the_long_context_threshold_is_a_parameter() -> None:
    records = [record(session_id=s, turn=t) for s in range(3) for t in range(30)]
    s = summarize(records, config={}, wall_s=9.0, long_context_tokens=80_000)
    assert s.long_context_tokens == 80_000
    assert s.sessions_reaching_long_context == 0  # 2000 + 2600 * 29 = 77,400 is short of it
