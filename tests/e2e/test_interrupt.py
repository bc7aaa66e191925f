"""Ctrl-C and engine death mid-run: processes gone, measured turns kept, the cause said."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.results.reading import read_turn_table
from tests.e2e.conftest import engine_processes, summary

pytestmark = pytest.mark.e2e


def start_run(out: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "repro", "run", "--sessions", "12", "--context-max", "40000",
            "--out", str(out), *extra]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_turns(
    out: Path, at_least: int, timeout_s: float = 90, process: subprocess.Popen[str] | None = None
) -> None:
    """Until turns.parquet holds `at_least` rows; fails at once, with its stderr, if the
    run (`process`) ended first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        path = out / "turns.parquet"
        if path.exists() and read_turn_table(path, ["turn"]).num_rows >= at_least:
            return
        if process is not None and process.poll() is not None:
            stderr = process.communicate()[1] or ""  # None when it writes to a terminal
            raise AssertionError(f"the run ended ({process.returncode}) first: {stderr[-2000:]}")
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} turns in {timeout_s} s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_finished_turns_and_kills_every_engine(
    tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "run"
    process = start_run(out)
    wait_for_turns(out, 12, process=process)
    roles = json.loads((out / "spec.json").read_text())["roles"]
    assert len(engine_processes(out)) == 3
    process.send_signal(sig)
    sent = time.monotonic()
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - sent < 10
    assert process.returncode == 130, stderr
    assert engine_processes(out) == [] and len(roles) == 3
    s = summary(out)
    assert s["interrupted"] is True and s["turns"] >= 12
    assert read_turn_table(out / "turns.parquet", ["turn"]).num_rows >= s["turns"]
    assert "interrupted" in stderr


def test_engine_death_mid_run_is_an_engine_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_run(out)
    wait_for_turns(out, 6, process=process)
    decode = next(
        r for r in json.loads((out / "spec.json").read_text())["roles"] if r["name"] == "decode"
    )
    (pid,) = [
        p
        for p in engine_processes(out)
        if f"--port\0{decode['port']}\0" in Path(f"/proc/{p}/cmdline").read_text()
    ]
    os.kill(pid, signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "The decode engine process was killed by signal 9 during the run" in stderr
    s = summary(out)
    assert s["error"].startswith("The decode engine process was killed") and s["turns"] >= 6
    assert engine_processes(out) == []
