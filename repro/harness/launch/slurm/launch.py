"""--launcher slurm: each role is a job step (`srun`) on the node its placement names.

The allocation comes first (its nodes decide the roles' addresses), then free ports are
found on each node by a short step, then the plan is built with each role's node address
in {host} and the role URLs. Each role's argv runs under `srun --jobid J --nodelist NODE`;
srun forwards the role's output to logs/<role>.log on this host (no shared file system is
needed for logs), and the local launcher starts, probes and watches the srun processes as
it does any role. On the way out the steps are cancelled with scancel, then the srun
processes are stopped, then (if repro made it) the allocation is given back.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import anyio

from repro.errors import EngineError, UsageError
from repro.harness.launch.launcher import Deployment
from repro.harness.launch.placement import PlacementSpec
from repro.harness.launch.plan import LaunchPlan, build_plan
from repro.harness.launch.profile import Profile
from repro.harness.launch.slurm import commands
from repro.harness.launch.slurm.allocation import (
    QUEUE_POLL_S,
    RELEASE_TIMEOUT_S,
    AllocationHolder,
    Status,
    wait_until,
)
from repro.harness.launch.slurm.preflight import check_slurm
from repro.ports import note_handed_out, recently_handed_out
from repro.spec import RunSpec

# Ports found free per role on its node: its own port plus extra ones (PD bootstrap,
# router metrics); a profile asking for more fails with a sentence, not a clash.
PORTS_PER_ROLE = 4
# One task per node, all in one step. Ports come from just below the node's ephemeral range:
# between the probe and the engine's bind, srun, slurmstepd and every outgoing connection
# take ephemeral ports, never these. Emulated nodes share one kernel, so a task keeps only
# ports p with p % nodes == its node's index: two nodes are never handed the same port.
PORT_PROBE = """
import json, os, random, socket, sys
ask = json.loads(sys.argv[1])
node = os.environ["SLURMD_NODENAME"]
index, nodes = int(os.environ["SLURM_NODEID"]), int(os.environ["SLURM_STEP_NUM_NODES"])
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError):
    low = 32768
below = [p for p in range(max(1024, low - 12000), low) if p % nodes == index]
random.shuffle(below)
held, ports = [], []
for port in below + [0] * ask["count"][node]:  # port 0: the kernel's pick, as a last resort
    if len(ports) == ask["count"][node]:
        break
    if port in ask["avoid"]:
        continue
    s = socket.socket()
    try:
        s.bind((ask["address"][node], port))
    except OSError:
        s.close()
        continue
    held.append(s)  # held open together: each port handed out once
    ports.append(s.getsockname()[1])
print("REPRO-PORTS", node, *ports, flush=True)
"""
_tags = itertools.count(1)
_PROBING = threading.Lock()


class NodeAddresses:
    """Each role's node address, and ports found free on that node (plan.Addresses)."""

    def __init__(self, hosts: Mapping[str, str], ports: Mapping[str, list[int]]) -> None:
        self._hosts, self._ports = dict(hosts), dict(ports)

    def host(self, role: str) -> str:
        return self._hosts[role]

    def ports(self, role: str, count: int) -> list[int]:
        if count > len(self._ports[role]):
            raise UsageError(
                f"Role '{role}' needs {count} ports; --launcher slurm finds {PORTS_PER_ROLE} "
                "per role on its node."
            )
        return self._ports[role][:count]


def probe_ports(
    job_id: str, addresses: Mapping[str, str], counts: Mapping[str, int], avoid: set[int]
) -> dict[str, list[int]]:
    """Free ports on each node's address, asked of each node's own kernel by one short step."""
    ask = {"address": dict(addresses), "count": dict(counts), "avoid": sorted(avoid)}
    out = commands.slurm(
        "srun", f"--jobid={job_id}", f"--nodes={len(counts)}", f"--ntasks={len(counts)}",
        "--ntasks-per-node=1", f"--nodelist={','.join(counts)}", "--overlap", "--input=none",
        "--job-name=repro.ports", "python3", "-c", PORT_PROBE, json.dumps(ask),
        timeout_s=120,
    )  # fmt: skip
    found = {}
    for line in out.splitlines():
        if line.startswith("REPRO-PORTS "):
            _, node, *ports = line.split()
            found[node] = [int(p) for p in ports]
    if set(found) != set(counts):
        raise EngineError(
            f"The port probe on {', '.join(counts)} answered for {', '.join(found) or 'none'}: "
            f"{out.strip()[-200:]!r}."
        )
    return found


def _probe_in_turn(
    job_id: str, addresses: Mapping[str, str], counts: Mapping[str, int]
) -> dict[str, list[int]]:
    """One probe at a time in this process (deployments of --parallel start together), each
    avoiding every port the ones before it handed out."""
    with _PROBING:
        ports = probe_ports(job_id, addresses, counts, recently_handed_out())
        for found in ports.values():
            note_handed_out(found)
        return ports


async def find_addresses(job_id: str, role_node: Mapping[str, str]) -> NodeAddresses:
    """Each role's node address and PORTS_PER_ROLE ports free there, avoiding every port this
    process handed out lately (another deployment's, on emulated nodes one kernel)."""
    nodes = list(dict.fromkeys(role_node.values()))
    addresses = await anyio.to_thread.run_sync(commands.node_addresses, nodes)
    roles_on = {node: [r for r, n in role_node.items() if n == node] for node in nodes}
    counts = {node: PORTS_PER_ROLE * len(roles) for node, roles in roles_on.items()}
    ports = await anyio.to_thread.run_sync(_probe_in_turn, job_id, addresses, counts)
    found: dict[str, list[int]] = {}
    for node, roles in roles_on.items():
        for i, role in enumerate(roles):
            found[role] = ports[node][i * PORTS_PER_ROLE : (i + 1) * PORTS_PER_ROLE]
    hosts = {role: addresses[node] for role, node in role_node.items()}
    return NodeAddresses(hosts, found)


def step_prefix(job_id: str, node: str, name: str, extra: Sequence[str]) -> tuple[str, ...]:
    """srun for one role: one task on its node, sharing the node with the other roles' steps
    (--overlap: a router beside decode, or a slot's roles on a node another step holds)."""
    return (
        "srun", f"--jobid={job_id}", "--nodes=1", "--ntasks=1", f"--nodelist={node}",
        f"--job-name={name}", "--overlap", "--input=none", *extra,
    )  # fmt: skip


def on_steps(
    plan: LaunchPlan, job_id: str, role_node: Mapping[str, str], placement: PlacementSpec, tag: str
) -> LaunchPlan:
    roles = tuple(
        replace(
            role,
            argv=(
                *step_prefix(
                    job_id,
                    role_node[role.name],
                    f"{tag}.{role.name}",
                    placement.step_args.get(role.name, ()),
                ),
                *role.argv,
            ),
        )
        for role in plan.roles
    )
    return replace(plan, roles=roles)


def describe_placement(profile: Profile, topology: str) -> list[str]:
    """Dry-run notes: where each role would run (nodes are known only once allocated)."""
    placement = profile.placement_for(topology)
    notes = [f"--launcher slurm: an allocation of {placement.nodes} node(s)"]
    if placement.alloc_args:
        notes[0] += f" with {' '.join(placement.alloc_args)}"
    for role, node in placement.roles.items():
        extra = " ".join(placement.step_args.get(role, ()))
        notes.append(
            f"{role}: srun --jobid=JOB --nodelist=<node {node}> --overlap {extra}".rstrip()
            + " ... (the argv below, with {host} and ports from that node)"
        )
    if placement.settings:
        settings = ", ".join(f"{k}={v}" for k, v in placement.settings.items())
        notes.append(f"the placement sets {settings} (--set wins)")
    return notes


def _step_ids(job_id: str, tag: str) -> list[str]:
    return [s.step_id for s in commands.job_steps(job_id) if s.name.startswith(f"{tag}.")]


async def _stop_steps(job_id: str, tag: str, deployment: Deployment) -> None:
    """scancel this deployment's steps, let their srun processes end, then make sure."""
    ours = await anyio.to_thread.run_sync(_step_ids, job_id, tag)
    await anyio.to_thread.run_sync(lambda: commands.cancel(*ours))
    await wait_until(
        lambda: all(r.exit_code is not None for r in deployment.roles),
        deployment.plan.stop_timeout_s,
    )
    await deployment.stop()  # srun processes that did not end: SIGTERM, then SIGKILL
    await wait_until(lambda: not _step_ids(job_id, tag), RELEASE_TIMEOUT_S, QUEUE_POLL_S)


def _record(
    job_id: str, own: bool, tag: str, deployment: Deployment, role_node: Mapping[str, str]
) -> dict[str, object]:
    ours = f"{tag}."
    steps = {
        s.name[len(ours) :]: s.step_id
        for s in commands.job_steps(job_id)
        if s.name.startswith(ours)
    }
    roles = {}
    for role in deployment.plan.roles:
        roles[role.name] = {
            "node": role_node[role.name],
            "address": role.host,
            "port": role.port,
            "job_id": job_id,
            "step_id": steps.get(role.name),
            "log": f"{role.name}.log",
        }
    return {"launcher": "slurm", "job_id": job_id, "own_allocation": own, "roles": roles}


@contextlib.asynccontextmanager
async def deploy_on_slurm(
    profile: Profile,
    spec: RunSpec,
    config: dict[str, str],
    logs_dir: Path,
    holder: AllocationHolder | None = None,
    status: Status | None = None,
) -> AsyncIterator[tuple[Deployment, dict[str, object]]]:
    """Start the configuration's roles as steps; yield once every role is healthy, with the
    record of where each runs. `holder` keeps the allocation for later deployments; without
    one, the allocation lives as long as this deployment."""
    say = status or (lambda _: None)
    topology = config["topology"]
    placement = profile.placement_for(topology)
    owner, holder = holder is None, holder or AllocationHolder(spec)
    logs_dir.mkdir(parents=True, exist_ok=True)
    try:
        if holder.current is None:  # nothing submitted yet: check first, fail in a second
            await anyio.to_thread.run_sync(check_slurm, spec, placement, topology, holder.width)
        allocation = await holder.get(placement, logs_dir / "salloc.log", say)
        role_node = {r: allocation.nodes[n - 1] for r, n in placement.roles.items()}
        addresses = await find_addresses(allocation.job_id, role_node)
        placed = spec.model_copy(update={"settings": placement.settings | spec.settings})
        plan = build_plan(profile, placed, config, addresses)
        tag = f"repro.{os.getpid()}-{next(_tags)}"
        deployment = Deployment(
            on_steps(plan, allocation.job_id, role_node, placement, tag), logs_dir
        )
        try:
            say(
                f"starting {', '.join(placement.roles)} as steps of Slurm job "
                f"{allocation.job_id} on {', '.join(dict.fromkeys(role_node.values()))}"
            )
            await deployment.start()
            record = await anyio.to_thread.run_sync(
                _record, allocation.job_id, allocation.own, tag, deployment, role_node
            )
            (logs_dir / "placement.json").write_text(json.dumps(record, indent=2))
            yield deployment, record
        finally:
            with anyio.CancelScope(shield=True):
                await _stop_steps(allocation.job_id, tag, deployment)
    finally:
        if owner:
            await holder.aclose()
