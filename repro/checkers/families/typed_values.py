"""Untyped parameter text (Qwen3 XML, GLM, MiniMax) read by the type its JSON Schema allows.

The leniency rule, the same for every such format (docs/checkers.md, "Typed values"):

1. A parameter whose schema allows only strings, or that has no schema, is its raw text.
2. Otherwise the text must be JSON (what the templates' `tojson` writes) of a type the
   schema allows, and is that value; whitespace around it is JSON's own and allowed.
3. Failing that, a schema that also allows strings takes the raw text as the string.
4. Failing that, JSON of another type (`"5"` for an integer) is `value_type_mismatch`;
   Python's spelling of a value (`True`, `None`, `{'a': 1}`), which engines coerce with
   `literal_eval`, is `python_literal`; anything else is `value_type_mismatch`.

Enum and const values count by their JSON types; anyOf/oneOf branches by theirs. A `$ref`
or a branch without a type leaves the value unconstrained: JSON when it parses, else text.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from repro.checkers.json_codec import read_json
from repro.checkers.kinds import Kind

_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
_ANY = frozenset({"*"})


def allowed_types(schema: Any) -> frozenset[str]:
    """The JSON types a schema lets a value take; `{"*"}` for no constraint."""
    if not isinstance(schema, Mapping):
        return _ANY
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list) and kind:
        return frozenset(kind)
    if "enum" in schema and isinstance(schema["enum"], list):
        return frozenset(_type_of(v) for v in schema["enum"])
    if "const" in schema:
        return frozenset({_type_of(schema["const"])})
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        found: set[str] = set()
        for branch in branches:
            types = allowed_types(branch)
            if types is _ANY:
                return _ANY
            found |= types
        return frozenset(found)
    return _ANY


def _type_of(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return _JSON_TYPE.get(type(value), "string")


def _fits(value: Any, types: frozenset[str]) -> bool:
    kind = _type_of(value)
    if kind in types:
        return True
    if kind == "integer" and "number" in types:
        return True
    return kind == "number" and "integer" in types and float(value).is_integer()


STRING_ONLY = frozenset({"string"})


def read_untyped(raw: str, types: frozenset[str]) -> tuple[Any, Kind | None, str]:
    """The value of a parameter's raw text under the rule above: (value, defect kind or
    None, why). On a defect the value is the raw text."""
    if types == STRING_ONLY:
        return raw, None, ""
    unconstrained = types is _ANY or "*" in types
    try:
        value = read_json(raw)
    except (ValueError, RecursionError):
        value = raw
        parsed = False
    else:
        parsed = True
    if parsed and (unconstrained or _fits(value, types)):
        return value, None, ""
    if unconstrained or "string" in types:
        return raw, None, ""
    wanted = " or ".join(sorted(types))
    if parsed:
        return raw, Kind.VALUE_TYPE_MISMATCH, f"is JSON, but not of type {wanted}"
    try:
        ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw, Kind.VALUE_TYPE_MISMATCH, f"is not JSON of type {wanted}"
    return raw, Kind.PYTHON_LITERAL, f"is Python's spelling, not JSON of type {wanted}"


def parameter_schemas(tool_schema: Any) -> Mapping[str, Any]:
    """A tool's `properties`, or nothing for a schema without them."""
    if isinstance(tool_schema, Mapping):
        properties = tool_schema.get("properties")
        if isinstance(properties, Mapping):
            return properties
    return {}
