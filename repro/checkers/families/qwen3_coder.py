"""Qwen3-Coder's XML calls read strictly (repro.toolformats.qwen3_coder has the grammar).

Engines recover what the template never writes (research/toolformats.md §1b.1); each is
flagged: a parameter ended by the next `<parameter=` or by `</function>` (unclosed_element),
`<function=` with no `<tool_call>` (missing_open_tag), a `<tool_call>` closed by the next
one (unclosed_element), values without their framing newlines (bad_framing). A value ends
only at `</parameter>`: other markers inside it are data, and flagged as markup_in_value.
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
    free_text,
    read_canonical,
    reader_shape,
    xml_draft,
)
from repro.checkers.families.family import Family
from repro.checkers.families.findings import Findings
from repro.checkers.families.leaks import LeakScan
from repro.checkers.families.reader import BlockReader, ReasoningRule
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.toolformats.qwen3_coder import (
    END_OF_TURN,
    FUNCTION_CLOSE,
    FUNCTION_OPEN,
    PARAMETER_CLOSE,
    PARAMETER_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
)

MARKERS = (
    THINK_OPEN,
    THINK_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_CALL_CLOSE,
    FUNCTION_OPEN,
    FUNCTION_CLOSE,
    PARAMETER_OPEN,
    PARAMETER_CLOSE,
    *END_OF_TURN,
)
CALL_MARKERS = MARKERS[2:8]
SPECIALS = (r"<\|[A-Za-z_]{2,32}\|>", r"</?think>")


class _S(IntEnum):
    PROSE = auto()
    OPEN = auto()  # after <tool_call>: a newline, then <function=
    HEAD = auto()  # after <function=: NAME>, a newline
    PARAM = auto()  # after <parameter=: KEY>, a newline, VALUE, a newline
    ARGS = auto()  # after a parameter or the head: a newline, then <parameter= or </function>
    FUNC_DONE = auto()  # after </function>: a newline, then </tool_call>
    BETWEEN = auto()  # after </tool_call>: a newline and the next block, or the end


class Qwen3CoderReader(BlockReader):
    prose_state, after_state = _S.PROSE, _S.BETWEEN
    rule = ReasoningRule.IMPLICIT_END  # Qwen3.5 opens <tool_call> before </think>
    end_tokens = END_OF_TURN
    markers = MARKERS

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.param_key = "?"
        self.param_at = 0
        self.param_ok = True

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        state = self.state
        if state is _S.PARAM:
            return self._in_value(seg, seg_at, marker, at)
        if marker == TOOL_CALL_OPEN:
            self._before_block(seg, seg_at, at)
            self._open_call(at, opened=True)
            self.state = _S.OPEN
        elif marker == FUNCTION_OPEN:
            if state is _S.OPEN:
                self.exactly(seg, seg_at, "\n", f"between `{TOOL_CALL_OPEN}` and `{FUNCTION_OPEN}`")
            else:
                self._before_block(seg, seg_at, at)
                self._open_call(at, opened=False)
                self.out.add(
                    Kind.MISSING_OPEN_TAG, at, f"`{FUNCTION_OPEN}` with no `{TOOL_CALL_OPEN}`"
                )
            self.state = _S.HEAD
        elif marker == PARAMETER_OPEN and state in (_S.HEAD, _S.ARGS):
            self._after_head_or_param(seg, seg_at)
            self._open_param(at)
        elif marker == FUNCTION_CLOSE and state in (_S.HEAD, _S.ARGS):
            self._after_head_or_param(seg, seg_at)
            self._close_function()
        elif marker == TOOL_CALL_CLOSE and state is _S.FUNC_DONE:
            self.exactly(seg, seg_at, "\n", f"between `{FUNCTION_CLOSE}` and `{TOOL_CALL_CLOSE}`")
            if self.call is not None and not self.call.opened:
                self.out.add(
                    Kind.STRAY_MARKER, at, f"`{TOOL_CALL_CLOSE}` closes no `{TOOL_CALL_OPEN}`"
                )
            self.call = None
            self.state = _S.BETWEEN
        else:
            self._stray(marker, at)
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        state, call = self.state, self.call
        if state is _S.PROSE:
            self.prose(seg, seg_at)
        elif state is _S.BETWEEN or (
            state is _S.FUNC_DONE and call is not None and not call.opened
        ):
            self.after_block(seg, seg_at, None)
        elif state is _S.PARAM and call is not None:
            self.out.truncated(self.param_at, f"parameter {self.param_key!r} of {call.label()}")
        elif call is not None:
            self.out.truncated(call.at, call.label())

    # -- the parts of a call ---------------------------------------------------------

    def _before_block(self, seg: str, seg_at: int, at: int) -> None:
        """Text before a call opens: prose before the first, one newline between blocks."""
        call = self.call
        if self.state is _S.PROSE:
            self.prose(seg, seg_at)
        elif self.state is _S.BETWEEN or (call is not None and not call.opened):
            self.after_block(seg, seg_at, "\n")
        elif self.state is _S.FUNC_DONE:  # a block opened where </tool_call> belongs
            self.out.add(
                Kind.UNCLOSED_ELEMENT,
                at,
                f"{call.label() if call else 'a call'}'s block "
                f"is closed by the next call, not `{TOOL_CALL_CLOSE}`",
            )
        else:
            self._stray_in_call(at, "a call opens inside another")
        self.call_opens(at)

    def _open_call(self, at: int, opened: bool) -> None:
        self.call = CallDraft(at, opened)

    def _after_head_or_param(self, seg: str, seg_at: int) -> None:
        if self.state is _S.ARGS:
            self.exactly(seg, seg_at, "\n", "after a parameter")
            return
        call = self.call
        assert call is not None
        gt = seg.find(">")
        if gt == -1:
            call.broken = True
            self.out.add(Kind.MALFORMED_CALL, seg_at, f"`{FUNCTION_OPEN}{snippet(seg)}` has no `>`")
            return
        call.set_name(self.out, seg[:gt], seg_at)
        self.exactly(seg[gt + 1 :], seg_at + gt + 1, "\n", "after the function's name")

    def _open_param(self, at: int) -> None:
        self.param_at = at
        self.state = _S.PARAM

    def _in_value(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        if marker == PARAMETER_CLOSE:
            self._end_param(seg, seg_at, closed=True)
            self.state = _S.ARGS
        elif marker == PARAMETER_OPEN:
            self._end_param(seg, seg_at, closed=False, by="the next parameter")
            self._open_param(at)
        elif marker == FUNCTION_CLOSE:
            self._end_param(seg, seg_at, closed=False, by=f"`{FUNCTION_CLOSE}`")
            self._close_function()
        else:
            return True  # any other marker is the value's text (flagged as markup in it)
        return False

    def _end_param(self, seg: str, seg_at: int, closed: bool, by: str = "") -> None:
        call = self.call
        assert call is not None
        gt = seg.find(">")
        key = seg[:gt] if gt != -1 else "?"
        self.param_key = key
        if not closed:
            call.broken = True
            self.out.add(
                Kind.UNCLOSED_ELEMENT,
                seg_at + len(seg),
                f"{call.label()}: parameter {key!r} is ended by {by}, not `{PARAMETER_CLOSE}`",
            )
        if gt == -1 or PARAMETER_NAME.match(key) is None:
            call.broken = True
            self.out.add(
                Kind.MALFORMED_CALL,
                self.param_at,
                f"{call.label()}: `{PARAMETER_OPEN}{snippet(seg)}` is not `{PARAMETER_OPEN}KEY>`",
            )
            return
        raw = seg[gt + 1 :]
        at = seg_at + gt + 1
        if len(raw) >= 2 and raw[0] == "\n" and raw[-1] == "\n":
            raw, at = raw[1:-1], at + 1
        elif closed:
            call.broken = True
            self.out.add(
                Kind.BAD_FRAMING,
                at,
                f"{call.label()}: parameter {key!r}'s value is not framed by newlines",
            )
        value, ok = self.out.typed_value(call.name, key, raw, at)
        if not ok:
            call.broken = True
        call.add_arg(self.out, key, value, self.param_at)

    def _close_function(self) -> None:
        call = self.call
        assert call is not None
        call.close(self.out)
        self.state = _S.FUNC_DONE

    def _stray(self, marker: str, at: int) -> None:
        if not self.in_call():
            self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` outside a call")
            return
        self._stray_in_call(at, f"`{marker}` where the call's grammar does not allow it")
        # Read on from the state this marker leads to.
        if marker == TOOL_CALL_CLOSE:
            self.state, self.call = _S.BETWEEN, None
        elif marker == PARAMETER_CLOSE:
            self.state = _S.ARGS

    def _stray_in_call(self, at: int, why: str) -> None:
        if self.call is not None:
            self.call.broken = True
        self.out.add(Kind.STRAY_MARKER, at, why)


LEAKS = LeakScan(
    CALL_MARKERS,
    call_openers=(TOOL_CALL_OPEN, FUNCTION_OPEN),
    specials=SPECIALS,
    markers_are_text=True,
)
_VALUE = free_text((PARAMETER_CLOSE, PARAMETER_OPEN, FUNCTION_CLOSE, *END_OF_TURN))
_PARAM = re.compile("<parameter=(" + PARAMETER_NAME_TEXT + ")>\n(" + _VALUE + ")\n</parameter>\n")
_ANY_PARAM = "<parameter=" + PARAMETER_NAME_TEXT + ">\n" + _VALUE + "\n</parameter>\n"
_CALL = re.compile(
    "<tool_call>\n<function=(" + TOOL_NAME_TEXT + ")>\n((?:" + _ANY_PARAM + ")*)"
    "</function>\n</tool_call>"
)


SHAPE = reader_shape(
    Qwen3CoderReader,
    LEAKS,
    first=TOOL_CALL_OPEN,
    call=_CALL,
    draft=xml_draft(_PARAM),
    each=TOOL_CALL_OPEN,
    joint="\n",
)

QWEN3_CODER = Family(
    "qwen3_coder",
    "raw Qwen3-Coder completion text (XML tool calls)",
    MARKERS,
    Qwen3CoderReader,
    LEAKS,
    partial(read_canonical, SHAPE),
)
