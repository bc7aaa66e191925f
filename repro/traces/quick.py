"""A fast mirror of trace.schema.json for lines that are fine: the schema is the rule, this
only spares the common case its cost (jsonschema takes about 3 ms a line of agent traffic).

`fits(kind, line)` is True only for a line the schema accepts; anything it is unsure of is
False, and the schema itself then judges the line and says what is wrong
(tests/unit/traces/test_quick.py holds the two to that over the malformed corpus).
"""

from __future__ import annotations

from typing import Any

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
SESSION_KEYS = frozenset({"session", "tools", "messages", "params", "model", "meta"})
TURN_KEYS = frozenset({
    "session", "turn", "base", "messages", "tools", "params", "model", "response",
    "finish_reason", "usage", "status", "error", "at", "ttft_s", "duration_s",
})  # fmt: skip


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _str_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _call(call: Any) -> bool:
    if not isinstance(call, dict):
        return False
    function = call.get("function")
    return (
        isinstance(call.get("id"), str)
        and bool(call["id"])
        and call.get("type", "function") == "function"
        and ("index" not in call or _int(call["index"]))
        and isinstance(function, dict)
        and isinstance(function.get("name"), str)
        and isinstance(function.get("arguments"), str)
    )


def _part(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and isinstance(part.get("type"), str)
        and ("text" not in part or isinstance(part["text"], str))
    )


def message(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("role"), str):
        return False
    if value["role"] not in ROLES:
        return False
    content = value.get("content")
    if not (_str_or_none(content) or (isinstance(content, list) and all(map(_part, content)))):
        return False
    if "name" in value and not isinstance(value["name"], str):
        return False
    if not _str_or_none(value.get("reasoning_content")):
        return False
    calls = value.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(map(_call, calls))):
        return False
    if "tool_call_id" in value or value["role"] == "tool":
        identity = value.get("tool_call_id")
        if not (isinstance(identity, str) and identity):
            return False
    return True


def _tool(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, dict) else None
    return (
        isinstance(function, dict)
        and tool.get("type") == "function"
        and isinstance(function.get("name"), str)
        and bool(function["name"])
        and ("description" not in function or isinstance(function["description"], str))
        and ("parameters" not in function or isinstance(function["parameters"], dict))
        and ("strict" not in function or function["strict"] is None
             or isinstance(function["strict"], bool))
    )  # fmt: skip


def _common(line: dict[str, Any]) -> bool:
    return (
        ("session" not in line or isinstance(line["session"], str) or _int(line["session"]))
        and ("tools" not in line or (isinstance(line["tools"], list) and all(map(_tool, line["tools"]))))
        and isinstance(line.get("messages"), list)
        and all(map(message, line["messages"]))
        and ("params" not in line or isinstance(line["params"], dict))
        and ("model" not in line or isinstance(line["model"], str))
    )  # fmt: skip


def fits(kind: str, line: dict[str, Any]) -> bool:
    """True only if the schema's `kind` accepts the line (False: let the schema judge it)."""
    if kind == "session_line":
        return (
            line.keys() <= SESSION_KEYS
            and _common(line)
            and bool(line["messages"])
            and ("meta" not in line or isinstance(line["meta"], dict))
        )
    if kind == "turn_line":
        response = line.get("response")
        optional_numbers = ("at", "ttft_s", "duration_s")
        return (
            line.keys() <= TURN_KEYS
            and "session" in line
            and _common(line)
            and _int(line.get("turn")) and line["turn"] >= 0
            and ("base" not in line or (_int(line["base"]) and line["base"] >= 0))
            and (response is None or message(response))
            and _str_or_none(line.get("finish_reason"))
            and (line.get("usage") is None or isinstance(line["usage"], dict))
            and ("status" not in line or _int(line["status"]))
            and ("error" not in line or isinstance(line["error"], str))
            and ("at" not in line or _number(line["at"]))
            and all(line.get(k) is None or _number(line[k]) for k in optional_numbers[1:])
        )  # fmt: skip
    return False  # headers are rare: the schema judges them
