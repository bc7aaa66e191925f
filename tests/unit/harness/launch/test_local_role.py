"""A role under its supervisor: its exit as the engine's own, a command that cannot start as
one sentence, and a stop that reaches processes which ignore SIGTERM or left the group."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from repro.errors import EngineError
from repro.harness.launch.local_role import LocalRole
from repro.harness.launch.plan import RolePlan

# Ignores SIGTERM, and starts a daemon (double fork, own session) that ignores it too; each
# writes its pid to the folder given, then both sleep.
STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
folder = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(os.path.join(folder, "daemon"), "w").write(str(os.getpid()))
        time.sleep(600)
    os._exit(0)
open(os.path.join(folder, "main"), "w").write(str(os.getpid()))
time.sleep(600)
"""


# A stop timeout no test waits for: a role that got it instead of a short grace fails the
# test's wait, so no test needs to time how long the stop took.
LONG_STOP_S = 600.0


def plan(*argv: str) -> RolePlan:
    return RolePlan("single", tuple(argv), {}, 0, "http://127.0.0.1:9/health", False)


def wait_exit(role: LocalRole, within_s: float) -> int:
    deadline = time.monotonic() + within_s
    while (code := role.exit_code) is None:
        assert time.monotonic() < deadline, f"the role did not end within {within_s} s"
        time.sleep(0.02)
    return code


def wait_stopped(role: LocalRole, within_s: float = 10) -> None:
    deadline = time.monotonic() + within_s
    while not role.stopped:
        assert time.monotonic() < deadline, f"the supervisor did not finish within {within_s} s"
        time.sleep(0.02)


def wait_for_pids(folder: Path) -> tuple[int, int]:
    """The pids STUBBORN wrote: its main process and its daemon."""
    deadline = time.monotonic() + 20
    while True:
        try:  # a file can exist before its pid is written
            return int((folder / "main").read_text()), int((folder / "daemon").read_text())
        except (OSError, ValueError):
            assert time.monotonic() < deadline, "the stubborn engine did not start"
            time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_role_exits_as_its_engine_did(tmp_path: Path) -> None:
    assert wait_exit(LocalRole(plan("sh", "-c", "exit 3"), tmp_path, 1.0), 10) == 3
    killed = LocalRole(plan("sh", "-c", "kill -9 $$"), tmp_path, 1.0)
    assert wait_exit(killed, 10) == -9


def test_a_command_that_cannot_start_is_one_sentence(tmp_path: Path) -> None:
    before = cgroups_made()
    with pytest.raises(EngineError) as refused:
        LocalRole(plan("/nonexistent/engine", "--port", "1"), tmp_path, 1.0)
    assert str(refused.value) == (
        "Cannot start the single role (/nonexistent/engine): No such file or directory."
    )
    assert cgroups_made() <= before  # the supervisor removed the cgroup it had made


def cgroups_made() -> set[Path]:
    from repro.harness.launch.supervisor import _cgroup2_mount

    mount = _cgroup2_mount()
    return set(mount.glob("**/repro-*-single")) if mount else set()


def test_stop_reaches_a_sigterm_ignoring_engine_and_its_daemon(tmp_path: Path) -> None:
    role = LocalRole(plan(sys.executable, "-c", STUBBORN, str(tmp_path)), tmp_path, 1.0)
    main, daemon = wait_for_pids(tmp_path)
    assert os.getpgid(daemon) != os.getpgid(main)  # the daemon left the role's process group
    started = time.monotonic()
    role.stop()
    assert wait_exit(role, 10) == -9  # SIGTERM was ignored: SIGKILL after the stop timeout
    assert time.monotonic() - started > 0.9  # not before it
    wait_stopped(role)  # the main process's exit is seen first; the daemon dies right after
    assert not alive(main) and not alive(daemon)


def test_hurry_kills_at_once(tmp_path: Path) -> None:
    role = LocalRole(plan(sys.executable, "-c", STUBBORN, str(tmp_path)), tmp_path, LONG_STOP_S)
    main, daemon = wait_for_pids(tmp_path)
    role.hurry()
    assert wait_exit(role, 10) == -9  # within 10 s: not the stop timeout
    wait_stopped(role)  # the main process's exit is seen first; the daemon dies right after
    assert not alive(main) and not alive(daemon)


def test_a_stop_that_races_the_engine_s_death_gets_the_short_grace(tmp_path: Path) -> None:
    """repro sees a killed engine as a zombie before the supervisor collects it, and asks it
    to stop: what the dead engine left (its daemon, ignoring SIGTERM) must not get the whole
    stop timeout (vLLM's engine core outlived its killed API server that way for 20 s)."""
    role = LocalRole(plan(sys.executable, "-c", STUBBORN, str(tmp_path)), tmp_path, LONG_STOP_S)
    main, daemon = wait_for_pids(tmp_path)
    supervisor = role.supervisor.pid
    os.kill(supervisor, signal.SIGSTOP)  # the stop request lands before the engine is collected
    try:
        os.kill(main, signal.SIGKILL)
        while alive(main):
            time.sleep(0.01)
        role.stop()
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert wait_exit(role, 20) == -9
    wait_stopped(role, 20)  # within 20 s: not the stop timeout
    assert not alive(daemon)


# Dies on SIGTERM at once, leaving a child (in its group) that ignores it: vLLM's API server
# and its engine core, which once orphaned ignored SIGTERM for the whole 20 s stop timeout.
LEAVES_A_CHILD = """
import os, signal, sys, time
folder = sys.argv[1]
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(os.path.join(folder, "daemon"), "w").write(str(os.getpid()))
    time.sleep(600)
open(os.path.join(folder, "main"), "w").write(str(os.getpid()))
time.sleep(600)
"""


def test_once_the_main_process_is_gone_its_leftovers_get_the_short_grace(tmp_path: Path) -> None:
    role = LocalRole(
        plan(sys.executable, "-c", LEAVES_A_CHILD, str(tmp_path)), tmp_path, LONG_STOP_S
    )
    _, child = wait_for_pids(tmp_path)
    role.stop()
    assert wait_exit(role, 20) == -15
    wait_stopped(role, 20)  # within 20 s: not the stop timeout
    assert not alive(child)
