"""LaunchPlan: a profile and a configuration turned into exact processes to start."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Protocol

from repro.errors import UsageError
from repro.harness.profile import SELECTOR_ALL, SELECTOR_ENGINE, Profile, RoleChange, fill
from repro.ports import free_ports, require_free
from repro.spec import REPO_ROOT, RunSpec

HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class RolePlan:
    """One process: its exact argv, the environment it adds, and where it answers."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str]
    port: int
    health_url: str
    router: bool
    host: str = HOST  # the address it listens on and is reached at

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """Roles in start order; the entry role starts last, once the others are healthy."""

    roles: tuple[RolePlan, ...]
    entry: str
    config: dict[str, str]
    engine_identity: str
    health_timeout_s: float
    stop_timeout_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def entry_url(self) -> str:
        return self.role(self.entry).url

    def role(self, name: str) -> RolePlan:
        return next(r for r in self.roles if r.name == name)


def _changes_for(profile: Profile, config: dict[str, str], role: str) -> list[RoleChange]:
    """Knob effects on one role, in the order the profile declares its knobs."""
    is_router = profile.roles[role].router
    changes = []
    for knob, spec in profile.knobs.items():
        by_selector = spec.map.get(config[knob], {})
        for selector in (SELECTOR_ALL, *(() if is_router else (SELECTOR_ENGINE,)), role):
            if selector in by_selector:
                changes.append(by_selector[selector])
    return changes


class Addresses(Protocol):
    """Where each role listens: its host, and free ports on that host."""

    def host(self, role: str) -> str: ...

    def ports(self, role: str, count: int) -> list[int]: ...


class Loopback:
    """Every role on this machine's loopback, ports asked of the local kernel."""

    def host(self, role: str) -> str:
        return HOST

    def ports(self, role: str, count: int) -> list[int]:
        return free_ports(count)


def build_plan(
    profile: Profile, spec: RunSpec, config: dict[str, str], addresses: Addresses | None = None
) -> LaunchPlan:
    """Allocate ports, fill every placeholder and apply every knob; nothing is started.

    `addresses` puts roles elsewhere (Slurm nodes); by default all listen on 127.0.0.1."""
    on = addresses or Loopback()
    topology = profile.topologies[config["topology"]]
    names = topology.roles
    changes = {r: _changes_for(profile, config, r) for r in names}
    # A knob that swaps a role's program may bring that program's own ports.
    extra = {r: [*profile.roles[r].ports, *(p for c in changes[r] for p in c.ports)] for r in names}
    flat = [port for r in names for port in extra[r]]
    if len(set(flat)) != len(flat):
        raise UsageError(
            "Profile roles declare the same extra port name twice; names must be unique."
        )
    if spec.port is not None and addresses is None:
        require_free(spec.port)
    # Each role's port, then its extra ports, all free on the role's own host.
    got = {r: on.ports(r, 1 + len(extra[r])) for r in names}
    role_port = {
        r: (spec.port if (r == topology.entry and spec.port) else got[r][0]) for r in names
    }
    unknown = set(spec.settings) - set(profile.settings)
    if unknown:
        raise UsageError(
            f"Profile {profile.source or profile.engine.name} has no setting "
            f"'{sorted(unknown)[0]}'; its settings are: {', '.join(sorted(profile.settings)) or 'none'}."
        )
    builtins = {
        "repro_python": sys.executable,
        "repo_root": str(REPO_ROOT),
        "host": HOST,
        "seed": str(spec.seed),
    }
    where = f"Profile {profile.source or profile.engine.name}"
    # Settings may refer to built-ins (python = "{repro_python}") and, once it is settled,
    # to the engine's interpreter (router_python = "{python}"); not to each other.
    chosen = profile.settings | spec.settings
    python = spec.server_python or fill(chosen.get("python", sys.executable), builtins, where)
    builtins["python"] = python
    values = builtins | {k: fill(v, builtins, where) for k, v in chosen.items() if k != "python"}
    for r in names:
        values[f"{r}_port"] = str(role_port[r])
        values[f"{r}_url"] = f"http://{on.host(r)}:{role_port[r]}"
        values.update(zip(extra[r], map(str, got[r][1:]), strict=True))

    roles = []
    for r in names:
        role = profile.roles[r]
        command, args, env, health_path = list(role.command), [], dict(role.env), role.health
        for change in changes[r]:
            command = change.command or command
            health_path = change.health or health_path
            args += change.args
            env |= change.env
        server_args = [] if role.router else list(spec.server_args)
        local = values | {"port": str(role_port[r]), "host": on.host(r)}
        where = f"Role '{r}' of profile {profile.source or profile.engine.name}"
        argv = [fill(a, local, where) for a in [*role.prefix, *command, *args]] + server_args
        env = {k: fill(v, local, where) for k, v in env.items()}
        health = f"http://{on.host(r)}:{role_port[r]}{health_path}"
        roles.append(RolePlan(r, tuple(argv), env, role_port[r], health, role.router, on.host(r)))
    start_order = [r for r in roles if r.name != topology.entry] + [
        r for r in roles if r.name == topology.entry
    ]
    return LaunchPlan(
        roles=tuple(start_order),
        entry=topology.entry,
        config=dict(config),
        engine_identity=profile.identity(),
        health_timeout_s=spec.health_timeout_s or profile.engine.health_timeout_s,
        stop_timeout_s=profile.engine.stop_timeout_s,
    )
