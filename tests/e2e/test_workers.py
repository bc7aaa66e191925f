"""--workers: sessions shared over worker processes, one run folder, one verdict, one teardown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from repro.results.reading import read_turn_table
from tests.e2e.conftest import FAST, repro, summary
from tests.e2e.runs import wait_for_turns
from tests.e2e.test_hostile_servers import gate, hostile, wait_for

pytestmark = pytest.mark.e2e


def worker_processes(run_dir: Path) -> list[int]:
    """Worker processes of this test's run still alive: they inherit its REPRO_TEST_RUN."""
    mark = f"REPRO_TEST_RUN={run_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"repro.harness.load.worker" in argv and mark in env:
                found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_TEST_RUN", str(tmp_path / "run"))


def test_two_workers_share_the_sessions_and_write_one_run_folder(
    tmp_path: Path, engine: str
) -> None:
    out = tmp_path / "run"
    done = repro("run", "--url", engine, "--sessions", "6", "--workers", "2", *FAST[:2],
                 "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = summary(out)
    assert s["client_workers"] == 2 and s["sessions"] == 6 and s["errors"] == 0
    assert s["turns"] >= 18
    parts = sorted(p.name for p in (out / "turns.parquet").iterdir())
    assert {p[:8] for p in parts} == {"part-w00", "part-w01"}
    table = read_turn_table(out / "turns.parquet", ["session_id", "outcome"])
    assert sorted(set(table.column("session_id").to_pylist())) == list(range(6))
    assert table.num_rows == s["turns"] + s["errors"] + s["cancelled"] + s["aborted"]
    loads = [json.loads(line) for line in (out / "client_load.jsonl").read_text().splitlines()]
    assert {line["worker"] for line in loads} == {0, 1}
    # The summary's loop lag is both workers' together: its worst is the worst either saw.
    worst_ms = max(line["lag_max_ms"] for line in loads)
    assert abs(s["client_loop_lag_s"]["max"] * 1000 - worst_ms) < 0.1
    assert "over 2 workers" in done.stdout


def test_a_wedge_is_judged_over_every_worker(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with hostile(tmp_path, "good", "stall") as url:
        done = gate(url, out, 6, "--stall-after", "3", "--workers", "2")
    assert done.returncode == 2 and "WEDGE" in done.stderr and "Traceback" not in done.stderr
    s = summary(out)
    assert s["ended_because"] == "wedged" and s["stalls"] == 1 and s["client_workers"] == 2
    # Requests alternate good/stall as they arrive; a worker slow to start on a busy machine
    # may have sent nothing before the wedge stopped the run, so only the shape is fixed.
    assert set(s["outcomes"]) == {"ok", "stalled"} and s["outcomes"]["stalled"] >= 1
    assert worker_processes(out) == []


def streaming_over_two_workers(engine: str, out: Path) -> subprocess.Popen[str]:
    """A 40-session run over two workers, returned once both workers are up."""
    process = subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "--url", engine, "--sessions", "40",
         "--workers", "2", *FAST[:2], "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: (out / "spec.json").exists(), "the run to start")
        wait_for(lambda: len(worker_processes(out)) >= 2, "the workers to start")
    except BaseException:
        process.kill()
        raise
    return process


@pytest.mark.slow
def test_ctrl_c_stops_every_worker_and_keeps_what_they_measured(
    tmp_path: Path, engine: str
) -> None:
    out = tmp_path / "run"
    process = streaming_over_two_workers(engine, out)
    try:
        wait_for_turns(out, 1, process=process)  # sessions are streaming
        os.killpg(process.pid, signal.SIGINT)  # as a terminal does: the whole group
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    s = summary(out)
    assert s["interrupted"] and s["ended_because"] == "interrupted" and s["cancelled"] >= 1
    assert s["errors"] == 0 and s["client_workers"] == 2
    assert worker_processes(out) == []


@pytest.mark.slow
def test_a_worker_lost_mid_run_stops_the_others_and_says_so(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "run"
    process = streaming_over_two_workers(engine, out)
    try:
        wait_for_turns(out, 1, process=process)  # sessions are streaming
        os.kill(worker_processes(out)[0], signal.SIGKILL)  # as the OOM killer would
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 2 and "Traceback" not in stderr, stderr
    assert "Client worker" in stderr and "ended without finishing" in stderr
    s = summary(out)
    assert s["ended_because"] == "error" and "Client worker" in s["error"]
    assert worker_processes(out) == []
