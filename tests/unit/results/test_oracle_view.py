"""Turns as the chosen oracle judged them: what each oracle counts, in summaries and bisection."""

from __future__ import annotations

from pathlib import Path

from repro.bisect.harness_oracle import session_outcomes
from repro.checkers.divergence import Divergence, DivergenceKind
from repro.records.replayed import ReplayedTurn, ReplayWriter, read_replayed
from repro.results.oracle_view import divergence_figures, judged_records
from repro.results.store import RunStore
from repro.results.summary import summarize
from tests.unit.results.test_store import record

CORRUPT = Divergence(
    DivergenceKind.CORRUPT, token_offset=7, field="content", char_offset=30, loaded_token="x",
    reference_token="y", loaded_logprob=-0.01, reference_logprob=-0.02, by_tokens=True,
)  # fmt: skip
NUMERICAL = Divergence(
    DivergenceKind.NUMERICAL, token_offset=3, field="reasoning", char_offset=9,
    loaded_token=" The", reference_token=" the", reference_logprob=-0.6,
    reference_margin=0.1, reference_logprob_of_loaded=-0.7, by_tokens=True,
)  # fmt: skip


def replayed() -> dict[tuple[int, int], ReplayedTurn]:
    turns = [
        ReplayedTurn(0, 0, Divergence(DivergenceKind.IDENTICAL, by_tokens=True)),
        ReplayedTurn(0, 1, NUMERICAL),
        ReplayedTurn(1, 0, CORRUPT),
        ReplayedTurn(1, 1, None, "timeout: the turn took longer than 180 s"),
    ]
    return {(t.session_id, t.turn): t for t in turns}


def loaded(judged: bool) -> list:
    """What a load leaves: four ok turns in sessions 0-1, one ok turn of session 2, an error."""
    return [
        record(0, 0, judged=judged),
        record(0, 1, judged=judged),
        record(1, 0, judged=judged),
        record(1, 1, judged=judged),
        record(2, 0, judged=judged, corrupted=judged),  # validity says corrupted (when it ran)
        record(3, 0, outcome="timeout", judged=judged),
    ]


def test_divergence_judges_what_was_replayed_and_counts_only_corrupt() -> None:
    records = judged_records(loaded(judged=False), "divergence", replayed())
    summary = summarize(records, config={}, wall_s=1.0)
    # Judged: 0/0 identical, 0/1 numerical, 1/0 corrupt; 1/1 got no reference, 2/0 not replayed.
    assert (summary.turns, summary.turns_corrupted) == (3, 1)
    assert (summary.sessions, summary.sessions_corrupted) == (2, 1)
    assert summary.defects == {"corrupt_divergence": 1}
    corrupt = next(r for r in records if (r.session_id, r.turn) == (1, 0))
    assert corrupt.first_defect == CORRUPT.describe() and corrupt.first_defect.startswith(
        "corrupt@content:30"
    )
    assert summary.latency_s["e2e"]  # latency still covers every ok turn of the load


def test_validity_ignores_the_replay_and_both_counts_either() -> None:
    validity = judged_records(loaded(judged=True), "validity", replayed())
    assert summarize(validity, config={}, wall_s=1.0).turns_corrupted == 1
    both = summarize(judged_records(loaded(judged=True), "both", replayed()), config={}, wall_s=1.0)
    assert (both.turns, both.turns_corrupted, both.sessions_corrupted) == (5, 2, 2)
    assert both.defects == {"corrupt_divergence": 1, "malformed_markup": 1}


def test_the_figures_count_each_kind_and_list_numerical_margins() -> None:
    figures = divergence_figures(loaded(judged=False), replayed(), {"sample": "all"})
    assert figures["kinds"] == {"identical": 1, "numerical": 1, "corrupt": 1, "diverged": 0}
    assert figures["turns_replayed"] == 3 and figures["errors"] == 1 and figures["sample"] == "all"
    assert figures["turns_by_tokens"] == 3 and figures["turns_with_outcome_ok"] == 5
    (near,) = figures["numerical"]
    assert near["session_id"] == 0 and near["turn"] == 1 and abs(near["gap_nats"] - 0.1) < 1e-9


def test_verdicts_round_trip_and_bisection_counts_sessions_the_same_way(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for r in loaded(judged=False):
        store.append(r)
    store.close()
    writer = ReplayWriter(tmp_path)
    for turn in replayed().values():
        writer.add(turn)
    writer.close()
    assert read_replayed(tmp_path) == replayed()
    # Session 0 clean, 1 corrupted, 2 not replayed and 3 only failed: no evidence either way.
    assert session_outcomes(tmp_path, 0, 4) == ".CEE"
