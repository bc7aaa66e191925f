"""Mistral's current tool calls read strictly (repro.toolformats.mistral has the grammar).

Each call is `[TOOL_CALLS]NAME[ARGS]{JSON}`; calls follow one another with nothing between.
Flagged where engines recover: `[TOOL_CALLS` or `[ARGS` without `]` (marker_variant, SGLang
reads them), the v11 form with no `[ARGS]` (malformed_call), text after the calls. A marker
inside an open JSON string is the string's text. Magistral reasons in `[THINK]…[/THINK]`;
a call before `[/THINK]` is call_in_reasoning.
"""

from __future__ import annotations

import re
from enum import IntEnum, auto
from functools import partial

from repro.checkers.families.calls import TOOL_NAME_TEXT, CallDraft, read_json_arguments
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
from repro.checkers.families.leaks import Glued, LeakScan
from repro.checkers.families.reader import Reader, ReasoningRule
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.toolformats.mistral import (
    ARGS,
    END_OF_TURN,
    SPECIAL_TOKENS,
    THINK_CLOSE,
    THINK_OPEN,
    TOOL_CALLS,
)

VARIANTS = {TOOL_CALLS[:-1]: TOOL_CALLS, ARGS[:-1]: ARGS}
CALL_MARKERS = (TOOL_CALLS, ARGS)
MARKERS = (THINK_OPEN, THINK_CLOSE, *CALL_MARKERS, *VARIANTS, *END_OF_TURN)
STRIPPED = (
    r"TOOL_CALLS\]",
    r"ARGS\]",
)  # the word left when `[` is lost; dropped tokens: Glued.JSON
SPECIALS = (*(t.replace("[", r"\[").replace("]", r"\]") for t in SPECIAL_TOKENS), r"\[CALL_ID\]")


class _S(IntEnum):
    PROSE = auto()
    NAME = auto()  # after [TOOL_CALLS]: the name, then [ARGS]
    ARGS = auto()  # after [ARGS]: the JSON, then the next [TOOL_CALLS] or the end
    AFTER = auto()  # a reasoning marker ended the calls: nothing more belongs here


class MistralReader(Reader):
    think_open, think_close = THINK_OPEN, THINK_CLOSE
    rule = ReasoningRule.FORBIDDEN
    end_tokens = END_OF_TURN
    markers = MARKERS

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.state = _S.PROSE
        self.call: CallDraft | None = None
        self.payloads = PayloadCache()

    def in_call(self) -> bool:
        return self.state is _S.NAME or self.state is _S.ARGS

    def marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        # Nothing closes a call but the next call: a reasoning marker after complete
        # arguments ends them, and the base judges the marker where it stands.
        thinking = marker in (THINK_OPEN, THINK_CLOSE)
        if thinking and self.state is _S.ARGS and not self.keeps_as_text(seg):
            self._arguments(seg, seg_at)
            self.state = _S.AFTER
            seg, seg_at = "", at
        return super().marker(seg, seg_at, marker, at)

    def keeps_as_text(self, seg: str) -> bool:
        return self.state is _S.ARGS and self.payloads.read(seg).open_string

    def outside_text(self, seg: str, seg_at: int) -> None:
        if self.state is _S.AFTER and seg.strip():
            self.out.add(Kind.TEXT_AFTER_BLOCK, seg_at, f"text after the calls: `{snippet(seg)}`")
        self.prose(seg, seg_at)

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        standing = VARIANTS.get(marker)
        if standing is not None:
            self.out.add(Kind.MARKER_VARIANT, at, f"`{marker}`: the model writes `{standing}`")
            marker = standing
        state = self.state
        if marker == TOOL_CALLS:
            if state is _S.PROSE or state is _S.AFTER:
                self.outside_text(seg, seg_at)
                self.call_opens(at)
            elif state is _S.ARGS:
                self._arguments(seg, seg_at)
            else:
                self._no_args(seg, seg_at)
            self.call = CallDraft(at)
            self.state = _S.NAME
        elif marker == ARGS and state is _S.NAME:
            assert self.call is not None
            self.call.set_name(self.out, seg, seg_at)
            self.state = _S.ARGS
        else:
            self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where the grammar does not allow it")
            if self.call is not None:
                self.call.broken = True
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        if self.state is _S.PROSE or self.state is _S.AFTER:
            self.outside_text(seg, seg_at)
        elif self.state is _S.ARGS:
            self._arguments(seg, seg_at)
        else:
            self._no_args(seg, seg_at)

    def _arguments(self, seg: str, seg_at: int) -> None:
        call = self.call
        assert call is not None
        payload = self.payloads.read(seg)
        if payload.open_string:  # the text ends inside a string of the arguments
            self.out.truncated(call.at, call.label())
            return
        read_json_arguments(self.out, call, seg, seg_at, payload)

    def _no_args(self, seg: str, seg_at: int) -> None:
        call = self.call
        assert call is not None
        brace = seg.find("{")
        if brace > 0:
            self.out.add(
                Kind.MALFORMED_CALL,
                seg_at + brace,
                f"`{TOOL_CALLS}NAME{{…}}` without `{ARGS}`: the v11 dialect, not this one",
            )
        else:
            self.out.truncated(call.at, call.label())


LEAKS = LeakScan(CALL_MARKERS, (TOOL_CALLS,), STRIPPED, SPECIALS, Glued.JSON)
_CALL = re.compile(
    re.escape(TOOL_CALLS)
    + "("
    + TOOL_NAME_TEXT
    + ")"
    + re.escape(ARGS)
    + "("
    + free_text(MARKERS)
    + ")(?="
    + re.escape(TOOL_CALLS)
    + "|"
    + "|".join(map(re.escape, END_OF_TURN))
    + r"|\Z)"
)


def _draft(m: re.Match[str]) -> JsonCall | None:
    value = json_object(m[2])
    return None if value is None else JsonCall(m[1], m.start(), m[2], m.start(2), value)


SHAPE = reader_shape(
    MistralReader,
    LEAKS,
    first=TOOL_CALLS,
    call=_CALL,
    draft=_draft,
    each=TOOL_CALLS,
)

MISTRAL = Family(
    "mistral",
    "raw Mistral completion text, v13 dialect ([TOOL_CALLS]NAME[ARGS]{JSON})",
    MARKERS,
    MistralReader,
    LEAKS,
    partial(read_canonical, SHAPE),
)
