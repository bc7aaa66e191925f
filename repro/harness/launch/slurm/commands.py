"""Slurm's client commands, run and read: the only place repro talks to Slurm.

Slurm 22.05 (Debian 12) has no JSON for scontrol and ignores -j with `squeue --json`, so
the plain outputs are read, with explicit formats (shared/research/slurm.md).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from repro.errors import EngineError, UsageError

CLIENT_COMMANDS = ("salloc", "srun", "scancel", "squeue", "sinfo", "scontrol")
COMMAND_TIMEOUT_S = 30.0


def slurm(*args: str, timeout_s: float = COMMAND_TIMEOUT_S, check: bool = True) -> str:
    """Run one client command; its stdout. Any failure is one sentence with Slurm's own."""
    try:
        done = subprocess.run(
            args,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except FileNotFoundError:
        raise UsageError(
            f"Slurm's {args[0]} is not on PATH; --launcher slurm needs Slurm's client "
            "commands (Debian: slurm-client)."
        ) from None
    except subprocess.TimeoutExpired:
        raise EngineError(
            f"`{' '.join(args)}` did not answer within {timeout_s:g} s; is slurmctld up?"
        ) from None
    if check and done.returncode != 0:
        said = " | ".join((done.stderr or done.stdout).strip().splitlines()[-2:]) or "no output"
        raise EngineError(f"`{' '.join(args)}` failed (exit {done.returncode}): {said}.")
    return done.stdout


def missing_commands() -> list[str]:
    return [c for c in CLIENT_COMMANDS if shutil.which(c) is None]


def hostnames(nodelist: str) -> list[str]:
    """`n[1-3],gpu7` -> ['n1', 'n2', 'n3', 'gpu7'], expanded by Slurm itself."""
    return slurm("scontrol", "show", "hostnames", nodelist).split()


def node_addresses(nodes: Sequence[str]) -> dict[str, str]:
    """Each node's NodeAddr: where its roles listen and are reached."""
    text = slurm("scontrol", "-o", "show", "node", ",".join(nodes))
    fields = [dict(w.split("=", 1) for w in line.split() if "=" in w) for line in text.splitlines()]
    found = {f["NodeName"]: f.get("NodeAddr") or f["NodeName"] for f in fields if "NodeName" in f}
    return {node: found.get(node, node) for node in nodes}


@dataclass(frozen=True, slots=True)
class Step:
    step_id: str  # JOB.STEP
    name: str
    node: str


def job_steps(job_id: str) -> list[Step]:
    """The job's running steps (none once the job has ended)."""
    text = slurm("squeue", "--steps", "--noheader", "--jobs", job_id, "--format", "%i|%j|%N",
                 check=False)  # fmt: skip
    steps = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0].startswith(f"{job_id}."):
            steps.append(Step(*parts))
    return steps


def job_listed(job_id: str) -> bool:
    """Whether squeue still shows the job (pending, running or completing)."""
    return bool(slurm("squeue", "--noheader", "--jobs", job_id, "--format", "%i", check=False)
                .strip())  # fmt: skip


def cancel(*ids: str) -> None:
    """scancel jobs or steps (JOB.STEP); an id already gone is not an error."""
    if ids:
        slurm("scancel", "--quiet", *ids, check=False)
