"""repro owns every process it starts, however it ends: SIGKILL of repro with an engine
behind a wrapper shell or one that ignores SIGTERM (and leaves a daemon), a closed terminal
(SIGHUP), repeated signals, and a signal while a finished run tears down."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import termios
import threading
import time
from pathlib import Path

import pytest

from repro.results.reading import read_turn_table
from tests.e2e.conftest import repro, summary
from tests.e2e.leftovers import assert_none_left, cgroups_of, run_processes
from tests.e2e.runs import start_run, wait_for_turns

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ENGINES = Path(__file__).parent / "engines"
SHORT = ["--sessions", "12", "--context-max", "40000"]


def ignores_sigterm(pid: int) -> bool:
    mask = next(
        line.split()[1]
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("SigIgn:")
    )
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


@pytest.mark.parametrize("engine", ["wrapper", "stubborn"])
def test_sigkill_of_repro_leaves_no_process_and_keeps_the_turns(
    tmp_path: Path, engine: str
) -> None:
    out = tmp_path / "run"
    process = start_run(out, *SHORT, "--profile", str(ENGINES / f"{engine}.toml"))
    wait_for_turns(out, 12, process=process)
    before = run_processes(out)
    supervisor = next(p for p, cmd in before.items() if "repro.harness.launch.supervisor" in cmd)
    engine_pid = next(
        p
        for p, cmd in before.items()
        if not cmd.startswith("sh ") and ("repro.sim serve" in cmd or "stubborn_engine.py" in cmd)
    )
    assert len(before) == 3, before  # the supervisor, and two processes of the engine's own
    if engine == "wrapper":  # the shell forked the engine and stays its parent
        shell = next(p for p, cmd in before.items() if cmd.startswith("sh -c "))
        assert parent_of(engine_pid) == shell
    else:  # the engine ignores SIGTERM; its daemon left the group, re-parented to the supervisor
        daemon = next(p for p, cmd in before.items() if "stubborn-daemon" in cmd)
        assert ignores_sigterm(engine_pid) and ignores_sigterm(daemon)
        assert os.getpgid(daemon) != os.getpgid(engine_pid) and parent_of(daemon) == supervisor
    cgroups = cgroups_of(list(before))

    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=10)
    exited_at = time.monotonic()
    assert process.returncode == -signal.SIGKILL  # a shell reports 137

    assert_none_left(out, exited_at, after_s=3.0)
    assert not any(path.exists() for path in cgroups)
    assert read_turn_table(out / "turns.parquet").num_rows >= 12
    report = repro("report", str(out), "--json", timeout=60)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["turns"] >= 1


def test_a_closed_terminal_tears_down_and_writes_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "run"
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # repro's session gets the pty as its terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as a login shell leaves it, not nohup

    process = start_run(
        out,
        *SHORT,
        "--topology",
        "single",
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    shown = bytearray()
    reader = threading.Thread(target=_drain, args=(master, shown), daemon=True)
    reader.start()
    wait_for_turns(out, 12, process=process)
    os.close(master)  # the terminal goes away: the kernel sends SIGHUP to repro
    process.wait(timeout=30)
    exited_at = time.monotonic()
    assert process.returncode == 130
    s = summary(out)
    assert s["interrupted"] is True and s["turns"] >= 12
    assert b"Traceback" not in shown
    assert_none_left(out, exited_at)


def _drain(fd: int, into: bytearray) -> None:
    """Read the terminal's output so repro never blocks writing to it."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        into += chunk


def test_a_second_signal_kills_the_engine_at_once_and_is_still_130(tmp_path: Path) -> None:
    # The stubborn engine ignores SIGTERM: a teardown would wait its whole stop timeout, here
    # ten minutes, so a run that ends within the wait below was hurried by the second signal.
    stubborn = (ENGINES / "stubborn.toml").read_text()
    assert "stop_timeout_s = 6\n" in stubborn
    profile = tmp_path / "stubborn-slow-stop.toml"
    profile.write_text(stubborn.replace("stop_timeout_s = 6\n", "stop_timeout_s = 600\n"))
    out = tmp_path / "run"
    process = start_run(out, *SHORT, "--profile", str(profile))
    wait_for_turns(out, 6, process=process)
    process.send_signal(signal.SIGTERM)
    time.sleep(1.5)  # past the window in which a repeat counts as the same signal
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    exited_at = time.monotonic()
    assert process.returncode == 130, stderr
    assert summary(out)["interrupted"] is True and "Traceback" not in stderr
    assert_none_left(out, exited_at)


def test_a_signal_while_a_finished_run_tears_down_keeps_its_outcome(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_run(
        out, "--profile", str(ENGINES / "stubborn.toml"), "--sessions", "2", "--context-max", "8000"
    )
    deadline = time.monotonic() + 90
    while not (out / "summary.json").exists():  # the load is done; the teardown takes 6 s
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert summary(out)["interrupted"] is False
    assert "the run is complete; stopping the engine" in stdout
    assert_none_left(out, time.monotonic())
