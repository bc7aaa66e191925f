"""`repro gate`'s exit code is law: a failure injected at every stage of a gate (the spec, the
launch, model discovery, the load, the store, the summary, the report, the JUnit file) ends
in exit 2 with one sentence and a JUnit file that says why, unless corruption was proven
first, and the gate never exits 1 without a corrupted turn in its run folder.

In-process (typer's runner) so that a stage can be made to fail; the embedded engine is
still a real process on 127.0.0.1, launched by the gate.
"""

from __future__ import annotations

import errno
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import repro.results
from repro.checkers import Defect, Kind, Verdict
from repro.cli import app
from repro.harness.launch import endpoint
from repro.harness.lifecycle import driving
from repro.harness.load import loadgen
from repro.results import store
from repro.results.reading import read_turn_table

pytestmark = pytest.mark.e2e

SMALL = ["--sessions", "2", "--max-turns", "2", "--context-max", "4000", "--topology", "single",
         "--set", "time_scale=0.2", "--ramp-up", "0"]  # fmt: skip


def _bug(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a stage failed on purpose")


async def _async_bug(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a stage failed on purpose")


def _full_disk(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


# stage -> (object, attribute, replacement)
STAGES: dict[str, tuple[object, str, Callable[..., object]]] = {
    "spec": (repro.cli_options, "build_spec", _bug),
    "launch": (endpoint, "deploy", _bug),
    "discovery": (driving, "first_model", _bug),
    "load": (loadgen.LoadGenerator, "run", _async_bug),
    "store": (store.RunStore, "write_spec", _full_disk),
    "summary": (driving, "final_summary", _bug),
    "report": (repro.results, "render_summary", _bug),
    "junit": (repro.results, "write_junit", _bug),
    "junit-disk": (repro.results, "write_junit", _full_disk),
}


def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, Path, Path]:
    monkeypatch.setenv("REPRO_TRACEBACK", "0")  # the user's view: the sentence alone
    out, junit = tmp_path / "run", tmp_path / "junit.xml"
    argv = ["gate", *SMALL, "--out", str(out), "--junit", str(junit)]
    result = CliRunner().invoke(app, argv)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), repr(result.exception)
    return result.exit_code, result.stderr, out, junit


def corrupted_turns(out: Path) -> int:
    if not (out / "turns.parquet").exists():
        return 0
    return sum(read_turn_table(out / "turns.parquet", ["corrupted"]).column(0).to_pylist())


def junit_reason(junit: Path) -> str:
    gate_case = next(
        c
        for c in ET.parse(junit).getroot().iter("testcase")
        if c.get("name") == "corruption threshold"
    )
    verdict = gate_case.find("error")
    assert verdict is not None, ET.tostring(gate_case)
    return verdict.get("message", "")


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_a_failure_at_any_stage_is_exit_2_with_its_reason_in_one_line_and_in_junit(
    stage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, name, replacement = STAGES[stage]
    monkeypatch.setattr(owner, name, replacement)
    code, stderr, out, junit = gate(tmp_path, monkeypatch)
    assert code == 2, stderr
    assert corrupted_turns(out) == 0
    # One line says why: repro's own "error: ..." or, for a run that ended, the verdict's.
    errors = [line for line in stderr.splitlines() if line.startswith(("error: ", "ERROR: "))]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    if stage == "junit-disk":  # the one file that cannot say it: the sentence does
        assert "Cannot write the JUnit file" in errors[0] and "No space left" in errors[0]
        assert not junit.exists()
        return
    if stage == "store":
        assert "No space left on device" in errors[0]
    else:
        assert "repro stopped on an internal error (RuntimeError: a stage failed" in errors[0]
    reason = errors[0].removeprefix("error: ").removeprefix("ERROR: ")
    assert reason in junit_reason(junit)
    assert "the engine failed" not in errors[0]  # repro's own error is never the engine's
    if stage in ("report", "junit"):  # after the verdict: the run itself passed, and says so
        assert "(the run itself: PASS: 0 of" in junit_reason(junit)


def _first_turn_corrupted(self, session, progress, *shape_and_tools):  # type: ignore[no-untyped-def]
    defect = Defect(Kind.UNKNOWN_TAG, 0, "flagged by the test")
    return Verdict(), [defect] if progress.outcome == "ok" else []


@pytest.mark.parametrize("stage", ["report", "junit-disk"])
def test_corruption_proven_stays_exit_1_whatever_fails_after_the_verdict(
    stage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loadgen.LoadGenerator, "_judge", _first_turn_corrupted)
    owner, name, replacement = STAGES[stage]
    monkeypatch.setattr(owner, name, replacement)
    code, stderr, out, _ = gate(tmp_path, monkeypatch)
    assert corrupted_turns(out) > 0
    assert code == 1, stderr
    assert (
        "FAIL:" in stderr and len([x for x in stderr.splitlines() if x.startswith("error: ")]) == 1
    )


def test_a_bug_during_the_load_after_corruption_is_exit_2_not_a_verdict_of_1_from_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug that stops the load is an error of repro's own: the gate reads the summary it left
    and exits 1 only if that summary holds corrupted turns (a count threshold: proven)."""
    monkeypatch.setattr(loadgen.LoadGenerator, "_judge", _first_turn_corrupted)
    original = store.RunStore.add_failure

    def add_then_fail(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        original(self, *args, **kwargs)
        raise RuntimeError("a bug after a corrupted turn was stored")

    monkeypatch.setattr(store.RunStore, "add_failure", add_then_fail)
    code, stderr, out, junit = gate(tmp_path, monkeypatch)
    assert code in (1, 2), stderr
    assert (code == 1) == (corrupted_turns(out) > 0 and "FAIL:" in stderr), stderr
    assert "internal error (RuntimeError: a bug after a corrupted turn" in stderr
    assert junit.exists()
