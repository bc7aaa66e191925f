"""`repro profile show`: what a launch profile defines, as one JSON document and as tables.

The tables are rendered from the document, so the two cannot disagree.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from repro.harness.launch.placeholders import REQUIRED
from repro.harness.launch.plan import HOST
from repro.harness.launch.profile import Profile, RoleChange

# How the option that overrides a setting is spelled, where it is not `--set NAME=VALUE`.
_SETTING_OPTIONS = {"model_path": "--model-path", "python": "--server-python"}


def profile_document(profile: Profile) -> dict[str, Any]:
    """Engine, topologies, roles, knobs (values, default and where it comes from, what each
    value does per role), settings (default, the option that overrides it), placeholders."""
    defaults = profile.defaults()
    wall = profile.run.modelled_options(profile.settings)  # [run.modelled_s] at its time scale
    knobs: dict[str, Any] = {
        "topology": {
            "values": list(profile.topologies),
            "default": defaults["topology"],
            "default_from": profile.default_rule("topology"),
            "description": "which roles run: [topologies] in the profile",
            "map": {
                name: {"roles": list(t.roles), "entry": t.entry}
                for name, t in profile.topologies.items()
            },
            "unmapped": None,
        }
    }
    for name, spec in profile.knobs.items():
        knobs[name] = {
            "values": list(spec.values),
            "default": defaults[name],
            "default_from": profile.default_rule(name),
            "description": spec.description,
            "map": {
                value: {selector: _change(c) for selector, c in changes.items()}
                for value, changes in spec.map.items()
            },
            "unmapped": spec.unmapped.model_dump() if spec.unmapped else None,
        }
    return {
        "profile": str(profile.source) if profile.source else None,
        "engine": profile.engine.model_dump(),
        "identity": profile.identity(),
        "roles": {
            name: {
                "prefix": role.prefix,
                "command": role.command,
                "env": role.env,
                "health_url": f"http://{HOST}:{{port}}{role.health}",
                "ports": role.ports,
                "router": role.router,
                "preflight": role.preflight,
            }
            for name, role in profile.roles.items()
        },
        "knobs": knobs,
        "settings": {
            name: {
                "default": value,
                "required": value == REQUIRED,
                "option": f"{_SETTING_OPTIONS.get(name, '--set')} "
                + ("VALUE" if name in _SETTING_OPTIONS else f"{name}=VALUE"),
            }
            for name, value in profile.settings.items()
        },
        "run": profile.run.options(),
        "settings_by_concurrency": profile.run.settings_by_concurrency,
        "time_scale_setting": profile.run.time_scale_setting,
        "modelled_s": {
            name: {"modelled_s": modelled_s, "wall_s": wall.get(name)}
            for name, modelled_s in profile.run.modelled_s.items()
        },
        "placeholders": profile.placeholder_names(),
        "builds": dict(profile.builds),
        "versions": {
            where: releases.model_dump(exclude_defaults=True)
            for where, releases in profile.versions.items()
        },
    }


def _change(change: RoleChange) -> dict[str, Any]:
    return change.model_dump(exclude_defaults=True)


def render_profile(profile: Profile, console: Console) -> None:
    """The document as an indented listing: long argv templates wrap, never cut."""
    doc = profile_document(profile)
    engine = doc["engine"]
    lines: list[tuple[int, str, str]] = [  # (indent, text, style)
        (0, f"{doc['identity']} — {engine['description']}", "bold"),
        (0, f"profile {doc['profile']}", ""),
        (
            0,
            f"start-up deadline {engine['health_timeout_s']:g} s per role, "
            f"stop timeout {engine['stop_timeout_s']:g} s, default oracle {engine['oracle']}",
            "",
        ),
    ]
    lines += _section("Roles (argv template, health URL)")
    for name, role in doc["roles"].items():
        extra = [f"{k}={v}" for k, v in role["env"].items()]
        extra += [f"extra port {{{p}}}" for p in role["ports"]]
        extra += ["a router"] * role["router"]
        extra += [f"preflight {role['preflight']}"] if role["preflight"] else []
        lines.append((2, f"{name}: health {role['health_url']}", "bold"))
        lines.append((4, " ".join([*role["prefix"], *role["command"]]), ""))
        lines += [(4, text, "") for text in extra]
    lines += _section("Knobs (--knob NAME=VALUE; * marks the default)")
    for name, knob in doc["knobs"].items():
        values = ", ".join(v + "*" * (v == knob["default"]) for v in knob["values"])
        lines.append((2, f"{name}: {values}   (default from the {knob['default_from']})", "bold"))
        if knob["description"]:
            lines.append((4, knob["description"], ""))
        if name == "topology":
            for value, topology in knob["map"].items():
                roles = ", ".join(topology["roles"])
                lines.append(
                    (4, f"{value} → roles {roles}; clients talk to {topology['entry']}", "")
                )
            continue
        for value, selectors in knob["map"].items():
            lines += [(4, f"{value} → {s}: {_describe(c)}", "") for s, c in selectors.items()]
        if knob["unmapped"]:
            lines.append((4, f"unmapped: only {knob['unmapped']['native']}, the engine's own", ""))
    lines += _section("Settings")
    for name, setting in doc["settings"].items():
        default = "REQUIRED" if setting["required"] else f'"{setting["default"]}"'
        lines.append((2, f"{name} = {default}   ({setting['option']})", ""))
    if doc["run"] or doc["settings_by_concurrency"] or doc["modelled_s"]:
        lines += _section("Run defaults ([run]: used when the option is not given)")
        lines += [(2, f"{name} = {json.dumps(value)}", "") for name, value in doc["run"].items()]
        for name, steps in doc["settings_by_concurrency"].items():
            scaled = ", ".join(f"{v} from {t} sessions in flight" for t, v in steps.items())
            lines.append((2, f"{name}: {scaled}", ""))
        scale = doc["time_scale_setting"]
        for name, times in doc["modelled_s"].items():
            text = f"{name} = {times['modelled_s']:g} modelled s x {scale}"
            if times["wall_s"] is not None:
                text += f" ({times['wall_s']:g} s at its default)"
            lines.append((2, text, ""))
    if doc["builds"]:
        lines += _section("Builds (what makes a setting's program when it is missing)")
        lines += [(2, f"{name}: {command}", "") for name, command in doc["builds"].items()]
    if doc["versions"]:
        named = engine["version_setting"]
        lines += _section(f"Releases (--set {named}=V; each range that holds V applies)")
        for where, releases in doc["versions"].items():
            lines.append((2, where, "bold"))
            lines += [(4, f"{k} = {v!r}", "") for k, v in releases.get("settings", {}).items()]
            for role, change in releases.get("roles", {}).items():
                lines.append((4, f"{role}: {_describe(change)}", ""))
            for knob, spec in releases.get("knobs", {}).items():
                for value, selectors in spec.get("map", {}).items():
                    lines += [
                        (4, f"{knob}={value} → {s}: {_describe(c) or 'nothing'}", "")
                        for s, c in selectors.items()
                    ]
                if spec.get("unmapped"):
                    lines.append((4, f"{knob}: unmapped, only {spec['unmapped']['native']}", ""))
    lines += _section("Placeholders")
    lines.append((2, ", ".join(f"{{{n}}}" for n in doc["placeholders"]), ""))
    for indent, text, style in lines:
        # Text, not markup: descriptions hold [brackets]; padding indents every wrapped line.
        console.print(Padding(Text(text, style=style), (0, 0, 0, indent), expand=False))


def _section(title: str) -> list[tuple[int, str, str]]:
    return [(0, "", ""), (0, title, "bold underline")]


def _describe(change: dict[str, Any]) -> str:
    parts = []
    if "command" in change:
        parts.append("runs " + " ".join(change["command"]))
    if change.get("args"):
        parts.append("adds " + " ".join(change["args"]))
    parts += [f"{k}={v}" for k, v in change.get("env", {}).items()]
    if "health" in change:
        parts.append(f"health {change['health']}")
    parts += [f"extra port {{{p}}}" for p in change.get("ports", [])]
    return "; ".join(parts)
