"""The request mix, the invariants and the stream oracle end to end on the embedded engine:
a healthy engine breaks no invariant under any shape and its twins agree; the positive
control's rules for the new defect classes are each caught at their injected rate; an engine
that dies under a mix is reported with the shapes that were in flight."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from repro.proxy import match_run, read_injection_log
from repro.results.reading import read_turn_table
from repro.shapes import FULL_MIX
from repro.spec import PROFILES_DIR
from tests.e2e.conftest import FAST, engine_processes, repro, summary
from tests.e2e.runs import start_run, wait_for_turns

pytestmark = pytest.mark.e2e

SINGLE = ["--topology", "single", *FAST]
PARSED = ["--knob", "tool_parser=on"]
PROXIED = str(PROFILES_DIR / "examples" / "sim-behind-proxy.toml")


def test_every_shape_on_a_healthy_engine_breaks_nothing_and_the_report_splits_by_shape(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    done = repro("run", "--sessions", "8", *SINGLE, *PARSED, "--mix", "full",
                 "--oracle", "validity,stream", "--stream-sample", "all", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = summary(out)
    assert s["turns"] >= 60 and s["errors"] == 0 and s["turns_corrupted"] == 0, s["defects"]
    invariants, stream = s["consistency"]["invariants"], s["consistency"]["stream"]
    assert invariants["corrupted"] == 0 and invariants["n"] == s["turns"]
    assert stream["n"] == stream["agree"] == s["turns"] and stream["corrupted"] == 0
    # The stream oracle asks every request for logprobs: `full` leaves that axis out.
    mixed = [a for a in FULL_MIX if a != "logprobs"]
    assert set(s["by_shape"]) == {f"{a}={v}" for a in mixed for v, _ in FULL_MIX[a]}
    assert sum(s["by_shape"][f"stream={v}"]["n"] for v in ("on", "off")) == s["turns"]
    table = read_turn_table(out / "turns.parquet", ["shape", "twin"]).to_pylist()
    assert all(len(r["shape"].split()) == len(mixed) and r["twin"] == "agree" for r in table)
    report = repro("report", str(out), "--json", "--html", str(tmp_path / "page.html"))
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["by_shape"] == s["by_shape"]
    page = (tmp_path / "page.html").read_text()
    assert "tool_choice=required" in page and "stream twins" in page


def proxied(out: Path, rule: str, *extra: str, sessions: int = 12) -> tuple[dict, object]:
    done = repro("run", "--profile", PROXIED, "--sessions", str(sessions), *FAST,
                 "--knob", f"proxy_rule={rule}", "--knob", "proxy_rate=0.2", *extra,
                 "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return summary(out), match_run(out, out / "logs" / "proxy.log")


@pytest.mark.parametrize(
    ("rule", "kind", "extra"),
    [
        # The embedded engine's parser sends each call's arguments in fragments.
        ("duplicate", "tool_calls_unparsable", ["--server-args", "--tool-call-parser deepseekv32"]),
        ("finish", "finish_reason_lie", ["--server-args", "--tool-call-parser deepseekv32"]),
        # Any answer text, and every turn sent twice: only the twin tells this one.
        ("flip", "stream_disagrees", ["--knob", "proxy_target=any", "--oracle", "stream",
                                      "--stream-sample", "all", "--history", "scripted"]),
    ],
)  # fmt: skip
def test_each_new_rule_of_the_positive_control_is_caught_at_its_injected_rate(
    tmp_path: Path, rule: str, kind: str, extra: list[str]
) -> None:
    out = tmp_path / "run"
    s, match = proxied(out, rule, *extra)
    log = read_injection_log(out / "logs" / "proxy.log")
    assert log.summary is not None and match.injected == log.summary["injected"] >= 3
    assert match.detected == match.injected and match.unexplained == ()  # type: ignore[attr-defined]
    assert s["turns_corrupted"] == match.injected and s["errors"] == 0
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert sum(any(d["kind"] == kind for d in f["defects"]) for f in failures) == match.injected
    assert all(i["rule"] == rule for i in log.injections)


def test_a_stream_that_disagrees_keeps_both_answers(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proxied(out, "flip", "--knob", "proxy_target=any", "--oracle", "stream", "--stream-sample",
            "all", "--history", "scripted", sessions=6)  # fmt: skip
    failure = json.loads((out / "failures.jsonl").read_text().splitlines()[0])
    assert failure["twin_verdict"]["kind"] == "disagree"
    streamed, whole = failure["answer"], failure["twin"]
    assert streamed["streamed"] and not whole["streamed"]
    assert streamed["choices"] != whole["choices"]


def test_an_engine_that_dies_under_a_mix_is_reported_with_the_shapes_in_flight(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    # Long sessions (about 35 s of load): far from done when the first turns are on disk,
    # even when the turns' first flush comes late on a busy machine.
    process = start_run(out, "--sessions", "12", "--context-max", "80000", "--topology",
                        "single", "--mix", "stream=off:0.5,on", "--mix", "tool_choice=required:0.5,auto")  # fmt: skip
    wait_for_turns(out, 6, process=process)
    (pid,) = engine_processes(out)
    os.kill(pid, signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr + stdout[-2000:]
    assert (
        "engine process was killed by signal 9" in stderr and "Requests in flight then:" in stderr
    )
    flight = summary(out)["in_flight_at_failure"]
    assert flight["requests"] >= 1
    assert flight.get("stream=off", 0) + flight.get("stream=on", 0) == flight["requests"]
    assert "in flight then" in repro("report", str(out)).stdout
    assert engine_processes(out) == []
