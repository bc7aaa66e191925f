"""What a request's shape does to the scripted agent's turn, as a serving engine enforces it.

A grammar-constrained request gets what its grammar forces: `tool_choice: required` at least
one call (the planned ones, or the last call the conversation made), a named function one
call to that function, `response_format` a JSON object and no call (`json_schema`: meeting the
schema, as far as this engine writes one: an object of the answer's summary and whether it
is done). `parallel_tool_calls: false` keeps the first call. Stop strings cut the completion
text where the first one starts, as vLLM and SGLang do on the detokenized text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from repro.dsml.markers import EOS
from repro.scenarios import PlannedCall, PlannedTurn


def shaped_turn(
    plan: PlannedTurn,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
    *,
    tool_choice: Any,
    response_format: str,
    parallel_tool_calls: bool,
) -> PlannedTurn:
    """The planned turn as the request's constraints let it out."""
    if response_format in ("json_object", "json_schema"):
        answer = {"summary": plan.content or "continuing with the task", "done": not plan.calls}
        return PlannedTurn(plan.reasoning, json.dumps(answer))
    calls = plan.calls
    named = _named(tool_choice)
    if named is not None:
        calls = tuple(c for c in calls if c.name == named)[:1] or (
            _call_to(named, messages, tools),
        )
    elif tool_choice == "required" and not calls:
        calls = (_last_call(messages) or _call_to(_first_tool(tools), messages, tools),)
    if not parallel_tool_calls:
        calls = calls[:1]
    if calls == plan.calls:
        return plan
    return PlannedTurn(plan.reasoning, "" if calls else plan.content, calls)


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """The text up to the first stop string (excluded), then the end-of-sequence token that
    stands for the tokens that wrote the stop string (generated, counted, never shown);
    and whether one was found."""
    at = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    return (text, False) if at < 0 else (text[:at] + EOS, True)


def _named(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return function["name"]
    return None


def _first_tool(tools: Sequence[dict[str, Any]]) -> str:
    return tools[0].get("function", {}).get("name", "tool") if tools else "tool"


def _last_call(messages: Sequence[dict[str, Any]], name: str | None = None) -> PlannedCall | None:
    """The conversation's most recent call (to `name`, when given), to make again."""
    for message in reversed(messages):
        for call in reversed(message.get("tool_calls") or ()):
            function = call.get("function", {})
            if name is not None and function.get("name") != name:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                continue
            if isinstance(arguments, dict):
                return PlannedCall(function.get("name", ""), arguments)
    return None


def _call_to(
    name: str, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
) -> PlannedCall:
    """A call to `name`: the last one the conversation made, else its required arguments with
    the simplest values their schema allows."""
    if (again := _last_call(messages, name)) is not None:
        return again
    schema = next(
        (t.get("function", {}).get("parameters", {}) for t in tools
         if t.get("function", {}).get("name") == name),
        {},
    )  # fmt: skip
    properties = schema.get("properties", {})
    return PlannedCall(
        name, {k: _simplest(properties.get(k, {})) for k in schema.get("required", [])}
    )


def _simplest(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {k: _simplest(v) for k, v in schema.get("properties", {}).items()
                if k in schema.get("required", [])}  # fmt: skip
    return "x" * max(1, schema.get("minLength", 1))
