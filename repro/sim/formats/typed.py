"""An XML-carried value (Qwen3 XML, GLM, MiniMax) as an engine's parser types it: by the schema.

The engines convert each parameter's raw text with the request's tool schema, leniently
(SGLang's and vLLM's `_convert_param_value`, research/toolformats.md §1b.1 and §4.10; the
behaviour read there, the code written here): `null` is null whatever the type; a string
type keeps the text; an integer type `int()`, a number `float()` collapsed to an integer
when whole; a boolean is `== "true"`; an object or array `json.loads`, then Python's
literal syntax; a parameter the schema does not declare keeps its text; whatever fails to
convert "degenerates to string". So `"1.0"` for an integer stays the string, `True` for an
object becomes true: what a lenient engine returns, which repro's strict reader flags.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

Schemas = Mapping[str, Mapping[str, Any]]  # tool name -> its parameters' properties


def schemas_of(tools: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> dict[str, dict]:
    """Each declared tool's `properties`, by name (what the converters read)."""
    out: dict[str, dict] = {}
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        out[function["name"]] = properties if isinstance(properties, dict) else {}
    return out


def _types(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return [t for branch in schema[key] for t in _types(branch)]
    return []


def convert(text: str, schema: Any) -> Any:
    """The value an engine's parser makes of `text` for a parameter of this schema."""
    if text.lower() == "null":
        return None
    types = _types(schema)
    if not types or any(t in ("string", "str", "text") for t in types):
        return text
    kind = types[0]
    try:
        if kind.startswith("int"):
            return int(text)
        if kind.startswith("num") or kind == "float":
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
    except (ValueError, OverflowError):
        return text
    if kind.startswith("bool"):
        return text.strip().lower() == "true"
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def typed_arguments(name: str, pairs: list[tuple[str, str]], schemas: Schemas) -> dict[str, Any]:
    """The call's arguments from (key, raw text) pairs; a key twice keeps its last value."""
    properties = schemas.get(name, {})
    return {key: convert(text, properties.get(key)) for key, text in pairs}
