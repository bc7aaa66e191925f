"""Each point's environment, built on demand by the user's command and kept in a cache.

An environment is a folder the build fills; the engine is launched with its `bin/python` as
the profile's `{python}` (what `--server-python` sets). The cache holds one entry per point
and build command: `<cache>/<kind>-<id>-<build digest>/` with

    env/          the environment (REPRO_BISECT_ENV points the build here)
    build.log     everything the build printed, kept whether it worked or not
    build.json    the outcome, written last: built, untestable (exit 125) or failed (exit N)

An entry without build.json was cut short (a kill mid-build) and is built again from scratch;
one with it is final: a rerun neither rebuilds a built environment nor retries a failed build
(delete the entry to do so). The build runs in its own process group, killed on any way out.

git bisect run's convention: the build exiting 125 means "this point cannot be tested"; any
other failure, or an exit 0 that left no interpreter, also skips the point. A skipped point
is reported with its log, never blamed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from repro.errors import UsageError

UNTESTABLE_EXIT = 125
ENV_VAR = "REPRO_BISECT_ENV"
# The build's shell dies with repro, even by SIGKILL (Linux's parent-death signal); what it
# started is found by its environment and killed when the next run starts (remove_unfinished).
_WITH_PARENT = (
    "import ctypes, os, sys\n"
    "try:\n    ctypes.CDLL(None, use_errno=True).prctl(1, 9)\nexcept (OSError, AttributeError):\n    pass\n"
    "os.execv('/bin/sh', ['/bin/sh', '-c', sys.argv[1]])"
)


@dataclass(frozen=True, slots=True)
class Built:
    """The outcome of a point's build: `python` is set when the environment is usable."""

    key: str
    status: str  # built | untestable | failed
    exit_code: int | None
    log: Path
    python: Path | None
    seconds: float
    reason: str = ""  # one sentence for a point that cannot be tested

    @property
    def ok(self) -> bool:
        return self.status == "built"


def build_digest(command: str) -> str:
    return hashlib.sha256(command.encode()).hexdigest()[:8]


class EnvironmentCache:
    """Environments under one folder; `ensure` builds what is missing, one build per key at a
    time; `drop` removes an environment and keeps its log and outcome."""

    def __init__(self, folder: Path, command: str, kind: str) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"Cannot create the environment cache {folder}: {exc.strerror}."
            ) from None
        self.folder = folder
        self.command = command
        self.kind = kind
        self.digest = build_digest(command)
        self._locks: dict[str, anyio.Lock] = {}

    def key(self, point_id: str) -> str:
        safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in point_id)
        return f"{self.kind}-{safe}-{self.digest}"

    def entry(self, point_id: str) -> Path:
        return self.folder / self.key(point_id)

    def known(self, point_id: str) -> Built | None:
        """The recorded outcome, if the build ran to its end before."""
        entry = self.entry(point_id)
        try:
            data = json.loads((entry / "build.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # damaged: built again
        python = entry / "env" / "bin" / "python"
        status = str(data.get("status", "failed"))
        if status == "built" and not python.exists():  # dropped, or removed by hand: rebuild
            return None
        return Built(
            self.key(point_id),
            status,
            data.get("exit_code"),
            entry / "build.log",
            python if status == "built" else None,
            float(data.get("seconds", 0.0)),
            str(data.get("reason", "")),
        )

    async def ensure(
        self,
        point_id: str,
        cwd: Callable[[], contextlib.AbstractAsyncContextManager[Path]],
        extra_env: Mapping[str, str],
    ) -> Built:
        """The point's environment, built now if the cache has none. `cwd` yields the folder
        the build runs in (a worktree of the commit, or a scratch folder) for its duration."""
        key = self.key(point_id)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            known = self.known(point_id)
            if known is not None:
                return known
            entry = self.entry(point_id)
            shutil.rmtree(entry, ignore_errors=True)  # a build cut short: start afresh
            entry.mkdir(parents=True)
            log = entry / "build.log"
            started = time.monotonic()
            async with cwd() as folder:
                code = await run_build(
                    self.command,
                    folder,
                    {**extra_env, ENV_VAR: str(entry / "env")},
                    log,
                )
            seconds = time.monotonic() - started
            python = entry / "env" / "bin" / "python"
            if code == 0 and python.exists():
                status, reason = "built", ""
            elif code == 0:
                status = "failed"
                reason = f"its build exited 0 but left no {python} (see {log})"
            elif code == UNTESTABLE_EXIT:
                status, reason = "untestable", f"its build exited 125: untestable (see {log})"
            else:
                said = _last_line(log)
                status = "failed"
                reason = (
                    f"its build failed with exit {code}{': ' + said if said else ''} (see {log})"
                )
            record = {
                "status": status,
                "exit_code": code,
                "seconds": round(seconds, 1),
                "command": self.command,
                "point": point_id,
                "reason": reason,
            }
            _write_json(entry / "build.json", record)
            return Built(
                key, status, code, log, python if status == "built" else None, seconds, reason
            )

    def drop(self, point_id: str) -> None:
        """Remove a built environment (its log and outcome stay: the point is not rebuilt for
        the trials already cached, only for new ones)."""
        shutil.rmtree(self.entry(point_id) / "env", ignore_errors=True)

    def remove_unfinished(self) -> list[Path]:
        """Entries a killed run left half-built (no build.json): whatever its build left
        running is killed, the entry removed, and named."""
        gone = []
        for entry in sorted(self.folder.glob(f"{self.kind}-*")):
            if entry.is_dir() and not (entry / "build.json").exists():
                _kill_builders(entry / "env")
                shutil.rmtree(entry, ignore_errors=True)
                gone.append(entry)
        return gone


async def run_build(command: str, cwd: Path, extra_env: Mapping[str, str], log: Path) -> int:
    """`command` through the shell in `cwd`, its output appended to `log`; its exit code. It
    runs in a process group of its own, killed (SIGTERM, then SIGKILL) if this is cancelled."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = os.environ | dict(extra_env)
    with log.open("ab") as out:
        out.write(f"$ {command}\n# in {cwd}\n".encode())
        out.flush()
        process = await anyio.open_process(
            [sys.executable, "-c", _WITH_PARENT, command],
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return await process.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await _kill_group(process.pid, process)  # and whatever it left running


async def _kill_group(pid: int, process: anyio.abc.Process) -> None:
    """SIGTERM to the build's group while it runs (then SIGKILL); SIGKILL to what it left."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        with anyio.move_on_after(5.0):
            await process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if process.returncode is None:
        await process.wait()


def _kill_builders(env: Path) -> None:
    """SIGKILL every process whose environment says it builds `env` (left by a killed run)."""
    marker = f"{ENV_VAR}={env}".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (proc / "environ").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue


def _last_line(log: Path, limit: int = 300) -> str:
    """The build's last words (a builder that says why in one sentence says it last)."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    said = next((line for line in reversed(lines) if line), "")
    if said.startswith(("# in ", "$ ")):  # the build printed nothing
        return ""
    return said[:limit]


def _write_json(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)
