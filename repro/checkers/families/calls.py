"""One call being read: its name, arguments and where each starts; broken once any part is."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from repro.checkers.families.findings import Findings
from repro.checkers.families.json_payload import Payload, read_payload
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet

# OpenAI's function names are [a-zA-Z0-9_-]{1,64}; dots are common in namespaced tools.
TOOL_NAME_TEXT = r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}"
PARAMETER_NAME_TEXT = r"""[^\s<>"'=/]{1,128}"""
TOOL_NAME = re.compile(TOOL_NAME_TEXT + r"\Z")
PARAMETER_NAME = re.compile(PARAMETER_NAME_TEXT + r"\Z")


class CallDraft:
    __slots__ = ("args", "at", "broken", "key_at", "name", "opened")

    def __init__(self, at: int, opened: bool = True) -> None:
        self.at = at
        self.opened = opened  # it had its opening marker
        self.name = "?"
        self.broken = False
        self.args: dict[str, Any] = {}
        self.key_at: dict[str, int] = {}

    def label(self) -> str:
        return "a call" if self.name == "?" else f"call {self.name!r}"

    def set_name(self, out: Findings, name: str, at: int) -> None:
        self.name = name or "?"
        if TOOL_NAME.match(name) is None:
            self.broken = True
            out.add(Kind.MALFORMED_CALL, at, f"`{snippet(name)}` is not a tool name")

    def add_arg(self, out: Findings, key: str, value: Any, at: int) -> None:
        if key in self.args:
            self.broken = True
            out.add(Kind.DUPLICATE_PARAMETER, at, f"{self.label()}: parameter {key!r} twice")
            return
        self.args[key] = value
        self.key_at[key] = at

    def close(self, out: Findings) -> None:
        """The call is complete: keep it if nothing in it was broken."""
        if not self.broken:
            out.call(self.name, self.args, self.at, self.key_at)


def key_finder(raw: str, raw_at: int, fallback: int) -> Callable[[str], int]:
    """Where a key of a JSON object sits in its text: for pointing at a schema violation."""

    def find(key: str) -> int:
        at = raw.find(json.dumps(key, ensure_ascii=False))
        return fallback if at == -1 else raw_at + at

    return find


def read_json_arguments(
    out: Findings, call: CallDraft, raw: str, raw_at: int, payload: Payload | None = None
) -> None:
    """A call's JSON payload (Hermes object's `arguments` aside): one object, nothing around it;
    then the call is complete. `payload` is `raw` already read."""
    if payload is None:
        payload = read_payload(raw)
    if payload.problem or not isinstance(payload.value, dict):
        call.broken = True
        why = payload.problem or f"JSON {type(payload.value).__name__}, not an object"
        out.add(
            Kind.MALFORMED_ARGUMENTS, raw_at + payload.offset, f"{call.label()}: arguments {why}"
        )
    elif payload.padded:
        call.broken = True
        out.add(Kind.BAD_FRAMING, raw_at, f"{call.label()}: whitespace around the JSON arguments")
    if isinstance(payload.value, dict | list):
        out.json_strings(payload.value, raw, raw_at)
    if not call.broken:
        out.call(call.name, payload.value, call.at, key_finder(raw, raw_at, call.at))
