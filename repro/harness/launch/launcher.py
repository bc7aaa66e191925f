"""Start a LaunchPlan's roles, wait until each answers, watch them, and always tear down.

What a role is lives behind the `Role` interface (start it, its log, its exit code, stop
it): `LocalRole` runs one on this host under a supervisor that survives repro; another
launcher (Slurm) can provide its own. Each role's output goes to `logs/<role>.log`.
Teardown runs on every exit path: normal end, error, cancellation (Ctrl-C, SIGTERM,
SIGHUP); and if repro itself dies, the supervisors tear down without it.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Protocol

import anyio
import httpx

from repro.errors import EngineError
from repro.harness.launch.local_role import LocalRole
from repro.harness.launch.plan import LaunchPlan, RolePlan

HEALTH_POLL_S = 0.2
WATCH_POLL_S = 0.25
LOG_TAIL_LINES = 15
STOP_SLACK_S = 2.0  # beyond the stop timeout: the supervisor's own KILL and reaping


class Role(Protocol):
    """One started role, however it was placed."""

    plan: RolePlan
    log_path: Path

    @property
    def exit_code(self) -> int | None:
        """None while its main process runs; then its exit code, or minus the signal."""

    @property
    def stopped(self) -> bool:
        """Every process of the role is gone."""

    def stop(self) -> None:
        """Ask every process of the role to stop: TERM, the stop timeout, then KILL."""

    def hurry(self) -> None:
        """Kill every process of the role now."""

    def force(self) -> None:
        """Last resort when stop() did not finish within the stop timeout and some slack."""


# How a role is started: plan, logs folder, stop timeout (s) -> a running Role.
RoleStarter = Callable[[RolePlan, Path, float], Role]


def tail(role: Role, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of the role's log, indented, without repro's own header lines."""
    try:
        text = role.log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "    (no log)"
    kept = [line for line in text.splitlines() if not line.startswith("# ")]
    if kept and _REFUSED_ARGUMENT.match(kept[-1]):
        # An engine's argument parser refused what it was given (e.g. --set time_scale=abc):
        # its last line says which and why; the usage text above it only hides that.
        kept = kept[-1:]
    return "\n".join(f"    {line}" for line in kept[-lines:]) or "    (the log is empty)"


# argparse's last line when it refuses the command line: "PROG: error: argument --x: ...".
_REFUSED_ARGUMENT = re.compile(r"^\S.*: error: (argument |unrecognized arguments|the following)")


def death(role: Role, when: str) -> EngineError:
    code = role.exit_code
    how = (
        f"was killed by signal {-code}"
        if code is not None and code < 0
        else f"exited with code {code}"
    )
    return EngineError(
        f"The {role.plan.name} engine process {how} {when}; the last lines of {role.log_path}:\n{tail(role)}"
    )


class Deployment:
    """The running roles of one plan; `entry_url` is where clients connect."""

    def __init__(
        self, plan: LaunchPlan, logs_dir: Path, start_role: RoleStarter = LocalRole
    ) -> None:
        self.plan = plan
        self.logs_dir = logs_dir
        self.start_role = start_role
        self.roles: list[Role] = []

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

    def _start(self, plan: RolePlan) -> Role:
        role = self.start_role(plan, self.logs_dir, self.plan.stop_timeout_s)
        self.roles.append(role)
        return role

    async def _wait_healthy(self, role: Role) -> None:
        deadline = time.monotonic() + self.plan.health_timeout_s
        async with httpx.AsyncClient(timeout=2.0, trust_env=False) as client:
            while True:
                if role.exit_code is not None:
                    raise death(role, "before it became healthy")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(role.plan.health_url)).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise EngineError(
                        f"The {role.plan.name} engine did not become healthy at {role.plan.health_url} "
                        f"within {self.plan.health_timeout_s:g} s; the last lines of {role.log_path}:\n{tail(role)}"
                    )
                await anyio.sleep(HEALTH_POLL_S)

    def check(self) -> None:
        """Raise EngineError if any role has died."""
        for role in self.roles:
            if role.exit_code is not None:
                raise death(role, "during the run")

    async def watch(self) -> None:
        """Return never; raise EngineError as soon as any role dies."""
        while True:
            self.check()
            await anyio.sleep(WATCH_POLL_S)

    async def stop(self) -> None:
        """Stop every role (entry first), within the stop timeout; force what is left."""
        for role in reversed(self.roles):
            role.stop()
        deadline = time.monotonic() + self.plan.stop_timeout_s + STOP_SLACK_S
        while not all(r.stopped for r in self.roles) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        for role in self.roles:
            if not role.stopped:
                role.force()

    def hurry(self) -> None:
        """Kill every role now (a second Ctrl-C); a running stop() then ends at once."""
        for role in self.roles:
            role.hurry()


@contextlib.asynccontextmanager
async def launch(
    plan: LaunchPlan, logs_dir: Path, start_role: RoleStarter = LocalRole
) -> AsyncIterator[Deployment]:
    """Start the plan (each role through `start_role`: on this host by default); yield once
    every role is healthy; tear down on every way out."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    deployment = Deployment(plan, logs_dir, start_role)
    try:
        await deployment.start()
        yield deployment
    finally:
        with anyio.CancelScope(shield=True):
            await deployment.stop()
