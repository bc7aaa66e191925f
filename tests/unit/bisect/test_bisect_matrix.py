"""Matrix mode: every cell decided, rates with intervals, a parquet table, cache reuse."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from fake_oracle import FakeOracle, story_rate
from rich.console import Console

from repro.bisect.campaign import MatrixCampaign, bisect_matrix
from repro.bisect.progress import LiveProgress, render_state
from repro.errors import UsageError
from repro.spec import RunSpec

SEED_BUG = {"topology": ("single", "pd"), "hicache": ("off", "on"), "index_k": ("fp8", "bf16")}


def campaign(out, factors, fraction=False):
    return MatrixCampaign(run=RunSpec(), factors=factors, fraction=fraction, out_dir=out)


def test_full_factorial_decides_each_cell_and_writes_parquet(tmp_path):
    oracle = FakeOracle()
    report, parquet = bisect_matrix(campaign(tmp_path, SEED_BUG), oracle=oracle)
    assert len(report.cells) == 8
    decisions = {tuple(c.levels.values()): c.trial.result.decision.value for c in report.cells}
    assert decisions[("pd", "on", "bf16")] == "CORRUPTING"
    assert all(d == "CLEAN" for cell, d in decisions.items() if cell[1:] != ("on", "bf16"))
    frame = pd.read_parquet(parquet)
    assert len(frame) == 8
    assert {"topology", "hicache", "index_k", "decision", "rate", "rate_low", "rate_high"} <= set(
        frame.columns
    )
    worst = frame.sort_values("rate").iloc[-1]
    assert (worst.topology, worst.hicache, worst.index_k) == ("pd", "on", "bf16")
    assert worst.rate_low < worst.rate < worst.rate_high
    assert frame.loc[frame.decision == "CLEAN", "sessions_corrupted"].max() <= 1


def test_fraction_runs_sixteen_cells_for_eight_factors_and_hits_the_bug(tmp_path):
    factors = dict(SEED_BUG)
    factors |= {"topk_v2": ("off", "on"), "custom_kernels": ("off", "on")}
    factors |= {"cuda_graph": ("off", "on")}
    oracle = FakeOracle(rate=lambda c: story_rate(c))
    report, _ = bisect_matrix(campaign(tmp_path, factors, fraction=True), oracle=oracle)
    assert report.design == "resolution-IV fraction" and len(report.cells) == 16
    bad = [c for c in report.cells if c.trial.result.decision.value == "CORRUPTING"]
    assert {(c.levels["hicache"], c.levels["index_k"]) for c in bad} == {("on", "bf16")}


def test_cells_already_measured_come_from_the_cache(tmp_path):
    bisect_matrix(campaign(tmp_path, SEED_BUG), oracle=FakeOracle())
    again = FakeOracle()
    report, _ = bisect_matrix(campaign(tmp_path, SEED_BUG), oracle=again)
    assert again.waves == [] and len(report.cells) == 8
    assert all(c.trial.new_sessions == 0 for c in report.cells)


def test_unknown_factor_value_fails_before_any_session(tmp_path):
    oracle = FakeOracle()
    with pytest.raises(UsageError, match="no value 'fp4'"):
        bisect_matrix(campaign(tmp_path, {"index_k": ("fp8", "fp4")}), oracle=oracle)
    assert oracle.waves == []


def test_progress_reports_the_running_trial_and_the_decisions_so_far(tmp_path):
    states = []

    class Recorder:
        def update(self, state):
            states.append(state)

    bisect_matrix(campaign(tmp_path, SEED_BUG), oracle=FakeOracle(), progress=Recorder())
    running = [s for s in states if s.wave_started]
    assert running[0].wave_started == "topology=single,hicache=off,index_k=fp8"
    assert [r[0] for r in running[0].running] == [running[0].wave_started]
    assert running[0].decisions == () and running[0].sessions_spent == 0
    final = states[-1]
    assert final.running == () and len(final.decisions) == 8
    assert final.sessions_spent == sum(n for *_, n in final.decisions)
    assert ("topology=pd,hicache=on,index_k=bf16", "CORRUPTING") in {d[:2] for d in final.decisions}
    console = Console(width=100, record=True)
    console.print(render_state(final))
    assert "8 trials decided" in console.export_text()


def test_progress_in_a_log_is_one_plain_line_per_wave(tmp_path):
    """Not a terminal (CI, a redirected stderr): the campaign still shows it is moving."""
    log = io.StringIO()
    console = Console(file=log, width=200)  # a file: not a terminal
    with LiveProgress(console) as progress:
        bisect_matrix(campaign(tmp_path, SEED_BUG), oracle=FakeOracle(), progress=progress)
    lines = log.getvalue().splitlines()
    assert lines and all(line.startswith("bisect: ") for line in lines)
    assert "now: topology=single,hicache=off,index_k=fp8 — running a wave" in lines[0]
    assert "0 trials decided" in lines[0] and "7 trials decided" in lines[-1]
