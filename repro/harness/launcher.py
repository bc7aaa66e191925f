"""Start a LaunchPlan's processes, wait until each answers, watch them, and always tear down.

Each role runs in its own process group with its output in `logs/<role>.log`. Teardown
(SIGTERM to the group, then SIGKILL after the profile's stop timeout) runs on every exit
path: normal end, error, cancellation (Ctrl-C, SIGTERM) and interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx

from repro.errors import EngineError
from repro.harness.plan import LaunchPlan, RolePlan

HEALTH_POLL_S = 0.2
WATCH_POLL_S = 0.25
LOG_TAIL_LINES = 15

# Process groups still alive, killed at interpreter exit if a teardown never ran (a crash in
# repro itself); a safety net under the normal teardown, not the mechanism.
_live_groups: set[int] = set()


@atexit.register
def kill_leftover_groups() -> None:
    for pgid in list(_live_groups):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    _live_groups.clear()


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it if repro dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class RoleProcess:
    """One started role: its process, its log, and how to describe its death."""

    def __init__(self, plan: RolePlan, logs_dir: Path) -> None:
        self.plan = plan
        self.log_path = logs_dir / f"{plan.name}.log"
        with self.log_path.open("ab") as log:
            log.write(f"# argv: {' '.join(plan.argv)}\n# env: {plan.env}\n".encode())
            log.flush()
            try:
                self.process = subprocess.Popen(
                    plan.argv,
                    env=os.environ | plan.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            except OSError as exc:
                raise EngineError(
                    f"Cannot start the {plan.name} role ({plan.argv[0]}): {exc.strerror}."
                ) from None
        _live_groups.add(self.process.pid)

    @property
    def exit_code(self) -> int | None:
        return self.process.poll()

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        kept = [line for line in text.splitlines() if not line.startswith("# ")]
        return "\n".join(f"    {line}" for line in kept[-lines:]) or "    (the log is empty)"

    def death(self, when: str) -> EngineError:
        code = self.exit_code
        how = (
            f"was killed by signal {-code}"
            if code is not None and code < 0
            else f"exited with code {code}"
        )
        return EngineError(
            f"The {self.plan.name} engine process {how} {when}; the last lines of {self.log_path}:\n{self.tail()}"
        )

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)


class Deployment:
    """The running roles of one plan; `entry_url` is where clients connect."""

    def __init__(self, plan: LaunchPlan, logs_dir: Path) -> None:
        self.plan = plan
        self.logs_dir = logs_dir
        self.roles: list[RoleProcess] = []

    @property
    def entry_url(self) -> str:
        return self.plan.entry_url

    async def start(self) -> None:
        """Start workers together, then the entry role once they answer (a router needs them)."""
        workers = [r for r in self.plan.roles if r.name != self.plan.entry]
        entry = [r for r in self.plan.roles if r.name == self.plan.entry]
        for wave in (workers, entry):
            started = [self._start(role) for role in wave]
            async with anyio.create_task_group() as group:
                for role in started:
                    group.start_soon(self._wait_healthy, role)

    def _start(self, plan: RolePlan) -> RoleProcess:
        role = RoleProcess(plan, self.logs_dir)
        self.roles.append(role)
        return role

    async def _wait_healthy(self, role: RoleProcess) -> None:
        deadline = time.monotonic() + self.plan.health_timeout_s
        async with httpx.AsyncClient(timeout=2.0, trust_env=False) as client:
            while True:
                if role.exit_code is not None:
                    raise role.death("before it became healthy")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(role.plan.health_url)).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise EngineError(
                        f"The {role.plan.name} engine did not become healthy at {role.plan.health_url} "
                        f"within {self.plan.health_timeout_s:g} s; the last lines of {role.log_path}:\n{role.tail()}"
                    )
                await anyio.sleep(HEALTH_POLL_S)

    def check(self) -> None:
        """Raise EngineError if any role has died."""
        for role in self.roles:
            if role.exit_code is not None:
                raise role.death("during the run")

    async def watch(self) -> None:
        """Return never; raise EngineError as soon as any role dies."""
        while True:
            self.check()
            await anyio.sleep(WATCH_POLL_S)

    async def stop(self) -> None:
        """SIGTERM every group, wait up to the stop timeout, then SIGKILL what is left."""
        for role in reversed(self.roles):
            role.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + self.plan.stop_timeout_s
        while any(r.exit_code is None for r in self.roles) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        for role in self.roles:
            role.signal_group(signal.SIGKILL)  # also reaps grandchildren left in the group
            with contextlib.suppress(subprocess.TimeoutExpired):
                role.process.wait(timeout=1.0)
            _live_groups.discard(role.process.pid)


@contextlib.asynccontextmanager
async def launch(plan: LaunchPlan, logs_dir: Path) -> AsyncIterator[Deployment]:
    """Start the plan; yield once every role is healthy; tear down on every way out."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    deployment = Deployment(plan, logs_dir)
    try:
        await deployment.start()
        yield deployment
    finally:
        with anyio.CancelScope(shield=True):
            await deployment.stop()
