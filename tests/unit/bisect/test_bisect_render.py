"""The campaign tables at 80 columns (a CI log): values wrap or fold, none is cut; the trial
table keeps the decision and the session count it was made at apart from the sessions run."""

from __future__ import annotations

import anyio
import pytest
from fake_oracle import FakeOracle

from repro.bisect.cache import TrialCache
from repro.bisect.evidence import Evidence, Wave
from repro.bisect.flags import search_flags
from repro.bisect.matrix import run_matrix
from repro.bisect.render import classes_table, decision, matrix_table, trial_table
from repro.bisect.sprt import SprtSettings, run_sprt
from repro.bisect.trial import STOPPED_SETTLED, Trial, TrialRunner
from repro.spec import RunSpec
from tests.table_cells import assert_nothing_cut, cells

BAD = {"topology": "pd", "hicache": "on", "index_k": "bf16", "topk_v2": "on",
       "custom_kernels": "on", "cuda_graph": "off"}  # fmt: skip
GOOD = {"topology": "single", "hicache": "off", "index_k": "fp8", "topk_v2": "off",
        "custom_kernels": "off", "cuda_graph": "on"}  # fmt: skip


def runner(tmp_path, oracle=None) -> TrialRunner:
    return TrialRunner(
        oracle or FakeOracle(),
        TrialCache(tmp_path / "cache"),
        RunSpec(sessions=80),
        SprtSettings(max_sessions=160),
        tmp_path / "trials",
    )


@pytest.fixture(scope="module")
def flag_report(tmp_path_factory):
    return anyio.run(search_flags, runner(tmp_path_factory.mktemp("flags")), BAD, GOOD)


def trial(outcomes: str, settled: bool) -> Trial:
    evidence = Evidence({"k": "v"}, (Wave(0, outcomes, 60.0, "w"),))
    result = run_sprt(evidence.outcomes, SprtSettings())
    return Trial("good + hicache=on + index_k=bf16", {}, evidence, result, 0, "d", settled)


def test_a_decision_shows_where_it_was_made_apart_from_the_sessions_run() -> None:
    # One corruption early: the SPRT decides CLEAN at 115, and the wave runs on to 160.
    decided = trial("C" + "." * 159, settled=True)
    assert decided.result.sessions == 115
    assert decision(decided) == "CLEAN at 115"
    [_, row] = cells(trial_table([decided]), 80)
    assert row[1:4] == ["CLEANat115", "-2.97", "160"] and row[4].startswith("1/160")


def test_a_trial_stopped_because_its_question_was_settled_is_not_unknown() -> None:
    assert decision(trial("C" + "." * 79, settled=True)) == STOPPED_SETTLED
    assert decision(trial("C" + "." * 79, settled=False)) == "UNKNOWN"  # the cap came first


def test_the_runner_marks_a_trial_it_stopped_once_its_question_was_settled(tmp_path) -> None:
    measure = runner(tmp_path, FakeOracle(lambda c: 0.03, seed=1)).measure  # 2 of 80
    shown = anyio.run(measure, "revert topology", BAD, lambda ev: ev.corrupted > 0)
    assert shown.evidence.corrupted > 0 and shown.sessions_run == 80  # one wave settled it
    assert not shown.result.decided and shown.outcome == STOPPED_SETTLED
    # A question never settled runs to the cap; the SPRT's own verdict is what it shows.
    capped = anyio.run(measure, "again", {**BAD, "hicache": "off"}, lambda ev: False)
    assert capped.sessions_run == 160 and not capped.settled
    assert capped.outcome == capped.result.decision.value != STOPPED_SETTLED


@pytest.mark.parametrize("make", [trial_table, classes_table], ids=["trials", "classes"])
def test_flag_tables_cut_nothing_at_80_columns(flag_report, make) -> None:
    table = make(flag_report.trials) if make is trial_table else make(flag_report)
    assert_nothing_cut(table, 80)


def test_matrix_table_cuts_nothing_at_80_columns(tmp_path) -> None:
    # Long factor names and values, as a real profile has them (kv_layout, interleaved...).
    knobs = {"kv_cache_layout": ("paged_interleaved", "contiguous_blocked"),
             "attention_backend": ("flashinfer_mla", "triton_reference"),
             "scheduler_policy": ("longest_prefix_match", "first_come_first_served")}  # fmt: skip
    oracle = FakeOracle(
        lambda c: 0.3 if c["kv_cache_layout"] == "paged_interleaved" else 0.0, knobs
    )
    report = anyio.run(
        run_matrix, runner(tmp_path, oracle), {}, {k: list(v) for k, v in knobs.items()}
    )
    table = matrix_table(report)
    assert_nothing_cut(table, 80)
    [header, *rows] = cells(table, 80)
    assert header[:3] == ["kv_cache_layout", "attention_backend", "scheduler_policy"]
    assert {row[0] for row in rows} == {"paged_interleaved", "contiguous_blocked"}
    assert any(row[3].startswith("CORRUPTINGat") for row in rows)
