"""What the client benches share: the stream server's lifecycle and control, CPU accounting of
a client's whole process tree, and writing a section of bench/RESULTS.md."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1]
REPO = BENCH_DIR.parent
PR_SET_CHILD_SUBREAPER = 36


@contextlib.contextmanager
def stream_server() -> Iterator[tuple[str, subprocess.Popen]]:
    """Start bench/peers/stream_server.py on a free port; yield its URL and process."""
    argv = [sys.executable, str(BENCH_DIR / "peers" / "stream_server.py"), "--port", "0"]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line.startswith("listening on "):
            sys.exit(f"the stream server did not start: {line!r}")
        yield line.split()[-1], server
    finally:
        server.terminate()
        server.wait(10)
        if server.stdout:
            server.stdout.close()


def control(url: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url + path, data=data), timeout=10) as r:
        return json.loads(r.read())


@dataclass(frozen=True)
class ClientRun:
    """One client process, run to its end: CPU of its whole tree (and the user-space part of
    it), wall time, exit code."""

    cpu_s: float
    wall_s: float
    returncode: int
    log: Path
    user_s: float


def become_subreaper() -> None:
    """Orphaned grandchildren (worker processes a client leaves) are reparented to us, so
    their CPU is collected too instead of vanishing into init."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_client(
    argv: list[str], log: Path, *, cwd: Path, env: dict[str, str], keep: set[int], timeout_s: float
) -> ClientRun:
    """Run argv to its end; CPU = user+system of it and every descendant it (or we) reaped.

    `keep` are our long-lived children (the server), never reaped here."""
    started = time.monotonic()
    with log.open("w") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                 start_new_session=True)  # fmt: skip
    deadline, status, usage = started + timeout_s, None, None
    while status is None:
        pid, status_, usage_ = os.wait4(child.pid, os.WNOHANG)
        if pid == child.pid:
            status, usage = status_, usage_
        elif time.monotonic() > deadline:
            os.killpg(child.pid, 9)
        else:
            time.sleep(0.05)
    child.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait for it again
    wall_s = time.monotonic() - started
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, 9)  # anything the client left running in its group
    orphans_user_s, orphans_system_s = _reap_orphans(keep)
    user_s = usage.ru_utime + orphans_user_s
    cpu_s = user_s + usage.ru_stime + orphans_system_s
    return ClientRun(cpu_s, wall_s, child.returncode, log, user_s)


def _reap_orphans(keep: set[int]) -> tuple[float, float]:
    """User and system CPU of reparented orphans that have exited (waits briefly for ones
    just killed)."""
    user_s, system_s, until = 0.0, 0.0, time.monotonic() + 1.0
    while time.monotonic() < until:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if not _has_children_besides(keep):
                break
            time.sleep(0.05)
            continue
        if pid not in keep:
            user_s += usage.ru_utime
            system_s += usage.ru_stime
    return user_s, system_s


def _has_children_besides(keep: set[int]) -> bool:
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[1] == me and int(stat.parent.name) not in keep:
                return True
    return False


@contextlib.contextmanager
def autogroup_nice(nice: int | None) -> Iterator[None]:
    """Run this session's processes at `nice` among the machine's sessions, then restore it.

    Linux shares the CPU fairly between sessions (autogroups) before nice counts, so on a
    machine shared with other people's work a client gets a fixed slice of a core however
    little it needs, and its event loop waits for the CPU in 100 ms steps: that is their
    load, not its lag. Needs root (or CAP_SYS_NICE) to raise; None leaves it alone."""
    path = Path("/proc/self/autogroup")
    if nice is None or not path.exists():
        yield
        return
    before = path.read_text().split()[-1]
    try:
        path.write_text(str(nice))
    except OSError as exc:
        sys.exit(f"Cannot set the session's CPU priority ({exc.strerror}); run without --boost.")
    try:
        yield
    finally:
        path.write_text(before)


def record_section(path: Path, name: str, section: str) -> None:
    """Append the table to the history file as a dated section (HISTORY.md keeps every
    measurement; bench/RESULTS.md's row for it is then updated by hand, with the command)."""
    import datetime

    day = datetime.date.today().isoformat()
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark history\n"
    block = f"## {day}: {name}\n\n<!-- {name}:{day} -->\n{section.rstrip()}\n"
    path.write_text(text.rstrip("\n") + "\n\n" + block, encoding="utf-8")
