"""The script for requests from unknown clients: call the first tool once, then answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.scenarios.base import Message, PlannedCall, PlannedTurn


def _example_value(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "example"


def generic_script(messages: Sequence[Message], tools: Sequence[Message]) -> PlannedTurn:
    """Deterministic: one call with the first tool's required arguments, then a text answer."""
    if not tools or (messages and messages[-1].get("role") == "tool"):
        return PlannedTurn(reasoning="I have what I need.", content="Done.")
    function = tools[0].get("function", {})
    params = function.get("parameters", {})
    props = params.get("properties", {})
    args = {k: _example_value(props.get(k, {})) for k in params.get("required", [])}
    return PlannedTurn(
        reasoning="I will call the tool.", calls=(PlannedCall(function.get("name", "tool"), args),)
    )
