"""GLM's `<arg_key>`/`<arg_value>` calls read strictly, in both dialects (repro.toolformats.glm):
`glm45` puts a newline after the name and after every tag pair, `glm47` none anywhere.

A value ends only at `</arg_value>`: any other marker inside it is the value's text (all
GLM markers are special tokens, so position is the only signal; research/toolformats.md
§4.6), flagged as markup_in_value. Flagged where engines recover: a pair with no `<arg_key>`
(vLLM #47190's recovery), the other dialect's newlines, text between calls. GLM calls come
after `</think>`: one before it is call_in_reasoning.
"""

from __future__ import annotations

import re
from enum import IntEnum, auto
from functools import partial

from repro.checkers.families.calls import (
    PARAMETER_NAME,
    PARAMETER_NAME_TEXT,
    TOOL_NAME_TEXT,
    CallDraft,
)
from repro.checkers.families.canonical import (
    Shape,
    free_text,
    read_canonical,
    reader_shape,
    xml_draft,
)
from repro.checkers.families.family import Family
from repro.checkers.families.findings import Findings
from repro.checkers.families.leaks import Glued, LeakScan
from repro.checkers.families.reader import BlockReader, ReasoningRule
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.toolformats.glm import (
    END_OF_TURN,
    KEY_CLOSE,
    KEY_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    VALUE_CLOSE,
    VALUE_OPEN,
)

CALL_MARKERS = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE, KEY_OPEN, KEY_CLOSE, VALUE_OPEN, VALUE_CLOSE)
MARKERS = (THINK_OPEN, THINK_CLOSE, *CALL_MARKERS, *END_OF_TURN)
SPECIALS = (r"<\|[A-Za-z_]{2,32}\|>", r"\[gMASK\]", r"<sop>", r"</?think>")


class _S(IntEnum):
    PROSE = auto()
    HEAD = auto()  # after <tool_call>: NAME (and glm45's newline), then a key or the close
    KEY = auto()  # after <arg_key>: the key, then </arg_key>
    KEY_DONE = auto()  # after </arg_key>: (a newline), then <arg_value>
    VALUE = auto()  # after <arg_value>: raw text up to </arg_value>
    PAIR_DONE = auto()  # after </arg_value>: (a newline), then a key or </tool_call>
    BETWEEN = auto()  # after </tool_call>: (a newline) and the next call, or the end


class GlmReader(BlockReader):
    prose_state, after_state = _S.PROSE, _S.BETWEEN
    rule = ReasoningRule.FORBIDDEN
    end_tokens = END_OF_TURN
    markers = MARKERS
    newline = "\n"  # glm45's separator; glm47 has none

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.key = "?"
        self.key_at = 0

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        state = self.state
        if state is _S.VALUE:
            if marker != VALUE_CLOSE:
                return True  # a marker inside a value is the value's text
            self._value(seg, seg_at)
            self.state = _S.PAIR_DONE
            return False
        if marker == TOOL_CALL_OPEN and not self.in_call():
            if state is _S.PROSE:
                self.prose(seg, seg_at)
            else:
                self.after_block(seg, seg_at, self.newline if self.newline else "")
            self.call_opens(at)
            self.call = CallDraft(at)
            self.state = _S.HEAD
        elif marker == KEY_OPEN and state in (_S.HEAD, _S.PAIR_DONE):
            self._head_or_pair(seg, seg_at)
            self.key_at = at
            self.state = _S.KEY
        elif marker == KEY_CLOSE and state is _S.KEY:
            self._key(seg, seg_at)
            self.state = _S.KEY_DONE
        elif marker == KEY_CLOSE and state is _S.HEAD:
            self._missing_key_open(seg, seg_at, at)
        elif marker == VALUE_OPEN and state is _S.KEY_DONE:
            self.exactly(seg, seg_at, self.newline, "between a key and its value")
            self.state = _S.VALUE
        elif marker == TOOL_CALL_CLOSE and state in (_S.HEAD, _S.PAIR_DONE):
            self._head_or_pair(seg, seg_at)
            assert self.call is not None
            self.call.close(self.out)
            self.call = None
            self.state = _S.BETWEEN
        else:
            self._stray(marker, at)
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        if self.state is _S.PROSE:
            self.prose(seg, seg_at)
        elif self.state is _S.BETWEEN:
            self.after_block(seg, seg_at, None)
        elif self.call is not None:
            inside = self.call.label()
            if self.state in (_S.KEY, _S.KEY_DONE, _S.VALUE):
                inside = f"parameter {self.key!r} of {inside}"
            self.out.truncated(self.call.at, inside)

    # -- parts ------------------------------------------------------------------------

    def _head_or_pair(self, seg: str, seg_at: int) -> None:
        if self.state is _S.PAIR_DONE:
            self.exactly(seg, seg_at, self.newline, "after a value")
            return
        call = self.call
        assert call is not None
        name = seg[: len(seg) - len(self.newline)] if seg.endswith(self.newline) else seg
        if (self.newline and not seg.endswith(self.newline)) or "\n" in name:
            call.broken = True
            self.out.add(
                Kind.BAD_FRAMING,
                seg_at,
                f"the call's name `{snippet(seg)}` is not as the template writes it",
            )
            name = name.strip()
        call.set_name(self.out, name, seg_at)

    def _key(self, seg: str, seg_at: int) -> None:
        self.key = seg
        if PARAMETER_NAME.match(seg) is None:
            if self.call is not None:
                self.call.broken = True
            self.out.add(Kind.MALFORMED_CALL, seg_at, f"`{snippet(seg)}` is not a parameter name")

    def _missing_key_open(self, seg: str, seg_at: int, at: int) -> None:
        """`<tool_call>NAMEkey</arg_key>`: the name and the key run together."""
        call = self.call
        assert call is not None
        call.broken = True
        self.out.add(Kind.MISSING_OPEN_TAG, at, f"`{KEY_CLOSE}` with no `{KEY_OPEN}`")
        call.set_name(self.out, seg.split("\n")[0], seg_at)
        self.key = "?"
        self.state = _S.KEY_DONE

    def _value(self, raw: str, at: int) -> None:
        call = self.call
        if call is None:  # a value opened by a stray marker: read it, keep no call
            call = self.call = CallDraft(at)
            call.broken = True
        value, ok = self.out.typed_value(call.name, self.key, raw, at)
        if not ok:
            call.broken = True
        call.add_arg(self.out, self.key, value, self.key_at)

    def _stray(self, marker: str, at: int) -> None:
        self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where the grammar does not allow it")
        if self.call is not None:
            self.call.broken = True
        if marker == TOOL_CALL_CLOSE:
            self.call, self.state = None, _S.BETWEEN
        elif marker == TOOL_CALL_OPEN:
            self.call, self.state = CallDraft(at), _S.HEAD
            self.call.broken = True
        elif marker == VALUE_OPEN:
            self.state = _S.VALUE
        elif marker == KEY_OPEN:
            self.state = _S.KEY


class Glm47Reader(GlmReader):
    newline = ""


_LEAKS = LeakScan(CALL_MARKERS, (TOOL_CALL_OPEN,), (), SPECIALS, Glued.PAIRS)
_VALUE = free_text(MARKERS)  # a marker inside a value is read marker by marker (and flagged)


def _shape(reader: type[GlmReader]) -> Shape:
    nl = reader.newline
    pair = (
        "<arg_key>("
        + PARAMETER_NAME_TEXT
        + ")</arg_key>"
        + nl
        + "<arg_value>("
        + _VALUE
        + ")</arg_value>"
        + nl
    )
    any_pair = pair.replace("(" + PARAMETER_NAME_TEXT + ")", PARAMETER_NAME_TEXT).replace(
        "(" + _VALUE + ")", _VALUE
    )
    params = re.compile(pair)
    call = re.compile(
        "<tool_call>(" + TOOL_NAME_TEXT + ")" + nl + "((?:" + any_pair + ")*)</tool_call>"
    )

    return reader_shape(
        reader,
        _LEAKS,
        first=TOOL_CALL_OPEN,
        call=call,
        draft=xml_draft(params),
        each=TOOL_CALL_OPEN,
        joint=nl,
    )


GLM45 = Family(
    "glm45",
    "raw GLM-4.5/4.6 completion text (arg_key/arg_value calls)",
    MARKERS,
    GlmReader,
    _LEAKS,
    partial(read_canonical, _shape(GlmReader)),
)
GLM47 = Family(
    "glm47",
    "raw GLM-4.7/GLM-5 completion text (arg_key/arg_value calls, no newlines)",
    MARKERS,
    Glm47Reader,
    _LEAKS,
    partial(read_canonical, _shape(Glm47Reader)),
)
