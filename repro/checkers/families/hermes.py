"""Hermes / Qwen JSON calls read strictly (repro.toolformats.hermes has the grammar).

The block holds a newline, one JSON object with exactly `name` and `arguments`, a newline.
The object is read string-aware: `</tool_call>` inside a JSON string is the string's text,
where the engines' `<tool_call>(.*?)</tool_call>` cuts the call short (vLLM #45310).
SGLang's `parameters` for `arguments` is malformed_call; a block with the wrong newlines
is bad_framing; a bare object in content, `<tool_call>` dropped, is stripped_marker.
"""

from __future__ import annotations

import re
from enum import IntEnum, auto
from functools import partial

from repro.checkers.families.calls import TOOL_NAME, CallDraft, key_finder
from repro.checkers.families.canonical import (
    JsonCall,
    free_text,
    json_object,
    read_canonical,
    reader_shape,
)
from repro.checkers.families.family import Family
from repro.checkers.families.findings import Findings
from repro.checkers.families.json_payload import PayloadCache
from repro.checkers.families.leaks import LeakScan
from repro.checkers.families.reader import BlockReader, ReasoningRule
from repro.checkers.kinds import Kind
from repro.toolformats.hermes import (
    END_OF_TURN,
    THINK_CLOSE,
    THINK_OPEN,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
)

CALL_MARKERS = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE)
MARKERS = (THINK_OPEN, THINK_CLOSE, *CALL_MARKERS, *END_OF_TURN)
STRIPPED = (r'\{\s*"name"\s*:\s*"[^"\n]{1,64}"\s*,\s*"(?:arguments|parameters)"\s*:',)
SPECIALS = (r"<\|[A-Za-z_]{2,32}\|>", r"</?think>")
_KEYS = ("name", "arguments")


class _S(IntEnum):
    PROSE = auto()
    CALL = auto()  # after <tool_call>: a newline, the object, a newline, </tool_call>
    BETWEEN = auto()  # after </tool_call>: a newline and the next block, or the end


class HermesReader(BlockReader):
    prose_state, after_state = _S.PROSE, _S.BETWEEN
    after_what = "after a call"
    rule = ReasoningRule.FORBIDDEN
    end_tokens = END_OF_TURN
    markers = MARKERS

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.call_at = -1
        self.payloads = PayloadCache()

    def keeps_as_text(self, seg: str) -> bool:
        return self.state is _S.CALL and self.payloads.read(seg).open_string

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        state = self.state
        if marker == TOOL_CALL_OPEN:
            if state is _S.PROSE:
                self.prose(seg, seg_at)
            elif state is _S.BETWEEN:
                self.after_block(seg, seg_at, "\n")
            else:
                self.out.add(
                    Kind.UNCLOSED_ELEMENT, at, f"a block is closed by the next `{TOOL_CALL_OPEN}`"
                )
                self._read_object(seg, seg_at)
            self.call_opens(at)
            self.call_at = at
            self.state = _S.CALL
        elif marker == TOOL_CALL_CLOSE and state is _S.CALL:
            self._read_object(seg, seg_at)
            self.state = _S.BETWEEN
        else:
            self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where the grammar does not allow it")
            if state is _S.CALL:
                self.state = _S.BETWEEN  # the call is lost; read on after it
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        if self.state is _S.PROSE:
            self.prose(seg, seg_at)
        elif self.state is _S.BETWEEN:
            self.after_block(seg, seg_at, None)
        else:
            self.out.truncated(self.call_at, "a tool call")

    def _read_object(self, seg: str, seg_at: int) -> None:
        call = CallDraft(self.call_at)
        payload = self.payloads.read(seg)
        obj = payload.value
        if payload.problem or not isinstance(obj, dict):
            why = payload.problem or f"JSON {type(obj).__name__}, not an object"
            self.out.add(Kind.MALFORMED_ARGUMENTS, seg_at + payload.offset, f"the call is {why}")
            return
        # The template frames the object with exactly one newline on each side.
        framed = len(seg) > 2 and seg[0] == seg[-1] == "\n" and seg[1] == "{" and seg[-2] == "}"
        if not framed:
            call.broken = True
            self.out.add(
                Kind.BAD_FRAMING, seg_at, "the call's object is not framed by single newlines"
            )
        if tuple(obj) != _KEYS:
            call.broken = True
            keys = ", ".join(map(repr, obj))
            message = f'the call has keys {keys}; the model writes "name", "arguments"'
            self.out.add(Kind.MALFORMED_CALL, seg_at, message)
        name, arguments = obj.get("name"), obj.get("arguments")
        if isinstance(name, str):
            call.set_name(self.out, name, seg_at)
        else:
            call.broken = True
            self.out.add(Kind.MALFORMED_CALL, seg_at, "the call's name is not a string")
        if not isinstance(arguments, dict):
            call.broken = True
            if "arguments" in obj:  # a missing key was reported with the keys
                message = f"{call.label()}: arguments are not a JSON object"
                self.out.add(Kind.MALFORMED_ARGUMENTS, seg_at, message)
        else:
            self.out.json_strings(arguments, seg, seg_at)
        if not call.broken:
            self.out.call(call.name, arguments, call.at, key_finder(seg, seg_at, call.at))


LEAKS = LeakScan(CALL_MARKERS, (TOOL_CALL_OPEN,), STRIPPED, SPECIALS, markers_are_text=True)
_OBJECT = free_text(MARKERS)
_CALL = re.compile("<tool_call>\n(\\{" + _OBJECT + "\\})\n</tool_call>")


def _draft(m: re.Match[str]) -> JsonCall | None:
    obj = json_object(m[1])
    if obj is None or tuple(obj) != _KEYS:
        return None
    name, arguments = obj["name"], obj["arguments"]
    if (
        not isinstance(name, str)
        or TOOL_NAME.match(name) is None
        or not isinstance(arguments, dict)
    ):
        return None
    # As the reader reads it: the framed segment, from the newline after <tool_call>.
    return JsonCall(
        name, m.start(), m.string[m.start(1) - 1 : m.end(1) + 1], m.start(1) - 1, arguments
    )


SHAPE = reader_shape(
    HermesReader,
    LEAKS,
    first=TOOL_CALL_OPEN,
    call=_CALL,
    draft=_draft,
    each=TOOL_CALL_OPEN,
    joint="\n",
)

HERMES = Family(
    "hermes",
    "raw Hermes / Qwen2.5 / Qwen3 completion text (JSON in <tool_call>)",
    MARKERS,
    HermesReader,
    LEAKS,
    partial(read_canonical, SHAPE),
)
