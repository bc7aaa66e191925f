"""LaunchPlan: a profile and a configuration turned into exact processes to start."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import repro
from repro.errors import UsageError
from repro.harness.launch.placeholders import REQUIRED, Missing, fill, placeholders, required
from repro.harness.launch.profile import SELECTOR_ALL, SELECTOR_ENGINE, Profile, RoleChange
from repro.ports import free_ports, require_free
from repro.spec import RunSpec

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
    # The command that builds the program it runs (the profile's [builds]), when that
    # program is a setting's value: a missing one is then named with it (missing_program).
    build: str | None = None

    def missing_program(self) -> str | None:
        """One sentence naming the command that builds this role's program, when the
        profile knows one and the program, a path on this host, does not exist."""
        program = self.argv[0] if self.argv else ""
        if self.build is None or not program.startswith("/") or Path(program).exists():
            return None
        return (
            f"The {self.name} role's program {program} does not exist: build it with "
            f"`{self.build}` (or point the profile's setting at another)."
        )

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


class _StandIns:
    """Loopback with stand-in ports (1, 2, ...): checks a plan without taking a port."""

    def __init__(self) -> None:
        self._next = 1

    def host(self, role: str) -> str:
        return HOST

    def ports(self, role: str, count: int) -> list[int]:
        self._next += count
        return list(range(self._next - count, self._next))


def build_plan(
    profile: Profile, spec: RunSpec, config: dict[str, str], addresses: Addresses | None = None
) -> LaunchPlan:
    """Allocate ports, fill every placeholder and apply every knob; nothing is started.

    `addresses` puts roles elsewhere (Slurm nodes); by default all listen on 127.0.0.1."""
    if spec.port is not None and addresses is None:
        require_free(spec.port)
    return _plan(profile, spec, config, addresses or Loopback())


def check_plan(profile: Profile, spec: RunSpec, config: dict[str, str]) -> LaunchPlan:
    """Everything build_plan checks (settings, placeholders, ports' names), taking no port:
    for configurations a campaign will launch later. Its ports are stand-ins (1, 2, ...)."""
    return _plan(profile, spec, config, _StandIns())


def check_settings(profile: Profile, settings: Mapping[str, str]) -> None:
    """Every `--set KEY` must be a setting the profile declares."""
    unknown = sorted(set(settings) - set(profile.settings))
    if unknown:
        raise UsageError(
            f"Profile {profile.source or profile.engine.name} has no setting '{unknown[0]}'; "
            f"its settings are: {', '.join(sorted(profile.settings)) or 'none'}."
        )


def source_checkout() -> Path | None:
    """The repro source checkout this code runs from (editable install, PYTHONPATH), or None
    when it runs from an installed wheel, which has none."""
    root = Path(repro.__file__).resolve().parent.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("project", {}).get("name") == "repro" else None


def builtin_values(profile: Profile, spec: RunSpec) -> dict[str, str | Missing]:
    """The placeholders every launch defines before settings and ports."""
    checkout = source_checkout()
    return {
        "repro_python": sys.executable,
        "repo_root": str(checkout)
        if checkout
        else Missing(
            "needs {repo_root}, repro's source checkout, but this repro is installed without "
            "one (from a wheel)"
        ),
        "profile_dir": str(profile.source.resolve().parent)
        if profile.source
        else Missing("needs {profile_dir}, but this profile was not read from a file"),
        "host": HOST,
        "seed": str(spec.seed),
    } | (
        {named: profile.version_in(spec.settings)}
        if (named := profile.engine.version_setting)
        else {}
    )


def setting_values(
    profile: Profile, spec: RunSpec, builtins: dict[str, str | Missing]
) -> dict[str, str | Missing]:
    """Each setting (the profile's, or --set's) filled from the built-ins, `python` first:
    the others may use it (router_python = "{python}"). A setting that needs a value this
    launch lacks is an error only where it is used."""
    where = f"Profile {profile.source or profile.engine.name}"
    chosen = profile.settings | spec.settings

    def one(key: str, template: str, values: dict[str, str | Missing]) -> str | Missing:
        if template == REQUIRED:
            return required(key)
        absent = [n for n in placeholders(template, where) if isinstance(values.get(n), Missing)]
        if not absent:
            return fill(template, values, where)
        reason = values[absent[0]].reason.removeprefix("needs ")  # type: ignore[union-attr]
        return Missing(
            f"needs the setting '{key}', whose value uses {reason}; give it with --set {key}=VALUE"
        )

    # The engine's interpreter: --server-python, else the `python` setting, else this one.
    python = spec.server_python or (
        one("python", chosen["python"], builtins) if "python" in chosen else sys.executable
    )
    builtins = builtins | {"python": python}
    return {"python": python} | {
        key: one(key, template, builtins) for key, template in chosen.items() if key != "python"
    }


def _plan(
    profile: Profile,
    spec: RunSpec,
    config: dict[str, str],
    on: Addresses,
) -> LaunchPlan:
    profile = profile.for_settings(spec.settings)
    profile.resolve_knobs({k: v for k, v in config.items() if k in profile.knob_names()})
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
    check_settings(profile, spec.settings)
    # Each role's port, then its extra ports, all free on the role's own host.
    got = {r: on.ports(r, 1 + len(extra[r])) for r in names}
    role_port = {
        r: (spec.port if (r == topology.entry and spec.port) else got[r][0]) for r in names
    }
    builtins = builtin_values(profile, spec)
    values = builtins | setting_values(profile, spec, builtins)
    for r in names:
        values[f"{r}_port"] = str(role_port[r])
        values[f"{r}_url"] = f"http://{on.host(r)}:{role_port[r]}"
        values.update(zip(extra[r], map(str, got[r][1:]), strict=True))

    builds = _build_commands(profile, spec, values)
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
        build = None if role.prefix else builds.get(argv[0])
        roles.append(
            RolePlan(r, tuple(argv), env, role_port[r], health, role.router, on.host(r), build)
        )
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


def _build_commands(
    profile: Profile, spec: RunSpec, values: dict[str, str | Missing]
) -> dict[str, str]:
    """Each [builds] setting's filled value -> the command that builds it (as written, when
    this launch cannot fill it: a wheel install has no {repo_root}). Not for a program the
    user named (--set, --server-python): the profile's recipe builds its own default."""
    where = f"Profile {profile.source or profile.engine.name}"
    commands = {}
    for setting, template in profile.builds.items():
        if setting in spec.settings or (setting == "python" and spec.server_python):
            continue
        program = values.get(setting)
        if isinstance(program, str):
            try:
                commands[program] = fill(template, values, where)
            except UsageError:
                commands[program] = template
    return commands
