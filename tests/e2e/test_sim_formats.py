"""The embedded engine writing other tool-call formats, end to end at CI scale: the story's
race corrupts each family's bytes and is judged in that family's grammar, the fix removes it,
and the parser differential catches a parser bug the validity oracle cannot see."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from repro.checkers import AssistantOutput, check_turn
from repro.scenarios import get_scenario
from tests.e2e.conftest import SPILL, repro, summary

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

# The race at CI scale (as in test_sim_faults): a single server whose small pool spills.
RACING = ["--sessions", "24", "--index-k", "bf16", "--topology", "single", "--context-max",
          "12000", "--set", "time_scale=0.05", "--ramp-up", "0.3", *SPILL]  # fmt: skip
QUICK = ["--topology", "single", "--context-max", "6000", "--set", "time_scale=0.1",
         "--ramp-up", "0.5"]  # fmt: skip
MARKERS = {"qwen3_coder": "<function=", "kimi_k2": "<|tool_call_begin|>", "harmony": "<|channel|>"}


def _run(out: Path, *args: str) -> dict:
    done = repro("run", *args, "--out", str(out), timeout=200)
    assert done.returncode == 0, done.stderr[-2000:]
    return summary(out)


@pytest.mark.parametrize("fmt", sorted(MARKERS))
def test_the_race_corrupts_each_format_and_turns_are_judged_in_it(tmp_path: Path, fmt: str):
    out = tmp_path / "run"
    s = _run(out, *RACING, "--set", f"model_format={fmt}")
    assert json.loads((out / "spec.json").read_text())["spec"]["tool_format"] == fmt
    assert s["turns_corrupted"] >= 1
    turns = pq.read_table(out / "turns.parquet").to_pandas()
    ok = turns[turns.outcome == "ok"]
    clean = ok[~ok.corrupted & (ok.n_calls > 0)]
    assert clean.content.str.contains(MARKERS[fmt], regex=False).all()  # raw, as the model wrote
    tools = get_scenario("agentic-coding").tools()
    for row in clean.head(20).itertuples():
        output = AssistantOutput(content=row.content, reasoning=row.reasoning, finish_reason="stop")
        assert check_turn(output, tools, format=fmt).defects == ()
    assert not (ok.corrupted & (ok.turn == 0)).any()  # a first turn has nothing to load back


def test_the_fix_leaves_nothing_in_another_format(tmp_path: Path):
    s = _run(tmp_path / "run", *RACING, "--set", "model_format=mistral",
             "--knob", "index_k_gate=fixed")  # fmt: skip
    assert s["turns_corrupted"] == 0 and s["turns"] > 100


@pytest.mark.parametrize("bug", [True, False], ids=["planted-bug", "healthy"])
def test_the_parser_differential_catches_a_parser_that_drops_calls(tmp_path: Path, bug: bool):
    """The run's engine parses (hermes), its reference answers raw: the replay holds the
    engine's calls against repro's parse of the same tokens' raw text."""
    out = tmp_path / "run"
    s = _run(out, "--sessions", "6", *QUICK, "--set", "model_format=hermes",
             "--knob", "tool_parser=on", "--knob", f"parser_bug={'on' if bug else 'off'}",
             "--oracle", "divergence", "--replay-sample", "all", "--reference-engines", "1",
             "--reference-knob", "tool_parser=off", "--reference-knob", "parser_bug=off")  # fmt: skip
    d = s["divergence"]
    assert d["turns_replayed"] == d["turns_by_tokens"] == s["turns"] > 0
    verdicts = [json.loads(line) for line in (out / "divergence.jsonl").read_text().splitlines()]
    counted = [v for v in verdicts if v["kind"] == "corrupt"]
    if not bug:
        assert s["turns_corrupted"] == 0 and not counted
        return
    assert s["turns_corrupted"] == len(counted) >= 1
    assert all(v["field"] == "tool_calls" and "output path" in v["note"] for v in counted)
    turns = pq.read_table(out / "turns.parquet").to_pandas().set_index(["session_id", "turn"])
    calls = {turns.loc[(v["session_id"], v["turn"])].n_calls for v in counted}
    assert calls == {1}  # the first call kept, well formed: validity would pass it
