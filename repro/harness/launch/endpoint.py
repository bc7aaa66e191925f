"""The engine a run drives, as an Endpoint: launched per the profile (and torn down on exit),
or the --url a user gave, probed before any load is sent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx

from repro.errors import EngineError
from repro.harness.launch.launcher import Deployment
from repro.harness.launch.launchers import deploy
from repro.harness.launch.plan import LaunchPlan
from repro.harness.launch.resolution import Resolved, resolve
from repro.spec import RunSpec

if TYPE_CHECKING:
    from repro.harness.launch.slurm import AllocationHolder


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    config: dict[str, str]
    engine: str
    deployment: Deployment | None = None
    plan: LaunchPlan | None = None
    placement: dict[str, object] = field(default_factory=dict)  # where each role runs


async def _probe(url: str) -> None:
    try:
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
            response = await client.get(f"{url}/v1/models")
    except httpx.HTTPError as exc:
        raise EngineError(
            f"Cannot reach {url} ({type(exc).__name__}); is the server running there?"
        ) from None
    if response.status_code != 200:
        raise EngineError(
            f"{url}/v1/models answered HTTP {response.status_code}; is it an OpenAI-compatible server?"
        )


@contextlib.asynccontextmanager
async def engine(
    spec: RunSpec,
    logs_dir: Path,
    resolved: Resolved | None = None,
    *,
    allocations: AllocationHolder | None = None,
    status: Callable[[str], None] | None = None,
) -> AsyncIterator[Endpoint]:
    """Yield a live Endpoint for the spec; whatever was launched is torn down on exit.

    With --launcher slurm, `allocations` keeps the Slurm allocation for the caller's next
    engine (a bisect slot); `status` hears what the launcher waits for (the queue)."""
    resolved = resolved or resolve(spec)
    spec = resolved.spec
    for url in spec.reference_urls:  # a wrong reference fails now, not after a model load
        await _probe(url)
    if resolved.plan is None:
        assert spec.url is not None
        await _probe(spec.url)
        yield Endpoint(spec.url, resolved.config, "external")
        return
    if any(resolved.profile.roles[role.name].preflight for role in resolved.plan.roles):
        # A bad flag must fail in seconds, before a model load that can take ten minutes.
        from repro.harness.launch.preflight import preflight_plan

        await anyio.to_thread.run_sync(preflight_plan, resolved.plan, resolved.profile)
    launched = deploy(
        spec, resolved.profile, resolved.plan, logs_dir, allocations=allocations, status=status
    )
    async with launched as deployed:
        deployment = deployed.deployment
        yield Endpoint(
            deployment.entry_url,
            resolved.config,
            resolved.plan.engine_identity,
            deployment,
            deployment.plan,  # with Slurm: the roles' node addresses and srun argv
            deployed.placement,
        )
