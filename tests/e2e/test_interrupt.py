"""Ctrl-C and engine death mid-run: processes gone, measured turns kept, the cause said."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from repro.results.reading import read_turn_table
from tests.e2e.conftest import engine_processes, summary
from tests.e2e.runs import start_run, wait_for_turns

pytestmark = pytest.mark.e2e

# Long enough to be mid-run when signalled (40k tokens: tens of seconds of load).
RUN = ("--sessions", "12", "--context-max", "40000")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_finished_turns_and_kills_every_engine(
    tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "run"
    process = start_run(out, *RUN)
    wait_for_turns(out, 12, process=process)
    roles = json.loads((out / "spec.json").read_text())["roles"]
    assert len(engine_processes(out)) == 3
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert engine_processes(out) == [] and len(roles) == 3
    s = summary(out)
    assert s["interrupted"] is True and s["turns"] >= 12
    assert read_turn_table(out / "turns.parquet", ["turn"]).num_rows >= s["turns"]
    assert "interrupted" in stderr


def test_engine_death_mid_run_is_an_engine_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_run(out, *RUN)
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
