"""The trace format's JSON Schema (trace.schema.json beside this file), and its complaints as
sentences: each names the field by its path in the line (`messages[2].tool_calls[0].id`)."""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Iterable, Iterator
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from repro.traces.quick import fits

SCHEMA_FILE = "trace.schema.json"
LINE_KINDS = ("header_line", "session_line", "turn_line")
# What a field holds, said in the sentence about its wrong type (by the field's last name).
HINTS = {
    "arguments": " (the arguments' JSON text, as the engine wrote it)",
    "tool_calls": " (a list of tool calls)",
    "messages": " (a list of OpenAI chat messages)",
    "tools": " (a list of OpenAI function tools)",
}
_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "a JSON object",
    "array": "a list",
    "null": "null",
    "boolean": "true or false",
}


@functools.cache
def trace_schema() -> dict[str, Any]:
    """The format's JSON Schema, as shipped in the package."""
    text = (files("repro.traces") / SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": trace_schema()["$defs"]})


def line_errors(kind: str, line: dict[str, Any]) -> Iterator[str]:
    """What the schema says is wrong with a line of this kind, a sentence part each (no
    line number); each field is named once, by its first complaint."""
    if fits(kind, line):  # the common case, without jsonschema's cost (quick.py)
        return
    seen: set[str] = set()
    # At one place, an unknown field first: a misspelled name explains the missing one.
    errors = sorted(
        _validator(kind).iter_errors(line),
        key=lambda e: (
            [f"{p:09d}" if isinstance(p, int) else p for p in e.absolute_path],
            e.validator != "additionalProperties",
        ),
    )
    for error in errors:
        text = explain(_deepest(error))
        where = text.split(" ", 1)[0]
        if where not in seen:
            seen.add(where)
            yield text


def _deepest(error: ValidationError) -> ValidationError:
    """For oneOf/anyOf, what the alternatives that fit the value's type say is wrong."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        here = list(error.absolute_path)
        fitting = [
            e
            for e in error.context
            if not (e.validator == "type" and list(e.absolute_path) == here)
        ]
        if not fitting:
            return error
        error = best_match(fitting) or error
    return error


def field_path(parts: Iterable[str | int]) -> str:
    """['messages', 2, 'role'] -> messages[2].role."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(value: Any) -> str:
    """A value as a sentence names it: 'the string 'bot'', 'a JSON object', 'the number 3'."""
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    return "a JSON object"


def _expected(types: str | list[str]) -> str:
    names = [_TYPE_NAMES.get(t, t) for t in ([types] if isinstance(types, str) else types)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def explain(error: ValidationError) -> str:
    """One complaint as the middle of a sentence: '<field> <what is wrong>'."""
    path = list(error.absolute_path)
    where = field_path(path) or "the line"
    last = next((p for p in reversed(path) if isinstance(p, str)), "")
    value, rule, kind = error.instance, error.validator_value, error.validator
    if kind == "required":
        missing = [name for name in rule if isinstance(value, dict) and name not in value]
        return f"{where} has no '{missing[0] if missing else rule[0]}' field"
    if kind == "type":
        return f"{where} is {describe(value)}; it must be {_expected(rule)}{HINTS.get(last, '')}"
    if kind == "enum":
        return f"{where} is {describe(value)}; it must be one of {', '.join(map(str, rule))}"
    if kind == "const":
        return f"{where} is {describe(value)}; it must be {json.dumps(rule)}"
    if kind == "minimum":
        return f"{where} is {describe(value)}; it must be {rule} or more"
    if kind == "minLength":
        return f"{where} is an empty string; give a name"
    if kind == "minItems":
        return f"{where} is an empty list; it needs at least one message"
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = [k for k in value if k not in known] if isinstance(value, dict) else []
        name = extra[0] if extra else "?"
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f"; known: {', '.join(known)}"
        return f"{where} has an unknown field '{name}'{hint}"
    if kind in ("oneOf", "anyOf"):
        return f"{where} is {describe(value)}, which is none of the shapes this field takes"
    return f"{where}: {error.message}"
