"""The supervisor of one engine role: it starts the role's command and stops every process
that command leads to, when asked, when the command dies, and when repro dies (SIGKILL too).

repro starts one per role (`python -m repro.harness.launch.supervisor --role R --log PATH
--lifeline FD`) in a session of its own, sends the command as one JSON object on stdin,
and reads one JSON line back: {"pid": P, "cgroup": PATH-or-null} or {"error": SENTENCE};
if the engine later exits on its own, one more, {"exit": CODE}, before the cleanup.
Then the supervisor

- is a child subreaper (Linux), so a process that leaves its parent (a daemon's double
  fork, a shell that exits before its children) is re-parented to it, not to init;
- runs the command in a session and process group of its own, and in a cgroup of its own
  when the cgroup v2 hierarchy is writable (root, or a delegated subtree), which holds
  even processes that left both the group and the tree;
- stops them all on SIGTERM (TERM, up to `stop_timeout_s`, then KILL), at once on SIGINT,
  after a short grace when the command's main process exits, and after a short grace when
  the lifeline pipe reaches EOF: repro holds its only write end, so that happens however
  repro ends, SIGKILL included;
- exits with the command's own status (re-raising the signal that killed it), so repro
  describes the role's death as if the engine were its direct child.

Standard library only: it must start in milliseconds and keep working while repro is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05
ORPHAN_GRACE_S = 2.0  # repro is gone: nobody waits for a clean shutdown
LEFTOVER_GRACE_S = 1.0  # the main process exited: what it left behind gets this long
KILL_WAIT_S = 5.0  # after SIGKILL, only a process stuck in the kernel outlives this


def _prctl(option: int, value: int) -> bool:
    """prctl(2) through libc; False where there is none (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# -- cgroup v2 ---------------------------------------------------------------------------


def _cgroup2_mount() -> Path | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return Path(left.split(" ")[4])
    return None


def make_cgroup(name: str) -> Path | None:
    """A new cgroup beside this process's own (v2), or None where it cannot be made."""
    mount = _cgroup2_mount()
    if mount is None:
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        own = next(line[3:] for line in lines if line.startswith("0::"))
        path = mount / own.lstrip("/") / name
        path.mkdir()
    except (OSError, StopIteration):
        return None
    if not (path / "cgroup.procs").exists():  # not a cgroup v2 directory after all
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def cgroup_members(path: Path) -> set[int]:
    try:
        return {int(pid) for pid in (path / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def kill_cgroup(path: Path) -> None:
    """SIGKILL every process in the cgroup (cgroup.kill where the kernel has it, 5.14+)."""
    try:
        (path / "cgroup.kill").write_text("1")
        return
    except OSError:
        pass
    for pid in cgroup_members(path):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def remove_cgroup(path: Path, wait_s: float = 1.0) -> None:
    """Remove the (emptied) cgroup; the kernel may need a moment to see its last exit."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


# -- the process tree ------------------------------------------------------------------------


def _living_descendants(root: int) -> set[int]:
    """Processes below `root` that are not zombies, from /proc (none found without one)."""
    children: dict[int, list[int]] = {}
    try:
        entries = list(os.scandir("/proc"))
    except OSError:  # no /proc (macOS): the process group is all there is to go by
        return set()
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


class Supervision:
    """One command and everything it leads to."""

    def __init__(self, role: str, stop_timeout_s: float, lifeline: int) -> None:
        self.role = role
        self.stop_timeout_s = stop_timeout_s
        self.lifeline = lifeline
        self.parent = os.getppid()
        self.pid = 0
        self.status: int | None = None  # the main process's wait status, once reaped
        self.cgroup: Path | None = None
        self.requested: str | None = None  # "stop" or "now", from a signal

    def start(self, argv: list[str], env: dict[str, str], log_path: str) -> None:
        """Fork and exec the command; an exec failure raises OSError here, in the parent."""
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.cgroup = make_cgroup(f"repro-{os.getpid()}-{self.role}")
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        report_r, report_w = os.pipe()  # close-on-exec: EOF on a successful exec
        me = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: only async-signal-safe-ish steps, then exec
            try:
                os.setsid()
                if self.cgroup is not None:
                    (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # if the supervisor itself is killed
                if os.getppid() != me:
                    os._exit(1)
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                os.dup2(log_fd, 1)
                os.dup2(log_fd, 2)
                os.execvpe(argv[0], argv, env)
            except OSError as exc:
                os.write(report_w, str(exc.errno or errno.EIO).encode())
            finally:
                os._exit(127)
        os.close(report_w)
        os.close(log_fd)
        with os.fdopen(report_r, "rb") as report:
            failure = report.read()
        if failure:
            os.waitpid(pid, 0)
            if self.cgroup is not None:  # nothing ever ran in it
                remove_cgroup(self.cgroup)
            code = int(failure)
            raise OSError(code, os.strerror(code))
        self.pid = pid

    def orphaned(self, wait_s: float = 0.0) -> bool:
        """True once repro is gone: its lifeline reached EOF, or we were re-parented."""
        readable, _, _ = select.select([self.lifeline], [], [], wait_s)
        return bool(readable and not os.read(self.lifeline, 1)) or os.getppid() != self.parent

    def members(self) -> set[int]:
        """Every living process of the role: the tree below us, and the cgroup's."""
        found = _living_descendants(os.getpid())
        if self.cgroup is not None:
            found |= cgroup_members(self.cgroup)
        return found

    def signal_all(self, sig: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.pid, sig)  # the group first: it reaches even a process not found yet
        if sig == signal.SIGKILL and self.cgroup is not None:
            kill_cgroup(self.cgroup)
        for pid in self.members():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)

    def reap(self) -> None:
        """Collect every exited child (re-parented orphans too); note the main process's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.pid:
                self.status = status

    def wait_gone(self, seconds: float) -> None:
        """Wait up to `seconds` for every member to exit. A request to stop now, repro's death
        (then ORPHAN_GRACE_S at most) or the main process's exit (then LEFTOVER_GRACE_S more
        at most: vLLM's engine core ignores SIGTERM once its API server is gone) cuts it short."""
        started = time.monotonic()
        while True:
            self.reap()
            waited_s = time.monotonic() - started
            if self.status is not None:  # the main process is gone: nothing coordinates a
                seconds = min(seconds, waited_s + LEFTOVER_GRACE_S)  # clean shutdown any more
            if not self.members() or waited_s >= seconds or self.requested == "now":
                return
            if waited_s >= ORPHAN_GRACE_S and self.orphaned():
                return
            time.sleep(POLL_S)

    def stop(self, grace_s: float) -> None:
        """TERM everything, wait up to grace_s, then KILL what is left and reap it all."""
        if grace_s > 0:
            self.signal_all(signal.SIGTERM)
            self.wait_gone(grace_s)
        deadline = time.monotonic() + KILL_WAIT_S
        while True:
            self.signal_all(signal.SIGKILL)  # again each round: a fork may have raced the last
            self.reap()
            if not self.members() or time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
        self.reap()
        if self.cgroup is not None:
            remove_cgroup(self.cgroup)


def _exit_like(status: int | None) -> None:
    """Exit as the main process did: its code, or death by the same signal."""
    if status is None:
        sys.exit(0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    sys.exit(os.waitstatus_to_exitcode(status))


def _tell(message: dict, last: bool = False) -> None:
    """One JSON line to repro; repro may be gone already, which is no error here."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
        if last:
            sys.stdout.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="repro.harness.launch.supervisor")
    parser.add_argument("--role", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--lifeline", type=int, required=True)
    args = parser.parse_args(argv)
    job = json.loads(sys.stdin.read())
    os.set_inheritable(args.lifeline, False)  # the engine must not hold it
    supervision = Supervision(args.role, float(job["stop_timeout_s"]), args.lifeline)

    def on_signal(signum: int, frame: object) -> None:
        supervision.requested = "now" if signum == signal.SIGINT else "stop"

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        supervision.start(job["argv"], job["env"], args.log)
    except OSError as exc:
        _tell({"error": exc.strerror or str(exc)}, last=True)
        sys.exit(127)
    cgroup = str(supervision.cgroup) if supervision.cgroup else None
    _tell({"pid": supervision.pid, "cgroup": cgroup})

    orphaned = False
    while supervision.status is None and supervision.requested is None:
        if supervision.orphaned(POLL_S):
            orphaned = True
            break
        supervision.reap()
    if supervision.status is not None:  # the engine died on its own: say so before cleaning up
        _tell({"exit": os.waitstatus_to_exitcode(supervision.status)}, last=True)
    if supervision.requested == "now":
        grace_s = 0.0
    elif supervision.requested == "stop":
        grace_s = supervision.stop_timeout_s  # cut short if the main process exits (wait_gone)
    else:
        grace_s = min(supervision.stop_timeout_s, ORPHAN_GRACE_S if orphaned else LEFTOVER_GRACE_S)
    supervision.stop(grace_s)
    _exit_like(supervision.status)


if __name__ == "__main__":
    main()
