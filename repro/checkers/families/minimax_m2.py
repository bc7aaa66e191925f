"""MiniMax-M2's invoke XML read strictly (repro.toolformats.minimax_m2 has the grammar).

One `<minimax:tool_call>` wrapper holds the invokes, each tag on its line. A parameter's
value ends only at `</parameter>`; one ended by the next `<parameter name=` or by
`</invoke>` is unclosed_element, an `<invoke` with no wrapper missing_open_tag, both as
engines recover them. MiniMax-M2 closes `</think>` before its calls (the parser ignores
calls inside it): a call before `</think>` is call_in_reasoning.
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
from repro.toolformats.minimax_m2 import (
    END_OF_TURN,
    INVOKE_CLOSE,
    INVOKE_OPEN,
    PARAMETER_CLOSE,
    PARAMETER_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    WRAPPER_CLOSE,
    WRAPPER_OPEN,
)

CALL_MARKERS = (
    WRAPPER_OPEN,
    WRAPPER_CLOSE,
    INVOKE_OPEN,
    INVOKE_CLOSE,
    PARAMETER_OPEN,
    PARAMETER_CLOSE,
)
MARKERS = (THINK_OPEN, THINK_CLOSE, *CALL_MARKERS, *END_OF_TURN)
SPECIALS = (r"\]~b\]", r"\[e~\[", r"\]~!b\[", r"</?think>")


class _S(IntEnum):
    PROSE = auto()
    WRAPPER = auto()  # after the wrapper opens or an invoke ends: a newline, then more
    HEAD = auto()  # after `<invoke name="`: NAME">, a newline
    ARGS = auto()  # after the head or a parameter: <parameter name=" or </invoke>
    PARAM = auto()  # after `<parameter name="`: KEY">VALUE, then </parameter>
    AFTER = auto()  # after the wrapper closes: nothing


class MinimaxM2Reader(BlockReader):
    prose_state, after_state = _S.PROSE, _S.AFTER
    rule = ReasoningRule.FORBIDDEN
    end_tokens = END_OF_TURN
    markers = MARKERS

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.wrapper_at = -1
        self.wrapped = True
        self.invokes = 0
        self.param_at = 0

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        state = self.state
        if state is _S.PARAM:
            return self._in_value(seg, seg_at, marker, at)
        if marker == WRAPPER_OPEN and state is _S.PROSE:
            self.prose(seg, seg_at)
            self.call_opens(at)
            self.wrapper_at = at
            self.state = _S.WRAPPER
        elif marker == INVOKE_OPEN and state in (_S.PROSE, _S.WRAPPER):
            if state is _S.PROSE:
                self.prose(seg, seg_at)
                self.call_opens(at)
                self.wrapper_at, self.wrapped = at, False
                self.out.add(Kind.MISSING_OPEN_TAG, at, f"`<invoke` with no `{WRAPPER_OPEN}`")
            else:
                self.exactly(seg, seg_at, "\n", "before an invoke")
            self.call = CallDraft(at)
            self.invokes += 1
            self.state = _S.HEAD
        elif marker in (PARAMETER_OPEN, INVOKE_CLOSE) and state in (_S.HEAD, _S.ARGS):
            self._head_or_gap(seg, seg_at)
            if marker == PARAMETER_OPEN:
                self.param_at = at
                self.state = _S.PARAM
            else:
                self._close_invoke()
        elif marker == WRAPPER_CLOSE and state is _S.WRAPPER:
            self.exactly(seg, seg_at, "\n", f"before `{WRAPPER_CLOSE}`")
            if self.invokes == 0:
                self.out.add(Kind.EMPTY_BLOCK, self.wrapper_at, "the wrapper holds no invoke")
            self.state = _S.AFTER
        else:
            self._stray(marker, at)
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        state = self.state
        if state is _S.PROSE:
            self.prose(seg, seg_at)
        elif state is _S.AFTER or (state is _S.WRAPPER and not self.wrapped):
            self.after_block(seg, seg_at)
        elif self.call is not None:
            self.out.truncated(self.call.at, self.call.label())
        else:
            self.out.truncated(self.wrapper_at, "the tool-call wrapper")

    # -- parts ------------------------------------------------------------------------

    def _head_or_gap(self, seg: str, seg_at: int) -> None:
        call = self.call
        assert call is not None
        if self.state is _S.ARGS:
            self.exactly(seg, seg_at, "\n", "after a parameter")
            return
        end = seg.find('">')
        if end == -1:
            call.broken = True
            self.out.add(Kind.MALFORMED_CALL, seg_at, f'`<invoke name="{snippet(seg)}` has no `">`')
            return
        call.set_name(self.out, seg[:end], seg_at)
        self.exactly(seg[end + 2 :], seg_at + end + 2, "\n", "after the invoke's name")
        self.state = _S.ARGS

    def _in_value(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        if marker == PARAMETER_CLOSE:
            self._end_param(seg, seg_at, None)
            self.state = _S.ARGS
        elif marker == PARAMETER_OPEN:
            self._end_param(seg, seg_at, "the next parameter")
            self.param_at = at
        elif marker == INVOKE_CLOSE:
            self._end_param(seg, seg_at, f"`{INVOKE_CLOSE}`")
            self._close_invoke()
        else:
            return True  # any other marker is the value's text (flagged as markup in it)
        return False

    def _end_param(self, seg: str, seg_at: int, ended_by: str | None) -> None:
        call = self.call
        assert call is not None
        end = seg.find('">')
        key = seg[:end] if end != -1 else "?"
        if ended_by is not None:
            call.broken = True
            self.out.add(
                Kind.UNCLOSED_ELEMENT,
                seg_at + len(seg),
                f"{call.label()}: parameter {key!r} is ended by {ended_by}, not `{PARAMETER_CLOSE}`",
            )
        if end == -1 or PARAMETER_NAME.match(key) is None:
            call.broken = True
            self.out.add(
                Kind.MALFORMED_CALL,
                self.param_at,
                f'{call.label()}: `<parameter name="{snippet(seg)}` is not `<parameter name="KEY">`',
            )
            return
        value, ok = self.out.typed_value(call.name, key, seg[end + 2 :], seg_at + end + 2)
        if not ok:
            call.broken = True
        call.add_arg(self.out, key, value, self.param_at)

    def _close_invoke(self) -> None:
        call = self.call
        assert call is not None
        call.close(self.out)
        self.call = None
        self.state = _S.WRAPPER

    def after_block(self, seg: str, seg_at: int, expected: str | None = None) -> None:
        """After the wrapper closes nothing may stand, whatever is `expected`."""
        if seg:
            kind = Kind.TEXT_AFTER_BLOCK if seg.strip() else Kind.BAD_FRAMING
            self.out.add(kind, seg_at, f"text after the tool calls: `{snippet(seg)}`")
            if seg.strip():
                self.prose(seg, seg_at)

    def _stray(self, marker: str, at: int) -> None:
        self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where the grammar does not allow it")
        if self.call is not None:
            self.call.broken = True
        if marker == WRAPPER_CLOSE:
            self.call, self.state = None, _S.AFTER
        elif marker == INVOKE_CLOSE:
            self.call, self.state = None, _S.WRAPPER
        elif marker == INVOKE_OPEN:
            self.call, self.state = CallDraft(at), _S.HEAD
            self.call.broken = True


LEAKS = LeakScan(CALL_MARKERS, (WRAPPER_OPEN, INVOKE_OPEN), (), SPECIALS, markers_are_text=True)
_VALUE = free_text((PARAMETER_CLOSE, PARAMETER_OPEN, INVOKE_CLOSE, *END_OF_TURN))
_PARAM = re.compile(
    '<parameter name="(' + PARAMETER_NAME_TEXT + ')">(' + _VALUE + ")</parameter>\n"
)
_ANY_PARAM = '<parameter name="' + PARAMETER_NAME_TEXT + '">' + _VALUE + "</parameter>\n"
_CALL = re.compile('<invoke name="(' + TOOL_NAME_TEXT + ')">\n((?:' + _ANY_PARAM + ")*)</invoke>\n")


SHAPE = reader_shape(
    MinimaxM2Reader,
    LEAKS,
    first=WRAPPER_OPEN,
    call=_CALL,
    draft=xml_draft(_PARAM),
    each=INVOKE_OPEN,
    prefix=WRAPPER_OPEN + "\n",
    suffix=WRAPPER_CLOSE,
)

MINIMAX_M2 = Family(
    "minimax_m2",
    "raw MiniMax-M2 completion text (invoke XML calls)",
    MARKERS,
    MinimaxM2Reader,
    LEAKS,
    partial(read_canonical, SHAPE),
)
