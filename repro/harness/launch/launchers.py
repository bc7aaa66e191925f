"""Which launcher starts a plan's roles, chosen by --launcher: local child processes
(launcher.py) or Slurm job steps (slurm/). Both yield a Deployment, and a record of where
each role runs that spec.json keeps."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from repro.harness.launch.launcher import Deployment, launch
from repro.harness.launch.plan import LaunchPlan, build_plan
from repro.harness.launch.profile import Profile
from repro.spec import RunSpec

if TYPE_CHECKING:
    from repro.harness.launch.slurm import AllocationHolder


@dataclass(frozen=True)
class Deployed:
    deployment: Deployment
    placement: dict[str, object]  # where each role runs (host or node, pid or Slurm step)


def plan_for(profile: Profile, spec: RunSpec, config: dict[str, str]) -> LaunchPlan:
    """The plan as checked and shown before launch (dry run, preflight). With Slurm the
    real one is built once nodes are allocated; this one has the placement's settings, and
    notes that say where each role will run."""
    if spec.launcher != "slurm":
        return build_plan(profile, spec, config)
    from repro.harness.launch.slurm import describe_placement

    placement = profile.placement_for(config["topology"])
    spec = spec.model_copy(update={"settings": placement.settings | spec.settings})
    plan = build_plan(profile, spec, config)
    notes = describe_placement(profile, config["topology"])
    return replace(plan, notes=(*plan.notes, *notes))


def check_launcher(spec: RunSpec, profile: Profile, config: dict[str, str]) -> list[str]:
    """What the launcher needs, checked before anything starts; one line per check."""
    if spec.launcher != "slurm":
        return []
    from repro.harness.launch.slurm import check_slurm

    topology = config["topology"]
    return check_slurm(spec, profile.placement_for(topology), topology)


@contextlib.asynccontextmanager
async def deploy(
    spec: RunSpec,
    profile: Profile,
    plan: LaunchPlan,
    logs_dir: Path,
    *,
    allocations: AllocationHolder | None = None,
    status: Callable[[str], None] | None = None,
) -> AsyncIterator[Deployed]:
    """Start the roles with the spec's launcher; yield once all are healthy; always stop."""
    if spec.launcher == "slurm":
        from repro.harness.launch.slurm import deploy_on_slurm

        async with deploy_on_slurm(profile, spec, plan.config, logs_dir, allocations, status) as (
            deployment,
            record,
        ):
            yield Deployed(deployment, record)
        return
    async with launch(plan, logs_dir) as deployment:
        host = socket.gethostname()
        roles = {
            r.plan.name: {"host": host, "pid": getattr(r, "pid", None)} for r in deployment.roles
        }
        yield Deployed(deployment, {"launcher": "local", "roles": roles})
