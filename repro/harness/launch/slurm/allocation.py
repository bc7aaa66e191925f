"""A Slurm allocation for repro's roles: made with salloc, or the one repro runs inside.

An allocation repro makes lives exactly as long as repro's pipe to it. salloc runs `cat` on
that pipe; when repro ends in any way (even SIGKILL) the pipe closes, `cat` ends, and salloc
gives the allocation back, which ends every step in it. scancel does the same on purpose at
every ordinary exit. When salloc itself is killed too, Slurm's InactiveLimit or the time
limit (--time) is the last line.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from repro.errors import UsageError
from repro.harness.launch.placement import PlacementSpec
from repro.harness.launch.slurm import commands
from repro.spec import SLURM_OPTIONS, RunSpec

JOB_NAME = "repro"
READY = "REPRO-ALLOCATION"
# What salloc runs on the host repro runs on: say which job and nodes, then hold the
# allocation until repro's end of the pipe closes.
HOLD = f'echo "{READY} $SLURM_JOB_ID $SLURM_JOB_NODELIST"; exec cat >/dev/null'
POLL_S = 0.1
QUEUE_POLL_S = 0.5  # squeue asks slurmctld: a busy cluster's controller is not polled harder
RELEASE_TIMEOUT_S = 30.0
_PENDING = re.compile(r"(?:Pending job allocation|job) (\d+)")

Status = Callable[[str], None]


@dataclass
class Allocation:
    """A job whose nodes repro's steps run on; `own` if repro made it (and must end it)."""

    job_id: str
    nodes: list[str]
    alloc_args: tuple[str, ...]
    holder: subprocess.Popen[bytes] | None = None  # salloc, when repro made the job

    @property
    def own(self) -> bool:
        return self.holder is not None

    async def release(self) -> None:
        """End the job if repro made it, and wait until squeue no longer shows it."""
        if self.holder is None:
            return
        await anyio.to_thread.run_sync(commands.cancel, self.job_id)
        with contextlib.suppress(OSError):
            self.holder.stdin.close()  # type: ignore[union-attr]
        await _wait_exit(self.holder, RELEASE_TIMEOUT_S)
        await wait_until(
            lambda: not commands.job_listed(self.job_id), RELEASE_TIMEOUT_S, QUEUE_POLL_S
        )


def alloc_argv(spec: RunSpec, nodes: int, alloc_args: Sequence[str]) -> list[str]:
    """salloc's argv: the placement's node count (or --nodes) and the pass-through options."""
    argv = ["salloc", f"--nodes={max(nodes, spec.nodes or 0)}", f"--job-name={JOB_NAME}"]
    for option in ("--partition", "--account", "--time"):
        value = getattr(spec, SLURM_OPTIONS[option])
        if value is not None:
            argv.append(f"{option}={value}")
    return [*argv, *alloc_args, "sh", "-c", HOLD]


def outer_job() -> str | None:
    """The job repro runs inside (SLURM_JOB_ID), if any."""
    return os.environ.get("SLURM_JOB_ID") or None


async def allocate(
    spec: RunSpec,
    placement: PlacementSpec,
    log_path: Path,
    status: Status,
    slot: int = 0,
    width: int = 0,
) -> Allocation:
    """The job inside which repro runs (its share for deployment `slot`), or a new one from
    salloc (waiting in the queue), of `width` nodes if the placement needs fewer: a bisect
    slot asks once for the widest placement, not again when a trial needs more nodes."""
    job = outer_job()
    if job is not None:
        return await anyio.to_thread.run_sync(inside, job, spec, placement, slot, width)
    argv = alloc_argv(spec, max(placement.nodes, width), placement.alloc_args)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"# {' '.join(argv)}\n".encode())
        log.flush()
        try:
            holder = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                # Its own session: a Ctrl-C or a kill aimed at repro's process group must
                # not reach salloc first; repro ends it itself, or the closed pipe does.
                start_new_session=True,
            )
        except FileNotFoundError:
            commands.slurm("salloc")  # raises the one-sentence "not on PATH"
            raise
    granted = False
    try:
        line = await _read_grant(holder, log_path, status)
        _, job_id, nodelist = line.split()
        granted = True
        nodes = await anyio.to_thread.run_sync(commands.hostnames, nodelist)
        return Allocation(job_id, nodes, tuple(placement.alloc_args), holder)
    finally:
        if not granted:  # refused, interrupted while queued, or unreadable: take nothing
            with anyio.CancelScope(shield=True):
                await _abandon(holder, log_path)


def inside(
    job: str, spec: RunSpec, placement: PlacementSpec, slot: int = 0, width: int = 0
) -> Allocation:
    """The job repro runs inside, as deployment `slot` sees it: with --parallel, slot i gets
    nodes i*width+1 to (i+1)*width of it (width: the widest placement), so deployments
    running at once never share a node."""
    given = [o for o, f in SLURM_OPTIONS.items() if getattr(spec, f) is not None]
    if given:
        raise UsageError(
            f"repro runs inside Slurm job {job} (SLURM_JOB_ID) and uses its nodes; {given[0]} "
            "applies only to an allocation repro makes itself."
        )
    nodelist = (
        os.environ.get("SLURM_JOB_NODELIST")
        or commands.slurm("squeue", "--noheader", "--jobs", job, "--format", "%N").strip()
    )
    nodes = commands.hostnames(nodelist)
    width = max(width, placement.nodes)
    first = slot * width
    if len(nodes) < first + placement.nodes:
        need = (
            f"the placement needs {placement.nodes}"
            if slot == 0
            else f"deployment {slot + 1} of --parallel needs nodes {first + 1} to "
            f"{first + placement.nodes} of it ({width} per deployment)"
        )
        raise UsageError(
            f"Slurm job {job}, which repro runs inside, has {len(nodes)} node(s) "
            f"({', '.join(nodes)}); {need}."
        )
    return Allocation(job, nodes[first : first + width], tuple(placement.alloc_args))


def check_share(spec: RunSpec, placement: PlacementSpec, slot: int) -> None:
    """Inside a job, whether deployment `slot` has nodes of its own for the placement."""
    job = outer_job()
    if job is not None:
        inside(job, spec, placement, slot, placement.nodes)


async def _read_grant(holder: subprocess.Popen[bytes], log_path: Path, status: Status) -> str:
    """salloc's READY line; until then, say what the queue is doing."""
    assert holder.stdout is not None
    fd = holder.stdout.fileno()
    os.set_blocking(fd, False)
    buffered, said = b"", ""
    while True:
        with contextlib.suppress(BlockingIOError):
            buffered += os.read(fd, 4096)
        for line in buffered.decode(errors="replace").splitlines():
            if line.startswith(READY):
                return line
        if holder.poll() is not None:
            raise UsageError(f"Slurm did not grant the allocation: {_said(log_path)}")
        pending = _PENDING.findall(_log_text(log_path))
        if pending and not said:
            said = f"waiting for Slurm to grant job {pending[-1]} (queued; Ctrl-C gives it up)"
            status(said)
        await anyio.sleep(POLL_S)


async def _abandon(holder: subprocess.Popen[bytes], log_path: Path) -> None:
    """Give up a request that was never granted (or whose answer could not be read)."""
    pending = _PENDING.findall(_log_text(log_path))
    if pending:
        await anyio.to_thread.run_sync(commands.cancel, pending[-1])
    with contextlib.suppress(OSError):
        holder.stdin.close()  # type: ignore[union-attr]
    if holder.poll() is None:
        holder.terminate()  # salloc withdraws a queued request on SIGTERM
    await _wait_exit(holder, RELEASE_TIMEOUT_S)


async def _wait_exit(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    await wait_until(lambda: process.poll() is not None, timeout_s)
    if process.poll() is None:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
    if process.stdout is not None:
        process.stdout.close()


async def wait_until(done: Callable[[], bool], timeout_s: float, poll_s: float = POLL_S) -> bool:
    """Poll `done` (in a thread: it may ask Slurm) until it holds or the time is up."""
    deadline = time.monotonic() + timeout_s
    while not await anyio.to_thread.run_sync(done):
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(poll_s)
    return True


def _log_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _said(path: Path) -> str:
    """salloc's last error line, as a sentence."""
    lines = [ln for ln in _log_text(path).splitlines() if ln and not ln.startswith("# ")]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines
    said = (
        errors[-1].removeprefix("salloc: ").removeprefix("error: ") if errors else "no reason given"
    )
    return f"{said.rstrip('.')} (salloc's log: {path})."


class AllocationHolder:
    """At most one allocation, kept for successive deployments and grown when one needs more
    nodes: a bisect slot queues for its nodes once, not once per configuration."""

    def __init__(self, spec: RunSpec, slot: int = 0, width: int = 0) -> None:
        self.spec = spec
        self.slot, self.width = slot, width  # this deployment's share of an outer job
        self.current: Allocation | None = None

    async def get(self, placement: PlacementSpec, log_path: Path, status: Status) -> Allocation:
        current = self.current
        if (
            current is not None
            and current.own
            and len(current.nodes) >= placement.nodes
            and current.alloc_args == tuple(placement.alloc_args)
        ):
            return current
        await self.aclose()
        self.current = await allocate(self.spec, placement, log_path, status, self.slot, self.width)
        return self.current

    async def aclose(self) -> None:
        current, self.current = self.current, None
        if current is not None:
            with anyio.CancelScope(shield=True):
                await current.release()
