"""A signal in each phase of a run's life (the CLI's start, the engine's start-up, the
load, the teardown), SIGKILL included: the exit code is the documented one and agrees with
summary.json, there is no traceback, and no process of the run is left 3 s after repro."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from repro.interrupts import REPEAT_WINDOW_S
from tests.e2e.conftest import FAST
from tests.e2e.leftovers import assert_none_left

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def hang_up(disposition: signal.Handlers) -> Callable[[], None]:
    """A child's SIGHUP as a terminal leaves it (SIG_DFL) or nohup does (SIG_IGN), whatever
    the test runner's own is: a child inherits an ignored signal."""
    return lambda: signal.signal(signal.SIGHUP, disposition)


def signal_once_and_check(
    out: Path,
    sig: signal.Signals,
    at: float | Callable[[Path], bool],
    hangup: signal.Handlers = signal.SIG_DFL,
) -> str:
    """Start a short run, send `sig` after `at` seconds or once `at(out)` holds, check every
    promise; return the outcome."""
    argv = [sys.executable, "-m", "repro", "run", "--sessions", "4", "--topology", "single", *FAST]
    process = subprocess.Popen(
        [*argv, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=hang_up(hangup),
    )
    if callable(at):
        deadline = time.monotonic() + 90
        while process.poll() is None and not at(out):
            assert time.monotonic() < deadline, "the run never reached the moment asked"
            time.sleep(0.01)
    else:
        time.sleep(at)
    sent = process.poll() is None
    if sent:
        process.send_signal(sig)
    _, stderr = process.communicate(timeout=90)
    exited_at = time.monotonic()
    code = process.returncode
    written = out / "summary.json"
    summary = json.loads(written.read_text()) if written.exists() else None
    if sent and sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
        outcome = "killed"
    elif summary is None and code != 130:
        # Before any of repro's code runs, the interpreter ends the system's default way (and
        # CPython may print its own "Fatal Python error" for a Ctrl-C during `import site`).
        assert sent and not out.exists() and code in (-sig, -signal.SIGINT), (code, stderr)
        outcome = "stopped while Python started"
    elif summary is None:  # stopped before the run folder had a summary: before any start
        assert sent and not out.exists() and "Traceback" not in stderr, stderr
        outcome = "interrupted before start"
    else:
        assert code in (0, 130) and "Traceback" not in stderr, (code, stderr)
        assert (code == 130) == summary["interrupted"], (code, summary["interrupted"])
        outcome = "interrupted" if code == 130 else "complete"
    assert_none_left(out, exited_at, after_s=3.0)
    return outcome


def starting(out: Path) -> bool:
    """The engine is starting: its log is open, the load has not begun (no spec.json yet)."""
    return (out / "logs" / "single.log").exists() and not (out / "spec.json").exists()


def loading(out: Path) -> bool:
    return (out / "spec.json").exists() and not (out / "summary.json").exists()


def tearing_down(out: Path) -> bool:
    return (out / "summary.json").exists()


# Each phase of a run's life, found by what the run folder holds rather than by a delay (a
# delay lands in another phase on a faster or slower machine), and the outcome it must have.
PHASES = [
    (signal.SIGHUP, 0.05, {"stopped while Python started", "interrupted before start"}),
    (signal.SIGTERM, starting, {"interrupted"}),
    (signal.SIGINT, loading, {"interrupted"}),
    (signal.SIGKILL, loading, {"killed"}),
    (signal.SIGTERM, tearing_down, {"complete"}),
]


@pytest.mark.parametrize(("sig", "at", "outcomes"), PHASES)
def test_a_signal_in_every_phase_keeps_every_promise(
    tmp_path: Path, sig: signal.Signals, at: float | Callable[[Path], bool], outcomes: set[str]
) -> None:
    assert signal_once_and_check(tmp_path / "run", sig, at) in outcomes


def test_under_nohup_a_hang_up_during_the_load_stops_nothing(tmp_path: Path) -> None:
    """`nohup repro run ... &`, then the terminal closes: the run goes on to its end."""
    outcome = signal_once_and_check(tmp_path / "run", signal.SIGHUP, loading, signal.SIG_IGN)
    assert outcome == "complete"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_as_repro_exits_leaves_its_exit_code(tmp_path: Path, sig: signal.Signals) -> None:
    """After the last line of output the interpreter shuts down, and its shutdown puts every
    signal's default action back while it frees the modules (about 0.2 s after a run). A
    signal there used to end a complete run by signal (exit 143) instead of 0. The signal is
    sent every 10 ms from the last line on, inside the window in which repeats count as one
    stop (interrupts.REPEAT_WINDOW_S), so one of them lands in the shutdown."""
    argv = [sys.executable, "-m", "repro", "run", "--sessions", "2", "--topology", "single", *FAST]
    process = subprocess.Popen(
        [*argv, "--out", str(tmp_path / "run")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=hang_up(signal.SIG_DFL),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("└"):  # the summary table's last line: the command is done
            break
    else:
        pytest.fail("the run printed no summary table")
    last_line_at, sent = time.monotonic(), 0
    while process.poll() is None and time.monotonic() - last_line_at < 0.8 * REPEAT_WINDOW_S:
        process.send_signal(sig)
        sent += 1
        time.sleep(0.01)
    _, stderr = process.communicate(timeout=60)
    assert sent > 0  # else the process had gone before the first one: nothing was tested
    assert process.returncode == 0, (process.returncode, stderr)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["interrupted"] is False
