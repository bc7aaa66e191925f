"""Fault injection against `repro` as a real process: hostile servers, a full disk, a paused repro.

Every case: no traceback, the documented exit code, every finished turn kept, and no
transport or protocol error counted as corruption.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from repro.results.reading import read_turn_table
from tests.e2e import sim_server
from tests.e2e.conftest import FAST, repro, summary
from tests.unit.harness.load.test_client import HOSTILE_EVENTS

pytestmark = pytest.mark.e2e


@contextmanager
def hostile(tmp_path: Path, *behaviours: str) -> Iterator[str]:
    port = sim_server.free_port()
    log = (tmp_path / "hostile.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.hostile_server", str(port), *behaviours],
        stdout=log,
        stderr=log,
        start_new_session=True,
        cwd=Path(__file__).resolve().parents[2],  # where `tests` is importable
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert server.poll() is None, (tmp_path / "hostile.log").read_text()
            try:
                httpx.get(f"{url}/v1/models", timeout=1.0)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the hostile server never listened"
                time.sleep(0.05)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        log.close()


def gate(url: str, out: Path, sessions: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return repro("gate", "--url", url, "--sessions", str(sessions), "--max-turns", "1",
                 "--ramp-up", "0", "--max-corruption", "0", "--out", str(out), *extra,
                 timeout=120)  # fmt: skip


def outcomes(out: Path) -> list[str]:
    return read_turn_table(out / "turns.parquet", ["outcome"]).column("outcome").to_pylist()


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr


def test_every_wrong_shape_is_a_protocol_error_saved_as_received(tmp_path: Path) -> None:
    bad = [json.dumps(event) for event, _ in HOSTILE_EVENTS.values()]
    bad += ["{'not': json}", '{"choices": [{"delta": {"content": "\\ud800"}}]}']
    behaviours = [b for event in bad for b in ("good", f"event:{event}")]
    out = tmp_path / "run"
    with hostile(tmp_path, *behaviours) as url:
        done = gate(url, out, len(behaviours), "--max-tokens", "77")
    assert_no_traceback(done)
    assert done.returncode == 2, done.stderr  # the run cannot vouch: turns failed
    s = summary(out)
    assert s["outcomes"] == {"ok": len(bad), "protocol_error": len(bad)}
    assert s["turns"] == len(bad) and s["turns_corrupted"] == 0 and s["errors"] == len(bad)
    assert sorted(outcomes(out)) == sorted(["ok"] * len(bad) + ["protocol_error"] * len(bad))
    saved = [json.loads(line) for line in (out / "protocol_errors.jsonl").read_text().splitlines()]
    assert sorted(line["event"] for line in saved) == sorted(bad)
    assert all("not valid JSON" in x["error"] or "schema" in x["error"] for x in saved)
    contents = read_turn_table(out / "turns.parquet", ["content", "outcome"]).to_pylist()
    assert {c["content"] for c in contents if c["outcome"] == "ok"} == {
        "All done. (max_tokens=77)"  # --max-tokens reached the request
    }


def test_resets_cut_streams_and_server_errors_are_errors_not_corruption(tmp_path: Path) -> None:
    behaviours = [
        "good", "reset", "good", 'raw:data: {"choices": [{"delta": {"cont',
        "good", "http500", "good", 'event:{"error": {"message": "overloaded"}}',
    ]  # fmt: skip
    out = tmp_path / "run"
    with hostile(tmp_path, *behaviours) as url:
        done = gate(url, out, len(behaviours))
    assert_no_traceback(done)
    assert done.returncode == 2
    s = summary(out)
    assert s["outcomes"] == {"http_error": 2, "ok": 4, "transport_error": 2}
    assert s["turns_corrupted"] == 0 and s["ended_because"] == "completed"
    assert len(outcomes(out)) == len(behaviours)


def test_a_server_that_goes_silent_is_a_wedge_and_keeps_the_finished_turns(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    with hostile(tmp_path, "good", "stall") as url:
        done = gate(url, out, 6, "--stall-after", "1")
    assert_no_traceback(done)
    assert done.returncode == 2 and "WEDGE" in done.stderr
    s = summary(out)
    assert s["ended_because"] == "wedged" and s["stalls"] == 1
    assert s["outcomes"] == {"ok": 3, "stalled": 3} and s["turns_corrupted"] == 0


def requests_running(url: str) -> int:
    """The engine's own count of requests in flight, as SGLang's /server_info gives it."""
    states = httpx.get(url + "/server_info", timeout=10).json()["internal_states"]
    return sum(state["num_running_reqs"] + state["num_queue_reqs"] for state in states)


@contextmanager
def running(*args: str) -> Iterator[subprocess.Popen[str]]:
    """repro as a real process, killed on the way out whatever the test saw."""
    process = subprocess.Popen(
        [sys.executable, "-m", "repro", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"COLUMNS": "200"},
    )
    try:
        yield process
    finally:
        process.kill()


def wait_for(predicate: object, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_stop_while_the_model_name_is_asked_still_leaves_a_summary(tmp_path: Path) -> None:
    # The readiness check and repro's probe get an answer; its question for the model's name
    # does not, so the stop comes after the engine is ready and before any session starts.
    out = tmp_path / "run"
    log = tmp_path / "hostile.log"
    with (
        hostile(tmp_path, "models-stall-after:2") as url,
        running(
            "run", "--url", url, "--sessions", "2", "--max-turns", "1", "--out", str(out)
        ) as process,
    ):
        wait_for(lambda: "stalling a /v1/models" in log.read_text(), "the model-name request")
        time.sleep(0.2)  # well inside the 10 s repro gives that request
        os.kill(process.pid, signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr and process.returncode == 130, stderr
    s = summary(out)
    assert s["interrupted"] is True and s["turns"] == 0


@pytest.mark.slow
def test_a_paused_repro_is_not_a_wedged_engine(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "run"
    with running("run", "--url", engine, "--sessions", "6", *FAST[:2], "--stall-after", "1.5",
                 "--out", str(out)) as process:  # fmt: skip
        wait_for(lambda: requests_running(engine) > 0, "a request in flight")
        os.kill(process.pid, signal.SIGSTOP)  # 4 s: past --stall-after and the idle limit (3 s)
        time.sleep(4.0)
        os.kill(process.pid, signal.SIGCONT)
        _, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr and process.returncode == 0, stderr
    s = summary(out)
    assert s["stalls"] == 0 and s["wedge"] is None and s["errors"] == 0, s["outcomes"]
    assert s["client_pauses"] >= 1 and s["client_paused_s"] >= 3.5
    assert s["ended_because"] == "completed" and s["turns"] >= 12


@contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of the disk, as another process writing logs would."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as sink:
        try:
            while True:
                sink.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI is root)")
def test_a_full_disk_stops_the_run_with_one_sentence_and_keeps_what_was_written(
    tmp_path: Path, engine: str
) -> None:
    with small_disk(tmp_path / "disk", "4m") as disk:
        out = disk / "run"
        with running("run", "--url", engine, "--sessions", "8", "--context-max", "60000",
                     "--out", str(out)) as process:  # fmt: skip
            first_part = out / "turns.parquet" / "part-000000.parquet"
            wait_for(first_part.exists, "the first part of turns.parquet")
            kept = read_turn_table(out / "turns.parquet", ["turn"]).num_rows
            filler = fill(disk)
            _, stderr = process.communicate(timeout=120)
        assert "Traceback" not in stderr and process.returncode == 2, stderr
        error_lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert len(error_lines) == 1 and "No space left on device" in error_lines[0]
        assert "summary.json says why" in error_lines[0]
        assert "Detail" not in error_lines[0]  # the system's words, not pyarrow's wrapping
        s = summary(out)  # written into the space reserved for it
        assert s["ended_because"] == "write_failed" and "No space left" in s["error"]
        on_disk = read_turn_table(out / "turns.parquet", ["turn"]).num_rows
        assert on_disk >= kept > 0 and s["turns"] + s["errors"] + s["cancelled"] == on_disk
        filler.unlink()
        report = repro("report", str(out), "--json", timeout=60)
        assert report.returncode == 0 and json.loads(report.stdout)["turns"] == s["turns"]
