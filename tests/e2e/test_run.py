"""`repro run` through real processes on 127.0.0.1: single and PD, files, figures, teardown."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from repro.results.stats import wilson
from tests.e2e.conftest import FAST, engine_processes, repro, summary

pytestmark = pytest.mark.e2e

CONTRACT = {
    "sessions", "sessions_corrupted", "session_corruption_rate", "turns", "turns_corrupted",
    "turn_corruption_rate", "errors", "stalls", "interrupted", "config", "wall_s", "max_prompt_tokens",
}  # fmt: skip


Run = tuple[Path, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def run_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """One 6-session run per topology, started on first use and shared by this file's tests."""
    runs: dict[str, Run] = {}

    def get(topology: str) -> Run:
        if topology not in runs:
            out = tmp_path_factory.mktemp(topology) / "run"
            args = ("run", "--sessions", "6", "--topology", topology, *FAST, "--out", str(out))
            runs[topology] = (out, repro(*args))
        return runs[topology]

    return get


@pytest.mark.parametrize("topology", ["single", "pd"])
def test_run_writes_the_run_folder_and_scores_every_turn(
    run_of: Callable[[str], Run], topology: str
) -> None:
    out, done = run_of(topology)
    assert done.returncode == 0, done.stderr
    s = summary(out)
    assert s.keys() >= CONTRACT
    assert s["config"]["topology"] == topology and s["config"]["index_k"] == "fp8"
    assert s["sessions"] == 6 and s["turns"] >= 24 and s["errors"] == 0 and s["stalls"] == 0
    assert s["turns_corrupted"] == 0 and not s["interrupted"]  # fp8 is healthy
    assert 9_000 <= s["max_prompt_tokens"] <= 12_000
    turns = pq.read_table(out / "turns.parquet").to_pandas()
    assert len(turns) == s["turns"] and set(turns.session_id) == set(range(6))
    for _, session in turns.sort_values("turn").groupby("session_id"):
        assert (
            session.prompt_tokens.is_monotonic_increasing and session.prompt_tokens.iloc[0] > 1_000
        )
    assert (turns.first_token_at_s - turns.sent_at_s).gt(0).all()
    spec = json.loads((out / "spec.json").read_text())
    assert [r["name"] for r in spec["roles"]] == (
        ["single"] if topology == "single" else ["prefill", "decode", "router"]
    )
    assert {p.name for p in (out / "logs").iterdir()} == {f"{r['name']}.log" for r in spec["roles"]}
    engines = ["single"] if topology == "single" else ["prefill", "decode"]
    for name in engines:
        assert "sglang:generation_tokens_total" in (out / "metrics" / f"{name}.prom").read_text()
    # each engine role kept its modelled clock (or the run says how far it fell behind)
    assert set(s["engine_pace"]) == set(engines)
    assert all(0 < pace <= 1 for pace in s["engine_pace"].values())
    assert "engine pace" in done.stdout
    assert "sessions corrupted" in done.stdout and "0/6" in done.stdout
    assert engine_processes(out) == []


def test_report_html_writes_one_self_contained_page(run_of: Callable[[str], Run]) -> None:
    out, done = run_of("single")  # the run above: no engine is started again
    assert done.returncode == 0, done.stderr
    page = out.parent / "report.html"
    shown = repro("report", str(out), "--html", str(page), timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "sessions corrupted" in shown.stdout  # the terminal summary is still printed
    html = page.read_text(encoding="utf-8")
    s = summary(out)
    assert str(wilson(s["sessions_corrupted"], s["sessions"])) in html
    assert html.count("<svg") == 4 and "no data" not in html
    assert not re.search(r"(src|href)=['\"]?https?://", html) and "<script" not in html


def test_both_ways_of_returning_calls_are_judged(tmp_path: Path) -> None:
    """Parser off (the sim's default): raw DSML in content; on: SGLang-style tool_calls."""
    dsml = "<\uff5cDSML\uff5cfunction_calls>"
    for parser in ("off", "on"):
        out = tmp_path / parser
        knob = ["--knob", f"tool_parser={parser}"]
        done = repro(
            "run", "--sessions", "3", "--topology", "single", *knob, *FAST, "--out", str(out)
        )
        assert done.returncode == 0, done.stderr
        turns = pq.read_table(out / "turns.parquet").to_pandas()
        with_calls = turns[turns.n_calls > 0]
        assert len(with_calls) >= 6 and summary(out)["turns_corrupted"] == 0
        assert with_calls.content.str.contains(dsml).all() == (parser == "off")
        assert with_calls.content.str.contains(dsml).any() == (parser == "off")
