"""A role run on this host under its own supervisor (repro/harness/launch/supervisor.py).

The supervisor, not repro, is the engine's parent: it outlives repro long enough to stop
every process the role leads to, so a SIGKILL of repro leaves nothing behind. repro holds
the write end of one lifeline pipe per process; every supervisor watches its read end.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from repro.errors import EngineError, UsageError
from repro.harness.launch.plan import RolePlan
from repro.harness.launch.supervisor import kill_cgroup, remove_cgroup

HANDSHAKE_TIMEOUT_S = 10.0  # a supervisor answers in milliseconds; this bounds a broken one
REPORT_WAIT_S = 5.0  # the engine is gone and collected: its supervisor writes how it ended at
# once, but on a loaded machine "at once" can be seconds (waited only when the engine is dead)


def zombie_exit_code(pid: int) -> int | None:
    """How a process that exited but was not collected yet ended (Linux /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    if fields[0] != "Z" or len(fields) < 50:
        return None
    return os.waitstatus_to_exitcode(int(fields[49]))  # field 52: the wait status


_lifeline: tuple[int, int] | None = None
_live: set[LocalRole] = set()


def _lifeline_read_end() -> int:
    """The read end every supervisor watches. The write end stays open in this process only
    (close-on-exec, never passed on), so it closes exactly when repro ends, however it ends."""
    global _lifeline
    if _lifeline is None:
        _lifeline = os.pipe()
    return _lifeline[0]


def hurry_all() -> None:
    """Ask every live supervisor of this process to kill its role now (a second Ctrl-C)."""
    for role in list(_live):
        role.hurry()


class LocalRole:
    """One started role: its supervisor process, the engine's pid, and its log."""

    def __init__(self, plan: RolePlan, logs_dir: Path, stop_timeout_s: float) -> None:
        if missing := plan.missing_program():  # an environment not built yet: say how
            raise UsageError(missing)
        self.plan = plan
        self.log_path = logs_dir / f"{plan.name}.log"
        with self.log_path.open("ab") as log:
            log.write(f"# argv: {' '.join(plan.argv)}\n# env: {plan.env}\n".encode())
            log.flush()
            lifeline = _lifeline_read_end()
            argv = [sys.executable, "-m", "repro.harness.launch.supervisor", "--role", plan.name]
            argv += ["--log", str(self.log_path), "--lifeline", str(lifeline)]
            self.supervisor = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                pass_fds=(lifeline,),
                start_new_session=True,  # no terminal's Ctrl-C reaches it: repro decides
            )
        _live.add(self)
        job = {"argv": list(plan.argv), "env": os.environ | plan.env}
        answer = self._handshake(job | {"stop_timeout_s": stop_timeout_s})
        if "error" in answer:
            self.supervisor.wait()
            self._done()
            raise EngineError(
                f"Cannot start the {plan.name} role ({plan.argv[0]}): {answer['error']}."
            )
        self.pid: int = answer["pid"]
        self.cgroup = Path(answer["cgroup"]) if answer.get("cgroup") else None
        self._exit: int | None = None

    def _handshake(self, job: dict) -> dict:
        """Send the job; read the supervisor's one-line answer within a deadline."""
        assert self.supervisor.stdin is not None and self.supervisor.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self.supervisor.stdin.write(json.dumps(job).encode())
            self.supervisor.stdin.close()
        ready, _, _ = select.select([self.supervisor.stdout], [], [], HANDSHAKE_TIMEOUT_S)
        line = self.supervisor.stdout.readline() if ready else b""
        try:
            return json.loads(line)
        except ValueError:
            self.force()
            return {"error": "its supervisor did not answer; see the role's log"}

    @property
    def exit_code(self) -> int | None:
        """The engine's main process's, as soon as it has exited: a run that ends right after
        its engine died must not be taken for a complete one."""
        if self._exit is None:
            self._exit = self._engine_exit()
        return self._exit

    @property
    def stopped(self) -> bool:
        """Every process of the role is gone: the supervisor has finished and exited."""
        if self.supervisor.poll() is None:
            return False
        self._done()
        return True

    def _done(self) -> None:
        _live.discard(self)
        if self.supervisor.stdout is not None:
            self.supervisor.stdout.close()

    def _engine_exit(self) -> int | None:
        code = self.supervisor.poll()  # it exits as the engine did, after cleaning up
        if code is not None:
            self._done()
            return code
        zombie = zombie_exit_code(self.pid)  # dead, not yet collected by the supervisor
        if zombie is not None or Path(f"/proc/{self.pid}").exists() or not Path("/proc").exists():
            return zombie
        return self._reported_exit()  # collected: the supervisor says how it ended

    def _reported_exit(self) -> int | None:
        """The supervisor's {"exit": CODE} line, written as it collects the engine."""
        assert self.supervisor.stdout is not None
        if self.supervisor.stdout.closed:
            return None
        ready, _, _ = select.select([self.supervisor.stdout], [], [], REPORT_WAIT_S)
        if not ready:
            return None
        with contextlib.suppress(ValueError):
            return json.loads(self.supervisor.stdout.readline()).get("exit")
        return None

    def stop(self) -> None:
        """TERM, the profile's stop timeout, then KILL: every process of the role."""
        self._signal_supervisor(signal.SIGTERM)

    def hurry(self) -> None:
        """KILL every process of the role now."""
        self._signal_supervisor(signal.SIGINT)

    def force(self) -> None:
        """Last resort, when the supervisor did not finish in time: kill all from here."""
        self._signal_supervisor(signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError, AttributeError):
            os.killpg(self.pid, signal.SIGKILL)
        cgroup = getattr(self, "cgroup", None)
        if cgroup is not None:
            kill_cgroup(cgroup)
            remove_cgroup(cgroup)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.supervisor.wait(timeout=1.0)
        self._done()

    def _signal_supervisor(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.supervisor.send_signal(sig)
