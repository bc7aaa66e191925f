"""Preflight of the Slurm side: the client commands exist, the controller answers, and the
partition (or the job repro runs inside) has the nodes the placement asks for."""

from __future__ import annotations

from dataclasses import dataclass

from repro.errors import UsageError
from repro.harness.launch.placement import PlacementSpec
from repro.harness.launch.slurm import commands
from repro.harness.launch.slurm.allocation import inside, outer_job
from repro.spec import RunSpec

# sinfo's short states a job can start on (busy ones free up). A trailing * is "not
# responding"; ~ # % ! $ @ ^ - mark power saving, reboots and plans, not unusability.
USABLE = ("idle", "alloc", "mix", "comp", "plnd")


@dataclass(frozen=True, slots=True)
class NodeState:
    node: str
    partition: str  # without the default marker
    default: bool
    state: str

    @property
    def usable(self) -> bool:
        return not self.state.endswith("*") and self.state.rstrip("~#%!$@^-") in USABLE


def parse_sinfo(text: str) -> list[NodeState]:
    """`sinfo -h -N -o '%N|%P|%t'` lines: one per node and partition."""
    states = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            node, partition, state = parts
            states.append(NodeState(node, partition.rstrip("*"), partition.endswith("*"), state))
    return states


def check_slurm(
    spec: RunSpec, placement: PlacementSpec, topology: str, at_least: int = 0
) -> list[str]:
    """One line per thing checked; a UsageError naming the first problem. `at_least`: the
    nodes a bisect slot asks for (its widest placement), if more than this one needs."""
    missing = commands.missing_commands()
    if missing:
        raise UsageError(
            f"--launcher slurm needs Slurm's client commands, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not on PATH (Debian: slurm-client)."
        )
    version = commands.slurm("sinfo", "--version").strip()
    lines = [f"slurm: {', '.join(commands.CLIENT_COMMANDS)} found ({version})"]
    wanted = max(placement.nodes, spec.nodes or 0, at_least)
    where = ", ".join(f"{role} on node {n}" for role, n in placement.roles.items())
    lines.append(f"slurm: the {topology} placement needs {placement.nodes} node(s): {where}")
    job = outer_job()
    if job is not None:
        allocation = inside(job, spec, placement)
        return [*lines, f"slurm: inside job {job}, on {', '.join(allocation.nodes)}"]
    states = parse_sinfo(commands.slurm("sinfo", "--noheader", "--Node", "--format", "%N|%P|%t"))
    partitions = sorted({s.partition for s in states})
    name = spec.partition or next((s.partition for s in states if s.default), None)
    if name is None:
        raise UsageError(
            f"Slurm has no default partition; name one with --partition ({', '.join(partitions)})."
        )
    if name not in partitions:
        raise UsageError(
            f"Slurm has no partition '{name}'; its partitions are: {', '.join(partitions) or 'none'}."
        )
    nodes = [s for s in states if s.partition == name]
    usable = [s for s in nodes if s.usable]
    if len(nodes) < wanted:
        why = " (--nodes)" if spec.nodes == wanted > placement.nodes else ""
        why = why or (" (the widest placement)" if wanted > placement.nodes else "")
        raise UsageError(
            f"Partition {name} has {len(nodes)} node(s); the {topology} placement needs "
            f"{wanted}{why}."
        )
    if len(usable) < wanted:
        down = ", ".join(f"{s.node} {s.state}" for s in nodes if not s.usable)
        raise UsageError(
            f"Partition {name} has only {len(usable)} usable node(s) of {len(nodes)} ({down}); "
            f"the {topology} placement needs {wanted}."
        )
    return [*lines, f"slurm: partition {name}: {len(usable)} of {len(nodes)} node(s) usable"]
