"""The gate's threshold syntax, its verdicts and exit codes, and its JUnit file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.results.gate import Threshold, decide, gate_records, junit_on_error, write_junit
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
    nothing = summarize([], config={}, wall_s=1)
    assert decide(nothing, Threshold.parse("0")).message.startswith("ERROR: no turn was judged")


def corrupted_and_failed(failed: int, judged: int = 10, corrupted: int = 1, **kw: object):
    records = [record(session_id=i, corrupted=i < corrupted) for i in range(judged)]
    records += [
        record(session_id=judged + i, outcome="timeout", error="turn deadline")
        for i in range(failed)
    ]
    return summarize(records, config={}, wall_s=1, **kw)


def test_corruption_above_the_threshold_is_a_fail_even_when_turns_failed() -> None:
    verdict = decide(corrupted_and_failed(failed=3), Threshold.parse("0"))
    assert verdict.exit_code == 1
    # The message names both: the corrupted turns, and the failed ones.
    assert verdict.message.startswith("FAIL: 1 of 10 turns corrupted (10.00%) in 1 session;")
    assert "Also: 3 turns failed (timeout 3)." in verdict.message
    assert verdict.troubles == ("3 turns failed (timeout 3)",)
    # A count is proven even when the engine died: more turns cannot undo a corrupted one.
    died = corrupted_and_failed(failed=0, error="The decode engine process was killed by signal 9")
    assert decide(died, Threshold.parse("0")).exit_code == 1


def test_a_percent_counts_failed_turns_as_clean_before_calling_it_a_fail() -> None:
    # 1 corrupted of 10 judged is 10%; with 3 failed turns as clean it is 1 of 13 = 7.7%.
    assert decide(corrupted_and_failed(failed=3), Threshold.parse("8%")).exit_code == 2
    assert decide(corrupted_and_failed(failed=3), Threshold.parse("7%")).exit_code == 1
    assert decide(corrupted_and_failed(failed=0), Threshold.parse("8%")).exit_code == 1
    # A run that ended early cannot prove a percent: the turns it never ran could dilute it.
    wedged = corrupted_and_failed(failed=0, wedge="no token for 60 s")
    assert decide(wedged, Threshold.parse("1%")).exit_code == 2
    assert decide(wedged, Threshold.parse("0")).exit_code == 1


def test_an_interrupted_run_is_130_whatever_it_measured() -> None:
    stopped = corrupted_and_failed(failed=0, interrupted=True)
    verdict = decide(stopped, Threshold.parse("0"))
    assert verdict.exit_code == 130 and verdict.message.startswith("INTERRUPTED: 1 of 10 turns")


def test_junit_has_a_case_per_session_the_gate_and_the_run_health(tmp_path: Path) -> None:
    records = [
        record(session_id=0),
        record(session_id=1, corrupted=True),
        record(session_id=2, outcome="timeout"),
        record(session_id=3, turn=0, corrupted=True),
        record(session_id=3, turn=1, outcome="http_error"),
    ]
    summary = summarize(records, config={}, wall_s=1, wedge="no token for 30 s")
    verdict = decide(summary, Threshold.parse("0"))
    store = RunStore(tmp_path / "run")
    for r in records:
        store.append(r)
    store.close()
    assert gate_records(tmp_path / "run") == records  # read back as `repro gate` does
    assert gate_records(tmp_path / "no-load-ran") == []
    write_junit(tmp_path / "junit.xml", summary, gate_records(tmp_path / "run"), verdict)
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    names = [case.get("name") for case in suite.iter("testcase")]
    sessions = [f"session {i}" for i in range(4)]
    assert names == [*sessions, "corruption threshold", "run health"]
    # Counted by testcase: sessions 1 and 3 and the threshold fail; session 2 and the run's
    # health are errors. Session 3's failed turn is said inside its failure.
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "3", "2")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert all(len(list(case)) <= 1 for case in cases.values())
    assert (
        cases["corruption threshold"]
        .find("failure")
        .get("message")
        .startswith("FAIL: 2 of 3 turns")
    )
    health = cases["run health"].find("error")
    assert health.get("message") == "; ".join(verdict.troubles) and len(verdict.troubles) == 2
    assert health.text.split("\n") == list(verdict.troubles)
    assert cases["session 2"].find("error").get("message").startswith("turn 0: timeout")
    both = cases["session 3"].find("failure")
    assert both.get("message").startswith("turn 0: ") and "turn 1: http_error" in both.text


def test_junit_is_written_when_the_gate_stops_before_a_run(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    with pytest.raises(UsageError), junit_on_error(junit):
        raise UsageError("Knob 'index_k' has no value 'bf17'.")
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("errors")) == ("1", "1")
    assert suite.find("testcase/error").get("message") == "Knob 'index_k' has no value 'bf17'."
    with pytest.raises(KeyboardInterrupt), junit_on_error(junit):
        raise KeyboardInterrupt
    assert "interrupted" in ET.parse(junit).getroot().find("testcase/error").get("message")


def test_a_junit_path_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    check_output_file("--junit", tmp_path / "junit.xml")  # a writable folder: no complaint
    with pytest.raises(UsageError, match="is a folder"):
        check_output_file("--junit", tmp_path)
    check_output_file("--junit", tmp_path / "reports" / "ci" / "junit.xml")
    assert (tmp_path / "reports" / "ci").is_dir()  # created, as pytest's --junitxml does
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(UsageError, match="a-file is a file, not a folder"):
        check_output_file("--junit", blocker / "junit.xml")
    with pytest.raises(UsageError, match=r"cannot create .*a-file/deeper: Not a directory"):
        check_output_file("--junit", blocker / "deeper" / "junit.xml")


def test_a_junit_path_onto_a_runs_own_file_is_refused(tmp_path: Path) -> None:
    """The gate's own run folder does not exist yet when --junit is checked: its file names
    are refused by name; an existing run's files (and a link to one) by what they are."""
    from repro.results import check_junit_path

    over = "would write over a run's own file; name a new file"
    for target in ("gate/summary.json", "gate/turns.parquet/part-000000.parquet"):
        with pytest.raises(UsageError, match=over):
            check_junit_path(tmp_path / target)
    run = tmp_path / "run"
    run.mkdir()
    (run / "spec.json").write_text("{}")
    (run / "notes.txt").write_text("mine")
    (tmp_path / "junit.xml").symlink_to(run / "notes.txt")
    for target in (run / "notes.txt", tmp_path / "junit.xml"):
        with pytest.raises(UsageError, match=over):
            check_junit_path(target)
    (run / "junit.xml").write_text("<testsuite/>")
    check_junit_path(run / "junit.xml")  # an earlier gate's file: written again
    check_junit_path(run / "new.xml")


def test_a_pipe_given_as_junit_is_refused_before_the_run(tmp_path: Path) -> None:
    import os

    from repro.results.gate import check_junit_path

    os.mkfifo(tmp_path / "junit.xml")  # writing it would wait for a reader forever
    with pytest.raises(UsageError, match="is a pipe or a socket"):
        check_junit_path(tmp_path / "junit.xml")
    check_junit_path(tmp_path / "new.xml")


def test_a_bad_threshold_still_writes_the_junit_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from repro.cli import app

    junit = tmp_path / "junit.xml"
    done = CliRunner().invoke(app, ["gate", "--max-corruption", "abc", "--junit", str(junit)])
    assert done.exit_code == 2 and "neither a count" in done.stderr
    message = ET.parse(junit).getroot().find("testcase/error").get("message")
    assert (
        message
        == "--max-corruption 'abc' is neither a count (e.g. 0, 3) nor a percent (e.g. 0.5%)."
    )
