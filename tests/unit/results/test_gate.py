"""The gate's threshold syntax, its verdicts and exit codes, and its JUnit file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.results.gate import Threshold, decide, gate_records, write_junit
from repro.results.store import RunStore, check_output_file
from repro.results.summary import summarize
from tests.unit.results.test_store import record


@pytest.mark.parametrize(
    ("text", "turns", "allowed"), [("0", 100, 0), ("3", 100, 3), ("0.5%", 1000, 5), ("2 %", 50, 1)]
)
def test_threshold_is_a_count_or_a_percent(text: str, turns: int, allowed: float) -> None:
    assert Threshold.parse(text).allowed(turns) == pytest.approx(allowed)


@pytest.mark.parametrize("text", ["", "abc", "1.5", "-1", "150%"])
def test_bad_threshold_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--max-corruption"):
        Threshold.parse(text)


def test_verdicts_and_exit_codes() -> None:
    clean = summarize([record(session_id=i) for i in range(5)], config={}, wall_s=1)
    dirty = summarize(
        [record(session_id=i, corrupted=i == 0) for i in range(5)], config={}, wall_s=1
    )
    errored = summarize([record(), record(outcome="http_error", error="500")], config={}, wall_s=1)
    wedged = summarize([record()], config={}, wall_s=1, wedge="no token for 60 s")
    assert decide(clean, Threshold.parse("0")).exit_code == 0
    assert decide(dirty, Threshold.parse("0")).exit_code == 1
    assert decide(dirty, Threshold.parse("1")).exit_code == 0
    assert decide(dirty, Threshold.parse("20%")).exit_code == 0
    assert decide(dirty, Threshold.parse("19%")).exit_code == 1  # 1 of 5 is 20%
    assert decide(errored, Threshold.parse("0")).exit_code == 2
    # Which outcomes failed, in words (not a Python dict, not the ok turns).
    assert "1 turn failed (http_error 1); the run" in decide(errored, Threshold.parse("0")).message
    verdict = decide(wedged, Threshold.parse("0"))
    assert verdict.exit_code == 2 and verdict.message.startswith("WEDGE")


def test_junit_has_a_case_per_session_and_the_gate(tmp_path: Path) -> None:
    records = [
        record(session_id=0),
        record(session_id=1, corrupted=True),
        record(session_id=2, outcome="timeout"),
    ]
    summary = summarize(records, config={}, wall_s=1)
    verdict = decide(summary, Threshold.parse("0"))
    store = RunStore(tmp_path / "run")
    for r in records:
        store.append(r)
    store.close()
    assert gate_records(tmp_path / "run") == records  # read back as `repro gate` does
    assert gate_records(tmp_path / "no-load-ran") == []
    write_junit(tmp_path / "junit.xml", summary, gate_records(tmp_path / "run"), verdict)
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("tests") == "4" and suite.get("failures") == "1" and suite.get("errors") == "2"
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names == ["session 0", "session 1", "session 2", "corruption threshold"]


def test_a_junit_path_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    check_output_file("--junit", tmp_path / "junit.xml")  # a writable folder: no complaint
    with pytest.raises(UsageError, match="is a folder"):
        check_output_file("--junit", tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        check_output_file("--junit", tmp_path / "missing" / "junit.xml")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(UsageError, match="a-file is a file, not a folder"):
        check_output_file("--junit", blocker / "junit.xml")
