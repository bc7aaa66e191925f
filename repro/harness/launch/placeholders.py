"""Placeholders in profile strings: str.format's syntax, filled with a launch's values.

`{name}` is filled, `{{` and `}}` are literal braces, anything else with a brace is an error
that names the string. A value may be Missing: an error only where it is used, saying what
to give (a REQUIRED setting, `{repo_root}` in a wheel install).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass

from repro.errors import UsageError

REQUIRED = "REQUIRED"  # a setting the user must give (e.g. model_path)


@dataclass(frozen=True, slots=True)
class Missing:
    """A placeholder with no value in this launch; `reason` ends "<where> needs ...".

    Using it is an error that says what to give; leaving it unused is fine."""

    reason: str


_FORMATTER = string.Formatter()


def _parse(template: str, where: str) -> list[tuple[str, str | None]]:
    """str.format's reading of a template: (literal text, placeholder name or None) pairs."""
    try:
        parts = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise UsageError(
            f"{where} has a lone brace in {template!r} ({exc}); "
            "write {{ or }} for a literal brace."
        ) from None
    for _, name, spec, conversion in parts:
        if name is not None and (not name.isidentifier() or spec or conversion):
            field = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise UsageError(
                f"{where} has {{{field}}} in {template!r}, which is not a placeholder; a "
                "placeholder is {name}, and {{ and }} write literal braces."
            )
    return [(literal, name) for literal, name, _, _ in parts]


def placeholders(template: str, where: str) -> list[str]:
    """The placeholder names a template uses, in order; a malformed one is a UsageError."""
    return [name for _, name in _parse(template, where) if name is not None]


def fill(template: str, values: Mapping[str, str | Missing], where: str) -> str:
    """Fill `{name}` placeholders as str.format does (`{{` and `}}` are literal braces)."""
    out = []
    for literal, name in _parse(template, where):
        out.append(literal)
        if name is None:
            continue
        value = values.get(name)
        if value is None:
            known = ", ".join(sorted(values))
            raise UsageError(
                f"{where} uses the placeholder {{{name}}}, which is not defined; known: {known}."
            )
        if isinstance(value, Missing):
            raise UsageError(f"{where} {value.reason}.")
        out.append(value)
    return "".join(out)


def required(name: str) -> Missing:
    """A setting the profile leaves to the user (its value is REQUIRED)."""
    option = "--model-path M" if name == "model_path" else f"--set {name}=VALUE"
    return Missing(f"needs a value for '{name}'; give it with {option}")
