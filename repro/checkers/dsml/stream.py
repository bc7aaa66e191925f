"""DeepSeek-V3.2 DSML parsed strictly and incrementally into calls and defects.

A state machine over DeepSeek's own delimiters (research/dsml.md §1.6): each state reads
up to the first of its stop strings, then judges the text in between. A judgement waits
until the text that settles it has arrived, so feeding a text in any chunks gives the
verdict of feeding it at once. Where DeepSeek's parser stops at the first error, this one
records it and reads on, so one pass finds every defect; a call is kept only if its
invoke is wholly well formed.
"""

from __future__ import annotations

import functools
import re
from enum import IntEnum, auto

from repro.checkers.dsml.canonical import NEXT_INVOKE, read_canonical_invoke
from repro.checkers.dsml.clean_turn import read_clean_turn
from repro.checkers.dsml.segment_scan import SegmentScan
from repro.checkers.dsml.tags import (
    HEAD_LIMIT_CHARS,
    Flaw,
    invoke_name,
    param_head,
    param_value,
    value_end,
)
from repro.checkers.dsml.text_buffer import TextBuffer
from repro.checkers.json_codec import arguments_text
from repro.checkers.json_strings import offset_in_json, strings_in
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import (
    WINDOW_AFTER,
    WINDOW_BEFORE,
    Where,
    scan_markup,
    snippet,
)
from repro.checkers.text_watch import TextWatch
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import Defect, ToolCall, Verdict
from repro.dsml.markers import (
    DSML,
    EOS,
    INVOKE_END,
    INVOKE_OPEN,
    PARAM_END,
    PARAM_OPEN,
    V32,
    Dialect,
)

STEP_CHARS = 512  # feed() parses once this much text is pending: cheap per token
_SEPARATOR = ">\n"
_NAME_ATTR = re.compile(r'name="([^"\n]{0,64})')
_SELF_CLOSING = re.compile(r'\s*name="[^"\n]*"\s*/>\s*\Z')


@functools.cache
def _content_stops(dialect: Dialect) -> tuple[str, ...]:
    """Where content ends: EOS, this dialect's block opener, another generation's."""
    return (
        EOS,
        dialect.block_opener,
        *(f"<{DSML}{name}" for name in dialect.foreign_block_names),
    )


class _State(IntEnum):  # an IntEnum: states are compared and hashed on every step
    CONTENT = auto()
    BLOCK_SEP = auto()  # after the block opener or an invoke: `>\n`, then invoke or close
    INVOKE_HEAD = auto()
    PARAM_HEAD = auto()
    PARAM_VALUE = auto()
    PARAM_SEP = auto()  # after a parameter: `>\n`, then parameter or invoke close
    AFTER_BLOCK = auto()
    AFTER_EOS = auto()


_WHERE = {
    _State.CONTENT: Where.CONTENT,
    _State.PARAM_VALUE: Where.VALUE,
    _State.AFTER_BLOCK: Where.TRAILER,
    _State.AFTER_EOS: Where.TRAILER,
}


class _Invoke:
    __slots__ = ("args", "at", "broken", "keys", "name", "param_at")

    def __init__(self, at: int) -> None:
        self.at = at
        self.name = "?"
        self.broken = False
        self.args: dict[str, object] = {}
        self.keys: set[str] = set()
        self.param_at: dict[str, int] = {}


class _Param:
    __slots__ = ("at", "broken", "is_string", "key")

    def __init__(self, at: int) -> None:
        self.at = at
        self.key = "?"
        self.is_string = True
        self.broken = False


class DsmlStream:
    """Feed a completion's text in chunks, then `finish()` for the Verdict.

    `field` names the text in each Defect; offsets count characters from its start.
    """

    def __init__(
        self,
        tools: ToolSet,
        *,
        dialect: Dialect = V32,
        field: str = "content",
        step_chars: int = STEP_CHARS,
    ) -> None:
        self._tools = tools
        self._dialect = dialect
        self._field = field
        self._step_chars = max(1, step_chars)
        self._content_stops = _content_stops(dialect)
        self._tb = TextBuffer()
        self._final = False
        self._done = False
        self._finish_reason: str | None = None
        self._verdict: Verdict | None = None
        self._watch = TextWatch()
        self._state = _State.CONTENT
        self._stops = self._content_stops  # the current state's stop strings
        self._seg_lo = 0
        self._seg = SegmentScan()
        self._seg_findings = 0
        self._block_at = -1
        self._block_close = dialect.block_close
        self._invokes = 0
        self._invoke: _Invoke | None = None
        self._param: _Param | None = None
        self._calls: list[ToolCall] = []
        self._defects: list[Defect] = []

    def feed(self, chunk: str) -> None:
        if self._final:
            raise RuntimeError("DsmlStream.feed() after finish()")
        if chunk:
            self._tb.add(chunk)
            if self._tb.pending_chars >= self._step_chars:
                self._absorb()
                self._run()

    def finish(self, finish_reason: str | None = None) -> Verdict:
        """The verdict on everything fed; `finish_reason` "length" marks a cut as truncation."""
        if self._verdict is None:
            self._absorb()
            if self._tb.base == 0 and self._seg.pos == 0:
                # The whole text is here and nothing was read yet: a clean turn is
                # confirmed in one go (clean_turn.py), anything else read tag by tag.
                self._verdict = read_clean_turn(self._tb.text, self._tools, self._dialect)
            if self._verdict is None:
                self._verdict = self._read_to_end(finish_reason)
            self._final = True
        return self._verdict

    def _read_to_end(self, finish_reason: str | None) -> Verdict:
        self._finish_reason = finish_reason
        self._final = True
        self._run()
        defects = self._defects + self._watch.defects(self._field)
        if len(defects) > 1:  # one finding may reach here by two paths: keep it once
            defects = sorted(set(defects), key=lambda d: (d.offset, d.kind, d.message))
        return Verdict(tuple(self._calls), tuple(defects))

    def _absorb(self) -> None:
        self._tb.absorb(min(self._keep_from(), self._watch.keep_from()))

    def _keep_from(self) -> int:
        """The earliest offset the parser may read again: the segment, or just behind the scan."""
        if self._state in (_State.CONTENT, _State.AFTER_BLOCK, _State.AFTER_EOS):
            return self._seg.pos - WINDOW_BEFORE - 2  # 2: the blank line before a block
        return self._seg_lo

    # -- the state machine ------------------------------------------------------------

    def _run(self) -> None:
        while not self._done and self._step():
            pass
        self._watch.advance(self._tb.text, self._tb.base, self._final)

    def _stops_of(self, state: _State) -> tuple[str, ...]:
        if state is _State.BLOCK_SEP:
            return (INVOKE_OPEN, self._block_close)
        if state in (_State.INVOKE_HEAD, _State.PARAM_SEP):
            # The block's close is no stop of DeepSeek's here, but where it comes first the
            # invoke was never closed: reading on would only bury that under later text.
            return (PARAM_OPEN, INVOKE_END, self._block_close)
        if state is _State.CONTENT:
            return self._content_stops
        if state is _State.PARAM_VALUE:
            return (PARAM_END,)
        if state is _State.AFTER_BLOCK:
            return (EOS,)
        return ()

    def _step(self) -> bool:
        """Take one transition if the text allows it; False when waiting or done."""
        if self._state is _State.PARAM_HEAD:
            return self._step_param_head()
        stops = self._stops
        at, hit = -1, ""
        for stop in stops:
            pos = self._tb.next(stop, self._seg_lo)
            if pos != -1 and (at == -1 or pos < at):
                at, hit = pos, stop
        if at == -1:
            if self._final:
                self._at_end()
                self._done = True
            else:
                longest = max((len(s) for s in stops), default=1)
                self._scan_ahead(longest)
            return False
        state = self._state
        if state is _State.CONTENT:
            self._on_content(at, hit)
        elif state is _State.BLOCK_SEP:
            self._on_block_sep(at, hit)
        elif state is _State.INVOKE_HEAD:
            self._on_invoke_head(at, hit)
        elif state is _State.PARAM_VALUE:
            self._on_param_value(at)
        elif state is _State.PARAM_SEP:
            self._on_param_sep(at, hit)
        else:
            self._on_after_block(at)
        return True

    def _enter(self, state: _State, seg_lo: int) -> None:
        self._state = state
        self._stops = self._stops_of(state)
        self._seg_lo = seg_lo
        self._seg.pos = seg_lo
        self._seg_findings = 0

    def _on_content(self, at: int, stop: str) -> None:
        self._close_segment(at)
        if stop == EOS:
            if not self._seg.nonblank:
                self._add(Kind.EMPTY_TURN, 0, "the turn has no content and no tool call")
            self._enter(_State.AFTER_EOS, at + len(EOS))
            return
        name = stop[len(DSML) + 1 :]
        if name != self._dialect.block_name:
            self._block_close = f"</{DSML}{name}>"
            self._add(
                Kind.WRONG_BLOCK_NAME,
                at,
                f"`{stop}>` is another DSML generation's block; this format's is "
                f"`{self._dialect.block_opener}>`",
            )
        if at < 2 or self._tb.slice(at - 2, at) != "\n\n":
            self._add(
                Kind.BLOCK_LEAD_IN,
                at,
                "the tool-call block must follow a blank line (`\\n\\n` before its tag)",
            )
        self._block_at = at
        self._enter(_State.BLOCK_SEP, at + len(stop))

    def _on_block_sep(self, at: int, stop: str) -> None:
        self._check_separator(self._close_segment(at), at)
        if stop == INVOKE_OPEN:
            while True:
                self._invokes += 1
                close = self._tb.next(INVOKE_END, at)
                if close == -1 or not self._read_canonical_invoke(at, close):
                    self._invoke = _Invoke(at)
                    self._enter(_State.INVOKE_HEAD, at + len(stop))
                    return
                # Canonical invokes back to back: the `>\n` between them is all the
                # separator state would read, so go straight on to the next.
                after = close + len(INVOKE_END)
                if not self._tb.text.startswith(NEXT_INVOKE, after - self._tb.base):
                    return
                at = after + len(_SEPARATOR)
                self._seg.pos = at
        if self._invokes == 0:
            self._add(Kind.EMPTY_BLOCK, self._block_at, "the tool-call block has no invoke")
        self._enter(_State.AFTER_BLOCK, at + len(stop))

    def _read_canonical_invoke(self, at: int, close: int) -> bool:
        """Take the whole invoke at once if it is canonical (dsml/canonical.py)."""
        b = self._tb.base
        canonical = read_canonical_invoke(self._tb.text, at - b, close - b)
        if canonical is None:
            return False
        invoke = self._invoke = _Invoke(at)
        invoke.name = canonical.name
        for p in canonical.params:
            invoke.keys.add(p.key)
            invoke.param_at[p.key] = p.at + b
            invoke.args[p.key] = p.value
            if not isinstance(p.value, str) and "\\" in p.raw:
                self._scan_json_strings(p.value, p.raw, p.value_at + b)
        self._close_invoke()
        self._enter(_State.BLOCK_SEP, close + len(INVOKE_END))
        return True

    def _on_invoke_head(self, at: int, stop: str) -> None:
        found = self._close_segment(at)
        invoke = self._invoke
        assert invoke is not None
        b = self._tb.base
        if stop == self._block_close:
            if _SELF_CLOSING.match(self._tb.text, self._seg_lo - b, at - b):
                self._add(
                    Kind.MALFORMED_INVOKE,
                    invoke.at,
                    "a self-closing invoke is DeepSeek-V4 syntax; V3.2 ends every invoke "
                    f"with `{INVOKE_END}>`",
                )
            elif not found:
                self._add(Kind.UNBALANCED_MARKUP, at, "the block closes inside an unclosed invoke")
            self._unclosed_invoke(at, stop)
            return
        name = invoke_name(self._tb.text, self._seg_lo - b, at - b)
        if isinstance(name, Flaw):
            invoke.broken = True
            guess = _NAME_ATTR.search(self._tb.text, self._seg_lo - b, at - b)
            invoke.name = guess.group(1) if guess else "?"
            if not found:
                self._add(name.kind, name.offset + b, f"invoke {invoke.name!r}: {name.reason}")
        else:
            invoke.name = name
        self._param_or_invoke_end(at, stop)

    def _step_param_head(self) -> bool:
        """The tag runs to its first `>`; without one nearby it is malformed (HEAD_LIMIT_CHARS)."""
        lo, end, b = self._seg_lo, self._tb.end, self._tb.base
        limit = lo + HEAD_LIMIT_CHARS
        gt = self._tb.text.find(">", lo - b, min(end, limit) - b)
        gt = -1 if gt == -1 else gt + b
        stop = self._tb.next(PARAM_END, lo)
        stop_near = stop != -1 and stop < limit
        param, invoke = self._param, self._invoke
        assert param is not None and invoke is not None
        if gt != -1 and not (stop_near and stop < gt):
            found = self._close_segment(gt + 1)
            head = param_head(self._tb.text, lo - b, gt + 1 - b)
            if isinstance(head, Flaw):
                param.broken = True
                guess = _NAME_ATTR.search(self._tb.text, lo - b, gt + 1 - b)
                param.key = guess.group(1) if guess else "?"
                if not found or head.kind is Kind.BAD_STRING_ATTRIBUTE:
                    self._add(head.kind, head.offset + b, f"invoke {invoke.name!r}: {head.reason}")
            else:
                param.key, param.is_string = head.key, head.is_string
            self._enter(_State.PARAM_VALUE, gt + 1)
            return True
        if stop_near:
            found = self._close_segment(stop)
            param.broken = True
            if not found:
                self._add(
                    Kind.MALFORMED_PARAMETER,
                    lo,
                    f"invoke {invoke.name!r}: the parameter tag has no `>` before its value ends",
                )
            self._end_param()
            self._enter(_State.PARAM_SEP, stop + len(PARAM_END))
            return True
        if self._final and end < limit:
            self._at_end()  # the text stops inside the tag
            self._done = True
            return False
        if self._final or end >= limit + len(PARAM_END) - 1:
            param.broken = True
            self._add(
                Kind.MALFORMED_PARAMETER,
                lo,
                f"invoke {invoke.name!r}: no `>` closes the parameter tag within "
                f"{HEAD_LIMIT_CHARS} characters",
            )
            self._enter(_State.PARAM_VALUE, lo)
            return True
        return False

    def _on_param_value(self, at: int) -> None:
        lo, b = self._seg_lo, self._tb.base
        end = value_end(self._tb.text, lo - b, at - b)
        param = self._param
        assert param is not None
        if end is None:
            self._close_segment(at)
            param.broken = True
            self._add(
                Kind.MALFORMED_PARAMETER,
                at,
                f"parameter {param.key!r}: its closing tag lacks the `<` before `{PARAM_END}`",
            )
        else:
            self._close_segment(end + b)
            if not param.broken:
                self._store_value(lo, end + b)
        self._end_param()
        self._enter(_State.PARAM_SEP, at + len(PARAM_END))

    def _store_value(self, lo: int, hi: int) -> None:
        param, invoke = self._param, self._invoke
        assert param is not None and invoke is not None
        key = param.key
        if key in invoke.keys:
            param.broken = True
            self._add(
                Kind.DUPLICATE_PARAMETER,
                param.at,
                f"invoke {invoke.name!r}: parameter {key!r} appears twice",
            )
            return
        invoke.keys.add(key)
        invoke.param_at[key] = param.at
        raw = self._tb.slice(lo, hi)
        try:
            value = param_value(raw, param.is_string)
        except ValueError:
            param.broken = True
            self._add(
                Kind.INVALID_JSON_VALUE,
                lo,
                f'parameter {key!r} is string="false" but `{snippet(raw)}` is not JSON',
            )
            return
        invoke.args[key] = value
        if not param.is_string and "\\" in raw and not self._seg_findings:
            self._scan_json_strings(value, raw, lo)

    def _scan_json_strings(self, value: object, raw: str, lo: int) -> None:
        """Markup behind JSON escapes, which the scan of the raw value cannot see."""
        for s in strings_in(value):
            for f in scan_markup(s, Where.VALUE, self._dialect):
                self._add(f.kind, lo + offset_in_json(raw, s, f.start), f.message)

    def _end_param(self) -> None:
        param, invoke = self._param, self._invoke
        assert param is not None and invoke is not None
        if param.broken:
            invoke.broken = True
        self._param = None

    def _on_param_sep(self, at: int, stop: str) -> None:
        found = self._close_segment(at)
        self._check_separator(found, at)
        if stop == self._block_close:
            if not found:
                self._add(
                    Kind.UNBALANCED_MARKUP,
                    at,
                    f"the block closes before `{INVOKE_END}>` closes {self._invoke_label()}",
                )
            self._unclosed_invoke(at, stop)
            return
        self._param_or_invoke_end(at, stop)

    def _param_or_invoke_end(self, at: int, stop: str) -> None:
        """After an invoke's head or a parameter: the next parameter opens, or the invoke ends."""
        if stop == PARAM_OPEN:
            self._param = _Param(at)
            self._enter(_State.PARAM_HEAD, at + len(stop))
        else:
            self._close_invoke()
            self._enter(_State.BLOCK_SEP, at + len(stop))

    def _close_invoke(self) -> None:
        invoke = self._invoke
        assert invoke is not None
        self._invoke = None
        if invoke.broken:
            return
        name = invoke.name
        arguments = arguments_text(invoke.args)
        self._calls.append(ToolCall(name, arguments))
        if name not in self._tools:
            self._add(
                Kind.UNKNOWN_TOOL, invoke.at, f"tool {name!r} is not among the request's tools"
            )
            return
        for violation in self._tools.violations(name, invoke.args, arguments):
            # Point at the parameter the error is about, else at the invoke.
            key = violation.path[0] if violation.path else None
            offset = invoke.param_at.get(key, invoke.at) if isinstance(key, str) else invoke.at
            self._add(Kind.SCHEMA_VIOLATION, offset, violation.describe(name))

    def _unclosed_invoke(self, at: int, stop: str) -> None:
        self._break_invoke()
        self._close_invoke()
        self._enter(_State.AFTER_BLOCK, at + len(stop))

    def _on_after_block(self, at: int) -> None:
        self._close_segment(at)
        self._trailing_text(at, Kind.TEXT_AFTER_BLOCK)
        self._enter(_State.AFTER_EOS, at + len(EOS))

    def _at_end(self) -> None:
        end, state = self._tb.end, self._state
        if state is _State.CONTENT:
            cut = self._cut_stop(end, self._content_stops[1:])
            self._close_segment(end if cut == -1 else cut)
            if cut != -1:
                self._truncated(cut, "the tool-call block's opening tag")
            else:
                self._cut_token(end)
                if not self._seg.nonblank:
                    self._add(Kind.EMPTY_TURN, 0, "the turn has no content and no tool call")
            return
        if state in (_State.AFTER_BLOCK, _State.AFTER_EOS):
            self._close_segment(end)
        else:
            cut = self._cut_stop(end, self._stops or (PARAM_END,))
            self._close_segment(end if cut == -1 else cut)
        if state is _State.AFTER_BLOCK:
            self._trailing_text(end, Kind.TEXT_AFTER_BLOCK)
        elif state is _State.AFTER_EOS:
            self._trailing_text(end, Kind.TEXT_AFTER_EOS)
        elif self._param is not None and self._invoke is not None:
            key = "a parameter" if self._param.key == "?" else f"parameter {self._param.key!r}"
            self._truncated(self._param.at, f"{key} of {self._invoke_label()}")
        elif self._invoke is not None:
            self._truncated(self._invoke.at, self._invoke_label())
        else:
            self._truncated(self._block_at, "the tool-call block")

    # -- judgements shared by several states --------------------------------------------

    def _truncated(self, at: int, inside: str) -> None:
        if self._finish_reason == "length":
            self._add(Kind.TRUNCATED_CALL, at, f"generation hit the length limit inside {inside}")
        else:
            self._add(Kind.TRUNCATED_BLOCK, at, f"the text ends inside {inside}")

    def _check_separator(self, found: int, at: int) -> None:
        text = self._tb.slice(self._seg_lo, at)
        if text == _SEPARATOR:
            return
        if self._state is _State.PARAM_SEP:
            self._break_invoke()
        if found:
            return
        same = 0
        while same < min(len(text), 2) and text[same] == _SEPARATOR[same]:
            same += 1
        self._add(
            Kind.BAD_SEPARATOR,
            self._seg_lo + same,
            f"expected `>` and one newline between tags, found `{snippet(text)}`",
        )

    def _trailing_text(self, end: int, kind: Kind) -> None:
        lo = self._seg_lo
        if end <= lo:
            return
        text = self._tb.slice(lo, end)
        if kind is Kind.TEXT_AFTER_BLOCK and self._dialect.block_opener in text:
            message = "a second tool-call block follows the first; a message has one block"
        elif kind is Kind.TEXT_AFTER_BLOCK:
            message = f"text after the tool-call block: `{snippet(text)}`"
        else:
            message = f"text after the end-of-sentence token: `{snippet(text)}`"
        self._add(kind, lo, message)

    def _break_invoke(self) -> None:
        if self._invoke is not None:
            self._invoke.broken = True

    def _invoke_label(self) -> str:
        name = self._invoke.name if self._invoke is not None else "?"
        return "an invoke" if name == "?" else f"invoke {name!r}"

    def _cut_stop(self, end: int, stops: tuple[str, ...]) -> int:
        """Where the text ends in the first two or more characters of a stop, else -1."""
        longest = 1
        for stop in stops:
            for n in range(min(len(stop) - 1, end - self._seg_lo), longest, -1):
                if self._tb.slice(end - n, end) == stop[:n]:
                    longest = n
                    break
        return -1 if longest == 1 else end - longest

    def _cut_token(self, end: int) -> None:
        """Content that ends inside a `<｜…｜>` token, which the scan cannot see whole."""
        lo = max(self._seg_lo, end - 48, self._tb.base)
        tail = self._tb.slice(lo, end)
        k = tail.rfind("<\uff5c")
        if k != -1 and ">" not in tail[k:] and lo + k >= self._seg.skip:
            self._add(
                Kind.MARKUP_IN_CONTENT,
                lo + k,
                f"the content ends inside a special token or tag: `{snippet(tail[k:])}`",
            )

    # -- scanning the text of the current segment ---------------------------------------

    def _scan_ahead(self, longest_stop: int) -> None:
        """Scan what is settled: text no stop can still claim, less the judging window."""
        tail = 2 if self._state is _State.PARAM_VALUE else 0  # `<\n` may end a value
        seg_hi = self._tb.end - (longest_stop - 1) - tail
        hi = seg_hi - WINDOW_AFTER
        if hi > self._seg.pos:
            self._scan(hi, seg_hi)

    def _close_segment(self, end: int) -> int:
        """Scan the segment's text up to `end`; the number of findings in the segment."""
        if end - self._seg.pos == 2 and self._tb.slice(end - 2, end) == _SEPARATOR:
            self._seg.pos = end  # the usual separator holds no trigger
        elif end > self._seg.pos:
            self._scan(end, end)
        return self._seg_findings

    def _scan(self, hi: int, seg_hi: int) -> None:
        where = _WHERE.get(self._state, Where.STRUCTURE)
        findings = self._seg.scan(self._tb, self._seg_lo, hi, seg_hi, where, self._dialect)
        if findings and where is Where.STRUCTURE and self._state is not _State.BLOCK_SEP:
            self._break_invoke()  # junk between an invoke's own tags
        for f in findings:
            # In junk between tags, tags after the first finding are its consequences.
            if f.kind is Kind.UNBALANCED_MARKUP and self._seg_findings:
                continue
            self._add(f.kind, f.start, f.message)
            self._seg_findings += 1

    def _add(self, kind: Kind, offset: int, message: str) -> None:
        self._defects.append(Defect(kind, offset, message, self._field))


def parse_dsml(
    text: str,
    tools: ToolSet,
    finish_reason: str | None = None,
    *,
    dialect: Dialect = V32,
    field: str = "content",
) -> Verdict:
    """The verdict on one whole completion text: DsmlStream fed once.

    A clean turn is confirmed without building the stream (clean_turn.py).
    """
    verdict = read_clean_turn(text, tools, dialect)
    if verdict is None:
        stream = DsmlStream(tools, dialect=dialect, field=field)
        stream._tb.add(text)  # read in one final pass, as finish() would
        stream._absorb()
        verdict = stream._verdict = stream._read_to_end(finish_reason)
    return verdict
