"""What a format's reader records for one turn: defects at their offsets, and the calls it read,
each held to the request's tools (declared name, typed values, JSON Schema)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from repro.checkers.char_scan import may_start_defect
from repro.checkers.families.leaks import LeakScan, Where
from repro.checkers.families.typed_values import (
    STRING_ONLY,
    allowed_types,
    parameter_schemas,
    read_untyped,
)
from repro.checkers.json_codec import arguments_text
from repro.checkers.json_strings import offset_in_json, strings_in
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.checkers.repetition import LOOP_MIN_CHARS
from repro.checkers.text_watch import TextWatch
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import Defect, ToolCall, Verdict

# A `\\uXXXX` escape: a `\\u` after an even number of backslashes (`\\\\u` is a backslash, then u).
UNICODE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u")


class Findings:
    """Defects (offsets into `field`) and well-formed calls, in the order found."""

    __slots__ = ("calls", "defects", "field", "finish_reason", "leaks", "quiet", "tools")

    def __init__(
        self, tools: ToolSet, leaks: LeakScan, finish_reason: str | None, field: str = "content"
    ) -> None:
        self.tools = tools
        self.leaks = leaks
        self.finish_reason = finish_reason
        self.field = field
        self.defects: list[Defect] = []
        self.calls: list[ToolCall] = []
        # The whole text was screened (canonical.quiet_text): no piece holds a leak or a
        # character defect, so only long pieces need a look, for repetition.
        self.quiet = False

    def add(self, kind: Kind, at: int, message: str) -> None:
        self.defects.append(Defect(kind, at, message, self.field))

    def text(self, text: str, at: int, where: Where) -> int:
        """Check a piece of free text (prose, reasoning, a string value); the defects found."""
        if not text:
            return 0
        before = len(self.defects)
        if self.quiet:
            if where is not Where.VALUE:
                for leak in self.leaks.glued_calls(text, self.tools):
                    self.add(leak.kind, at + leak.start, leak.message)
            if len(text) < LOOP_MIN_CHARS:
                return len(self.defects) - before
        else:
            for leak in self.leaks.scan(text, where, self.tools):
                self.add(leak.kind, at + leak.start, leak.message)
        # Character defects need a suspect character; repetition needs LOOP_MIN_CHARS.
        if len(text) >= LOOP_MIN_CHARS or may_start_defect(text):
            watch = TextWatch()
            watch.advance(text, 0, final=True)
            for d in watch.defects(self.field):
                self.defects.append(Defect(d.kind, d.offset + at, d.message, self.field))
        return len(self.defects) - before

    def json_strings(self, value: Any, raw: str, at: int) -> None:
        """Free-text checks on the strings inside a decoded JSON value, at their place in `raw`.

        Without `\\u` escapes every string's characters stand in `raw` as they are (the
        other escapes hide nothing a scan looks for), so `raw` is scanned once instead."""
        if self.quiet and len(raw) < LOOP_MIN_CHARS:
            return  # screened, and too short to repeat itself
        if "\\u" not in raw or UNICODE_ESCAPE.search(raw) is None:
            self.text(raw, at, Where.VALUE)
            return
        assert not self.quiet  # a text with escapes is never screened
        for s in strings_in(value):
            if not s:
                continue
            for leak in self.leaks.scan(s, Where.VALUE):
                offset = at + offset_in_json(raw, s, leak.start)
                self.add(leak.kind, offset, f"{leak.message} (in `{snippet(s)}`)")
            if len(s) >= LOOP_MIN_CHARS or may_start_defect(s):
                watch = TextWatch()
                watch.advance(s, 0, final=True)
                for d in watch.defects(self.field):
                    offset = at + offset_in_json(raw, s, d.offset)
                    self.defects.append(Defect(d.kind, offset, d.message, self.field))

    def truncated(self, at: int, inside: str) -> None:
        if self.finish_reason == "length":
            self.add(Kind.TRUNCATED_CALL, at, f"generation hit the length limit inside {inside}")
        else:
            self.add(Kind.TRUNCATED_BLOCK, at, f"the text ends inside {inside}")

    def typed_value(self, tool: str, key: str, raw: str, at: int) -> tuple[Any, bool]:
        """Read an untyped parameter's text by its schema (typed_values.py): (value, ok)."""
        types = types_of(self.tools, tool, key)
        value, kind, why = read_untyped(raw, types)
        if kind is not None:
            self.add(kind, at, f"{tool}: parameter {key!r}: `{snippet(raw)}` {why}")
            return value, False
        if self.quiet and len(raw) < LOOP_MIN_CHARS:
            return value, True  # screened, and too short to repeat itself
        if isinstance(value, str):
            self.text(value, at, Where.VALUE)
        else:
            self.json_strings(value, raw, at)
        return value, True

    def call(
        self, name: str, arguments: dict, at: int, key_at: Mapping[str, int] | Callable[[str], int]
    ) -> None:
        """A well-formed call: keep it; flag an undeclared tool or a schema violation, at the
        parameter it is about (`key_at`: each key's offset, or a function finding it)."""
        text = arguments_text(arguments)
        self.calls.append(ToolCall(name, text))
        if name not in self.tools:
            self.add(Kind.UNKNOWN_TOOL, at, f"tool {name!r} is not among the request's tools")
            return
        for violation in self.tools.violations(name, arguments, text):
            key = violation.path[0] if violation.path else None
            if not isinstance(key, str):
                offset = at
            elif callable(key_at):
                offset = key_at(key)
            else:
                offset = key_at.get(key, at)
            self.add(Kind.SCHEMA_VIOLATION, offset, violation.describe(name))

    def verdict(self) -> Verdict:
        defects = self.defects
        if len(defects) > 1:
            defects = sorted(set(defects), key=lambda d: (d.offset, d.kind, d.message))
        return Verdict(tuple(self.calls), tuple(defects))


# A parameter's allowed types, per compiled validator (ToolSet keeps one per tool, and the
# same ToolSet serves a run's turns): read once instead of per value.
_TYPES: dict[tuple[int, str], tuple[Any, frozenset[str]]] = {}
_TYPES_SIZE = 4096


def types_of(tools: ToolSet, tool: str, key: str) -> frozenset[str]:
    validator = tools.validators.get(tool)
    known = _TYPES.get((id(validator), key))
    if known is not None and known[0] is validator:
        return known[1]
    schemas = parameter_schemas(validator.schema) if validator is not None else {}
    types = allowed_types(schemas[key]) if key in schemas else STRING_ONLY
    if len(_TYPES) >= _TYPES_SIZE:
        _TYPES.clear()
    _TYPES[(id(validator), key)] = (validator, types)
    return types
