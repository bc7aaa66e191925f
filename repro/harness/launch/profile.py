"""Launch profiles: how one engine version turns knob values into processes, flags and env.

A profile is TOML, validated strictly (a misspelled key is an error that names it).
Its tables:

    [engine]      name, version (the identity trials are cached under), start-up deadline,
                  the default oracle (validity, or divergence for a model that writes noise)
    [settings]    named values for {placeholders}; `--set KEY=VALUE` overrides them
    [topologies]  per topology: the roles to start, and the entry role clients talk to
    [roles.R]     per role: command, health path, env, extra named ports, remote prefix
    [knobs.K]     values, default, and per value what each role gets: args, env, or a
                  replacement command (with its own health path and extra ports); or
                  `unmapped` (the engine has no such switch)
    [run]         run options it fills in when the user gives none (contexts, answer length,
                  thinking mode), and settings that grow with the sessions in flight
    [preflight]   flags a fork adds to the engine's parser, so upstream's parser can check the
                  rest; how long the probe may take (timeout_s)
    [builds]      per setting naming a program (an engine's interpreter), the command that
                  builds it: a launch whose program is missing says to run it
    [versions.R]  for the releases in range R (`<0.20`, `>=0.12,<0.17`) of the one
                  `[engine] version_setting` names: settings, role changes and knob mappings
                  that differ there (versions.py)
    [placement.T] --launcher slurm: the nodes topology T needs and the node of each role
                  (placement.py)

Role selectors inside a knob value: a role name, `engine` (every role but routers) or `all`.
Placeholders follow str.format's rules: `{name}` is filled, `{{` and `}}` are literal braces.
A name is a setting, `python`, `repro_python`, `profile_dir` (the profile's folder),
`repo_root` (repro's source checkout, if it runs from one), `host`, `port` (the role's own),
`<role>_port`, `<role>_url`, each named extra port, or `seed`. docs/profiles.md has it all.
"""

from __future__ import annotations

import difflib
import sys
import tomllib
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from repro.errors import UsageError
from repro.harness.launch.placeholders import placeholders
from repro.harness.launch.placement import PlacementSpec, check_placements, on_one_node
from repro.harness.launch.run_defaults import RunDefaults
from repro.harness.launch.versions import VersionRange, version_key
from repro.knobs import STORY_DEFAULTS, describe
from repro.spec import MAX_WAIT_S, Oracle
from repro.user_files import TOO_DEEP, read_user_text

SELECTOR_ENGINE = "engine"
SELECTOR_ALL = "all"
# Filled in per launch. Settings may use these; commands and env also the settings, `port`,
# `<role>_port`, `<role>_url` and the extra ports.
SETTING_BUILTINS = ("python", "repro_python", "profile_dir", "repo_root", "host", "seed")
SCALED = "run.settings_by_concurrency."  # key path of a setting's steps: filled like settings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _health_path(path: str) -> str:
    # Joined to the role's http://host:port: anything but a path would name another port or
    # host ("health" gave http://127.0.0.1:8000health, a crash mid-launch).
    if not path.startswith("/") or any(c.isspace() for c in path):
        raise ValueError(
            f"a health path starts with '/' and has no spaces (e.g. \"/health\"), not {path!r}"
        )
    return path


HealthPath = Annotated[str, AfterValidator(_health_path)]


class RoleChange(_Strict):
    """What one knob value does to one role."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = None
    # A replaced command is another program: it may answer readiness elsewhere and need ports.
    health: HealthPath | None = None
    ports: list[str] = Field(default_factory=list)


class Unmapped(_Strict):
    """A knob the engine has no switch for: only its built-in behaviour can be asked for."""

    native: str
    hint: str


def _knob_values(values: list[str]) -> list[str]:
    # Written as K=V,K=V on the command line (--knob, bisect's --bad/--good, --factor).
    for value in values:
        if not value or any(c in value for c in ",= ") or value != value.strip():
            raise ValueError(f"{value!r} cannot be written as K=V on the command line")
    if len(set(values)) != len(values):
        raise ValueError(f"{values} names a value twice")
    return values


class KnobSpec(_Strict):
    values: Annotated[list[str], AfterValidator(_knob_values)] = Field(min_length=1)
    default: str | None = None
    description: str = ""
    map: dict[str, dict[str, RoleChange]] = Field(default_factory=dict)
    unmapped: Unmapped | None = None


class RoleSpec(_Strict):
    command: list[str] = Field(min_length=1)
    health: HealthPath = "/health"
    env: dict[str, str] = Field(default_factory=dict)
    ports: list[str] = Field(default_factory=list, description="extra named ports to allocate")
    prefix: list[str] = Field(default_factory=list, description="e.g. ssh to a remote host (seam)")
    router: bool = False
    preflight: Literal["sglang-server", "sglang-router", "vllm-server"] | None = Field(
        None, description="whose own argument parser checks this role's argv before launch"
    )


class ExtraFlag(_Strict):
    """A flag a fork adds to SGLang, declared so that upstream's parser can check the rest."""

    flag: str = Field(pattern=r"^--[a-z0-9][a-z0-9-]*$")
    takes_value: bool = True
    choices: list[str] = Field(default_factory=list)


class PreflightSpec(_Strict):
    extra_flags: list[ExtraFlag] = Field(default_factory=list)
    # Importing the engine's parser is the slow part: SGLang about 2 s, vLLM about 8 s idle,
    # and a minute or more on a loaded machine.
    timeout_s: float = Field(120.0, gt=0, description="deadline for the parser probe")


def _distinct_roles(roles: list[str]) -> list[str]:
    if len(set(roles)) != len(roles):
        raise ValueError(f"{roles} names a role twice (each would take the same port)")
    return roles


class TopologySpec(_Strict):
    roles: Annotated[list[str], AfterValidator(_distinct_roles)] = Field(min_length=1)
    entry: str


class EngineSpec(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    description: str = ""
    # Deadlines: finite and positive, or a wait could never end (or never begin).
    health_timeout_s: float = Field(120.0, gt=0, le=MAX_WAIT_S)
    stop_timeout_s: float = Field(10.0, gt=0, le=MAX_WAIT_S)
    # The default --oracle: validity needs a model that writes DSML; an engine serving a
    # small or dummy model (noise) is judged by divergence from a replay alone.
    oracle: Oracle = "validity"
    # The [settings] entry naming the release a launch runs (`--set NAME=0.19.1`): it picks
    # the [versions] tables that apply and replaces `version` in the identity. Its default
    # in [settings] is `version`.
    version_setting: str | None = None


def _version_range(text: str) -> str:
    VersionRange.parse(text)
    return text


class KnobInRange(_Strict):
    """A knob as a range of releases has it: value mappings that replace the profile's (per
    value and selector), or `unmapped` when those releases have no such switch."""

    map: dict[str, dict[str, RoleChange]] = Field(default_factory=dict)
    unmapped: Unmapped | None = None


class ReleasesSpec(_Strict):
    """What differs for the releases in one range: settings' defaults, each role's own
    change (args appended, env merged, command replaced) and knobs."""

    settings: dict[str, str] = Field(default_factory=dict)
    roles: dict[str, RoleChange] = Field(default_factory=dict)
    knobs: dict[str, KnobInRange] = Field(default_factory=dict)


class Profile(_Strict):
    engine: EngineSpec
    settings: dict[str, str] = Field(default_factory=dict)
    topologies: dict[str, TopologySpec]
    roles: dict[str, RoleSpec]
    knobs: dict[str, KnobSpec] = Field(default_factory=dict)
    preflight: PreflightSpec = Field(default_factory=PreflightSpec)
    run: RunDefaults = Field(default_factory=RunDefaults)
    placement: dict[str, PlacementSpec] = Field(default_factory=dict)
    builds: dict[str, str] = Field(default_factory=dict)
    versions: dict[Annotated[str, AfterValidator(_version_range)], ReleasesSpec] = Field(
        default_factory=dict
    )
    source: Path | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        for name, topo in self.topologies.items():
            for role in [*topo.roles, topo.entry]:
                if role not in self.roles:
                    raise ValueError(
                        f"topology '{name}' names role '{role}', which has no [roles.{role}]"
                    )
            if topo.entry not in topo.roles:
                raise ValueError(f"topology '{name}': entry '{topo.entry}' is not among its roles")
        if "topology" in self.knobs:
            raise ValueError("'topology' comes from [topologies]; do not declare it under [knobs]")
        for knob, spec in self.knobs.items():
            default = self._default_of(knob, spec)
            if default not in spec.values:
                raise ValueError(f"knob '{knob}': default '{default}' is not one of {spec.values}")
            for value, changes in spec.map.items():
                if value not in spec.values:
                    raise ValueError(
                        f"knob '{knob}': map names value '{value}', not one of {spec.values}"
                    )
                for selector in changes:
                    if selector not in self.roles and selector not in (
                        SELECTOR_ENGINE,
                        SELECTOR_ALL,
                    ):
                        raise ValueError(
                            f"knob '{knob}.{value}': unknown role selector '{selector}'"
                        )
            if spec.unmapped and spec.unmapped.native != default:
                raise ValueError(f"unmapped knob '{knob}': its default must be its native value")
        for setting in self.run.settings_by_concurrency:
            if setting not in self.settings:
                raise ValueError(
                    f"[run.settings_by_concurrency] scales '{setting}', which [settings] does "
                    f"not declare; declared: {', '.join(self.settings) or 'none'}"
                )
        if self.run.tool_format is not None:
            for name in placeholders(self.run.tool_format, "[run] tool_format"):
                if name not in self.settings:
                    raise ValueError(
                        f"[run] tool_format uses {{{name}}}, which [settings] does not declare"
                    )
        scale = self.run.time_scale_setting
        if scale is not None and scale not in self.settings:
            raise ValueError(
                f"[run] time_scale_setting names '{scale}', which [settings] does not declare"
            )
        topology_roles = {name: topo.roles for name, topo in self.topologies.items()}
        check_placements(self.placement, topology_roles, self.settings)
        for setting in self.builds:
            if setting not in self.settings:
                raise ValueError(
                    f"[builds] names '{setting}', which [settings] does not declare; "
                    f"declared: {', '.join(self.settings) or 'none'}"
                )
        self._check_versions()
        self._check_placeholders()
        return self

    def _check_versions(self) -> None:
        named = self.engine.version_setting
        if named is not None and self.settings.get(named) != self.engine.version:
            raise ValueError(
                f"[engine] version_setting names '{named}': [settings] must declare it with "
                f'the engine\'s version, {named} = "{self.engine.version}"'
            )
        if self.versions and named is None:
            raise ValueError(
                "[versions] tables need [engine] version_setting, the setting that names the "
                "release a launch runs"
            )
        for where, releases in self.versions.items():
            for key in releases.settings:
                if key not in self.settings or key == named:
                    raise ValueError(
                        f"[versions.\"{where}\"] sets '{key}', which is not a [settings] entry "
                        "it may change"
                    )
            for role in releases.roles:
                if role not in self.roles:
                    raise ValueError(
                        f"[versions.\"{where}\"] names role '{role}', which has no [roles.{role}]"
                    )
            for knob, spec in releases.knobs.items():
                if knob not in self.knobs:
                    raise ValueError(
                        f"[versions.\"{where}\"] names knob '{knob}', which [knobs] does not declare"
                    )
                values = self.knobs[knob].values
                for value, changes in spec.map.items():
                    if value not in values:
                        raise ValueError(
                            f"[versions.\"{where}\"] knob '{knob}': map names value '{value}', "
                            f"not one of {values}"
                        )
                    for selector in changes:
                        if selector not in self.roles and selector not in (
                            SELECTOR_ENGINE,
                            SELECTOR_ALL,
                        ):
                            raise ValueError(
                                f"[versions.\"{where}\"] knob '{knob}.{value}': unknown role "
                                f"selector '{selector}'"
                            )
                if spec.unmapped and spec.unmapped.native != self._default_of(
                    knob, self.knobs[knob]
                ):
                    raise ValueError(
                        f"[versions.\"{where}\"] unmapped knob '{knob}': its native value must "
                        "be the knob's default"
                    )

    # -- releases ----------------------------------------------------------------------------

    def version_in(self, settings: typing.Mapping[str, str]) -> str:
        """The release a launch with these `--set` settings runs."""
        named = self.engine.version_setting
        return settings.get(named, self.engine.version) if named else self.engine.version

    def at_version(self, version: str) -> Profile:
        """This profile as the release `version` has it: every [versions] table whose range
        holds it applied in the order written (a later one wins), the engine's version
        replaced, and no [versions] left. Without a version_setting, itself."""
        named = self.engine.version_setting
        if named is None:
            return self
        try:
            version_key(version)
        except ValueError as exc:
            raise UsageError(f"Profile {self._name()}: --set {named}={version}: {exc}.") from None
        settings, roles = dict(self.settings), dict(self.roles)
        knobs = dict(self.knobs)
        for where, releases in self.versions.items():
            if version not in VersionRange.parse(where):
                continue
            settings |= releases.settings
            for name, change in releases.roles.items():
                role = roles[name]
                roles[name] = role.model_copy(
                    update={
                        "command": [*(change.command or role.command), *change.args],
                        "env": role.env | change.env,
                        "health": change.health or role.health,
                        "ports": [*role.ports, *change.ports],
                    }
                )
            for name, spec in releases.knobs.items():
                knob = knobs[name]
                merged = {v: dict(c) for v, c in knob.map.items()}
                for value, changes in spec.map.items():
                    merged.setdefault(value, {}).update(changes)
                knobs[name] = knob.model_copy(
                    update={"map": merged, "unmapped": spec.unmapped or knob.unmapped}
                )
        settings[named] = version
        return self.model_copy(
            update={
                "engine": self.engine.model_copy(update={"version": version}),
                "settings": settings,
                "roles": roles,
                "knobs": knobs,
                "versions": {},
            }
        )

    def for_settings(self, settings: typing.Mapping[str, str]) -> Profile:
        """at_version for the release these `--set` settings name."""
        return self.at_version(self.version_in(settings))

    def placeholder_names(self) -> list[str]:
        """Every name some launch of this profile defines: the built-ins, `port`, each role's
        port and URL, every extra port (of a role or a knob's change), every setting."""
        ports = [p for role in self.roles.values() for p in role.ports]
        ports += [p for c in self._changes() for p in c.ports]
        roles = [f"{r}_{kind}" for r in self.roles for kind in ("port", "url")]
        return list(dict.fromkeys([*SETTING_BUILTINS, "port", *roles, *ports, *self.settings]))

    def _check_placeholders(self) -> None:
        """Every template parses and names only what some launch defines, whichever knob
        values are chosen: a typo fails at load, not in the one configuration that uses it."""
        known = set(self.placeholder_names())
        for where, template in self.templates():
            try:
                names = placeholders(template, f"'{where}'")
            except UsageError as exc:
                raise ValueError(str(exc).removesuffix(".")) from None
            in_range = where.startswith("versions.") and ".settings." in where
            if where.startswith(("settings.", SCALED)) or in_range:  # from the built-ins alone
                own = where.split(".settings.", 1)[1] if in_range else where
                own = own.removeprefix(SCALED).removeprefix("settings.").split(".")[0]
                named = self.engine.version_setting
                allowed = [n for n in (*SETTING_BUILTINS, *[named] * bool(named)) if n != own]
                if unknown := [n for n in names if n not in allowed]:
                    raise ValueError(
                        f"'{where}' uses {{{unknown[0]}}}; a setting may use only these "
                        f"placeholders: {', '.join(allowed)}"
                    )
            elif unknown := [n for n in names if n not in known]:
                raise ValueError(
                    f"'{where}' uses {{{unknown[0]}}}, which no launch defines; known: "
                    f"{', '.join(sorted(known))} (write {{{{ and }}}} for literal braces)"
                )

    def _changes(self) -> Iterator[RoleChange]:
        for spec in self.knobs.values():
            for changes in spec.map.values():
                yield from changes.values()
        for releases in self.versions.values():
            yield from releases.roles.values()
            for knob in releases.knobs.values():
                for changes in knob.map.values():
                    yield from changes.values()

    def templates(self) -> Iterator[tuple[str, str]]:
        """Every string that placeholders are filled in, with its key path."""
        for key, value in self.settings.items():
            yield f"settings.{key}", value
        for key, steps in self.run.settings_by_concurrency.items():
            for threshold, value in steps.items():
                yield f"{SCALED}{key}.{threshold}", value
        for name, role in self.roles.items():
            for part in ("prefix", "command"):
                for i, word in enumerate(getattr(role, part)):
                    yield f"roles.{name}.{part}[{i}]", word
            for key, value in role.env.items():
                yield f"roles.{name}.env.{key}", value
        for key, value in self.builds.items():
            yield f"builds.{key}", value
        for where, releases in self.versions.items():
            at = f'versions."{where}"'
            for key, value in releases.settings.items():
                yield f"{at}.settings.{key}", value
            for name, change in releases.roles.items():
                yield from _change_templates(f"{at}.roles.{name}", change)
            for knob, spec in releases.knobs.items():
                for value, changes in spec.map.items():
                    for selector, change in changes.items():
                        yield from _change_templates(
                            f"{at}.knobs.{knob}.map.{value}.{selector}", change
                        )
        for knob, spec in self.knobs.items():
            for value, changes in spec.map.items():
                for selector, change in changes.items():
                    at = f"knobs.{knob}.map.{value}.{selector}"
                    for part in ("args", "command"):
                        for i, word in enumerate(getattr(change, part) or ()):
                            yield f"{at}.{part}[{i}]", word
                    for key, env_value in change.env.items():
                        yield f"{at}.env.{key}", env_value

    def placement_for(self, topology: str) -> PlacementSpec:
        """Where --launcher slurm puts each role of the topology (all on one node by default)."""
        return self.placement.get(topology) or on_one_node(self.topologies[topology].roles)

    @staticmethod
    def _default_of(knob: str, spec: KnobSpec) -> str:
        return spec.default or STORY_DEFAULTS.get(knob) or spec.values[0]

    def default_rule(self, knob: str) -> str:
        """Which rule gave a knob its default (see _default_of and defaults()): "profile",
        "story" or "first value"."""
        if knob == "topology":
            return "story" if STORY_DEFAULTS["topology"] in self.topologies else "first value"
        if self.knobs[knob].default:
            return "profile"
        return "story" if knob in STORY_DEFAULTS else "first value"

    # -- knobs -----------------------------------------------------------------------------

    def identity(self) -> str:
        """Engine name and version: trials are cached under it."""
        return f"{self.engine.name} {self.engine.version}"

    def knob_names(self) -> list[str]:
        return ["topology", *self.knobs]

    def knob_values(self, knob: str) -> list[str]:
        if knob == "topology":
            return list(self.topologies)
        self._require_knob(knob)
        return list(self.knobs[knob].values)

    def defaults(self) -> dict[str, str]:
        topology = STORY_DEFAULTS["topology"]
        if topology not in self.topologies:
            topology = next(iter(self.topologies))
        return {"topology": topology} | {k: self._default_of(k, s) for k, s in self.knobs.items()}

    def resolve_knobs(self, requested: dict[str, str]) -> dict[str, str]:
        """Every knob this profile defines, with the requested values checked and defaults filled."""
        config = self.defaults()
        for knob, value in requested.items():
            values = self.knob_values(knob)
            if value not in values:
                raise UsageError(
                    f"Knob '{knob}' has no value '{value}' in profile {self._name()}; "
                    f"choose one of: {', '.join(values)}."
                )
            spec = self.knobs.get(knob)
            if spec and spec.unmapped and value != spec.unmapped.native:
                raise UsageError(
                    f"Profile {self._name()} cannot set {knob}={value}: {spec.unmapped.hint}"
                )
            config[knob] = value
        return config

    def _require_knob(self, knob: str) -> None:
        if knob not in self.knobs:
            raise UsageError(
                f"Profile {self._name()} has no knob '{knob}'; "
                f"its knobs are: {', '.join(self.knob_names())}."
            )

    def _name(self) -> str:
        return self.source.name if self.source else self.engine.name

    def describe(self, config: dict[str, str]) -> str:
        return describe(config)


def _change_templates(at: str, change: RoleChange) -> Iterator[tuple[str, str]]:
    for part in ("args", "command"):
        for i, word in enumerate(getattr(change, part) or ()):
            yield f"{at}.{part}[{i}]", word
    for key, value in change.env.items():
        yield f"{at}.env.{key}", value


def load_profile(path: Path) -> Profile:
    """Read and validate a profile; any problem is one UsageError naming the file and key."""
    text = read_user_text(Path(path), f"Profile {path}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"Profile {path} is not valid TOML: {exc}.") from None
    except RecursionError:
        raise UsageError(f"Profile {path} {TOO_DEEP}.") from None
    try:
        # `source` is where it was read from, whatever the file says.
        return Profile.model_validate(data | {"source": Path(path)})
    except RecursionError:
        raise UsageError(f"Profile {path} {TOO_DEEP}.") from None
    except ValidationError as exc:
        errors = exc.errors()  # a misspelled key first: it also explains a "missing" one
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        key = ".".join(str(p) for p in first["loc"] if p != "[key]")  # pydantic: a dict's key
        message = first["msg"].removeprefix("Value error, ")
        if not key:  # a rule across tables: its message names what it is about
            raise UsageError(f"Profile {path} is invalid: {message}.") from None
        if first["type"] == "extra_forbidden":  # a misspelled key: say what to write instead
            known = _keys_at(first["loc"][:-1])
            close = difflib.get_close_matches(str(first["loc"][-1]), known, n=1)
            message = f"no such key; did you mean '{close[0]}'?" if close else "no such key"
            message += f" (known here: {', '.join(known)})" if known else ""
        raise UsageError(f"Profile {path} is invalid at '{key}': {message}.") from None


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the table at `loc` accepts: the fields of the model found there."""
    shape: object = Profile
    for part in loc:
        shape = _unwrap(shape)
        if isinstance(shape, type) and issubclass(shape, BaseModel):
            field = shape.model_fields.get(str(part))
            if field is None:
                return []
            shape = field.annotation
        elif typing.get_origin(shape) in (dict, list):  # a table's name or a list's index
            shape = typing.get_args(shape)[-1]
        else:
            return []
    shape = _unwrap(shape)
    if isinstance(shape, type) and issubclass(shape, BaseModel):
        return [name for name in shape.model_fields if name != "source"]
    return []


def _unwrap(shape: object) -> object:
    """X from `X | None`."""
    if isinstance(shape, types.UnionType) or typing.get_origin(shape) is typing.Union:
        (inner,) = [a for a in typing.get_args(shape) if a is not type(None)]
        return inner
    return shape


def default_python() -> str:
    return sys.executable
