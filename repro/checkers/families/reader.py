"""What every format's reader shares: where the reasoning ends, the end-of-turn token, prose.

A format's reader (one module each) subclasses `Reader` and implements `on_marker`,
`on_end`, `outside_text` and `in_call` (`BlockReader` has the last two for a format whose
calls stand as blocks after the prose). The base takes the reasoning markers and the
end-of-turn tokens while no call is open:

- With no separately returned reasoning, the text before the first `</think>` (after an
  optional `<think>` at the start) is the reasoning, as DSML's rule 1 has it.
- A call that opens before the reasoning closes is what `rule` says: IMPLICIT_END, the
  model's own way of ending its reasoning (Qwen3.5, Kimi K2-Thinking, research/
  toolformats.md §0.5), or FORBIDDEN, a `call_in_reasoning` defect. Without a `<think>`
  in the text (the prompt opened it) this is known only when `</think>` comes after the
  call.
- An end-of-turn token may end the text; anything after it is `text_after_eos`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from repro.checkers.families.calls import CallDraft
from repro.checkers.families.findings import Findings
from repro.checkers.families.leaks import MarkerTails, Where
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet


class ReasoningRule(Enum):
    IMPLICIT_END = "a call opened in the reasoning ends it"
    FORBIDDEN = "a call opened in the reasoning is a defect"


class Reader:
    """Base of a format's reader (lexer.MarkerReader)."""

    think_open = "<think>"
    think_close = "</think>"
    rule = ReasoningRule.FORBIDDEN
    end_tokens: Sequence[str] = ()
    markers: Sequence[str] = ()  # for markers cut short at the end of a piece of text
    tails: MarkerTails

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.markers:
            cls.tails = MarkerTails(cls.markers)

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        self.out = out
        self.apart = reasoning_apart  # the reasoning came in its own field
        self.think_opened = False
        self.think_closed = False
        self.first_call_at = -1
        self.content_seen = False
        self._lead: list[tuple[str, int]] = []
        self._after_eot = -1

    # -- what a format implements ---------------------------------------------------

    def in_call(self) -> bool:
        raise NotImplementedError

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        raise NotImplementedError

    def on_end(self, seg: str, seg_at: int) -> None:
        raise NotImplementedError

    def outside_text(self, seg: str, seg_at: int) -> None:
        """Text outside any call, cut by a reasoning marker the base takes."""
        raise NotImplementedError

    def keeps_as_text(self, seg: str) -> bool:
        """Whether the next marker, whatever it is, belongs to the open segment's text (it
        falls inside a JSON string)."""
        return False

    # -- lexer.MarkerReader ------------------------------------------------------------

    def marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        if self._after_eot != -1:
            return True  # all of it is text after the end: judged once at the end
        if self.keeps_as_text(seg):
            return True
        if marker in self.end_tokens:
            self.on_end(seg, seg_at)
            self._after_eot = at + len(marker)
            return False
        if (marker == self.think_open or marker == self.think_close) and not self.in_call():
            self.outside_text(seg, seg_at)
            self._think(marker, at)
            return False
        return self.on_marker(seg, seg_at, marker, at)

    def end(self, seg: str, seg_at: int) -> None:
        if self._after_eot == -1:
            self.on_end(seg, seg_at)
        elif seg:
            self.out.add(
                Kind.TEXT_AFTER_EOS, seg_at, f"text after the end-of-turn token: `{snippet(seg)}`"
            )
        for text, at in self._lead:  # never followed by `</think>`: content after all
            self._content(text, at)
        self._lead.clear()
        if self.first_call_at == -1 and not self.content_seen:
            self.out.add(Kind.EMPTY_TURN, 0, "the turn has no content and no tool call")

    # -- helpers for formats ---------------------------------------------------------------

    def prose(self, seg: str, seg_at: int) -> None:
        """Free text outside calls: reasoning or content, as the reasoning markers decide."""
        if not seg:
            return
        self.tail(seg, seg_at)
        if self.apart or self.think_closed:
            self._content(seg, seg_at)
        elif self.think_opened and self.first_call_at == -1:
            self._reasoning(seg, seg_at)
        else:
            self._lead.append((seg, seg_at))

    def call_opens(self, at: int) -> None:
        if self.first_call_at != -1:
            return
        self.first_call_at = at
        if self.think_opened and not self.think_closed and not self.apart:
            if self.rule is ReasoningRule.FORBIDDEN:
                self._call_in_reasoning(at)
            self.think_closed = True
            self._lead_is_reasoning()

    def tail(self, seg: str, seg_at: int) -> bool:
        """A piece of text ends (at a marker, or the text's end): flag it ending in the first
        characters of a marker, cut or flushed as text. True if so."""
        cut = self.tails.cut_at(seg)
        if cut == -1:
            return False
        self.out.add(
            Kind.PARTIAL_MARKER, seg_at + cut, f"the text ends in part of a marker: `{seg[cut:]}`"
        )
        return True

    # -- the reasoning ---------------------------------------------------------------------

    def _think(self, marker: str, at: int) -> None:
        if marker == self.think_open:
            lead_blank = all(not t.strip() for t, _ in self._lead)
            if self.apart or self.think_opened or self.think_closed or not lead_blank:
                self.out.add(Kind.SPECIAL_TOKEN, at, f"`{marker}` where no reasoning may open")
            else:
                self.think_opened = True
                self._lead.clear()
            return
        if self.apart or self.think_closed:
            self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where no reasoning is open to close")
            self.think_closed = True
            return
        if self.first_call_at != -1:
            if self.rule is ReasoningRule.FORBIDDEN:
                self._call_in_reasoning(self.first_call_at)
            else:
                self.out.add(
                    Kind.STRAY_MARKER, at, f"`{marker}` after a call already ended the reasoning"
                )
        self.think_closed = True
        self._lead_is_reasoning()

    def _call_in_reasoning(self, at: int) -> None:
        self.out.add(
            Kind.CALL_IN_REASONING,
            at,
            f"a tool call opens before `{self.think_close}` closes the reasoning",
        )

    def _lead_is_reasoning(self) -> None:
        for text, at in self._lead:
            self._reasoning(text, at)
        self._lead.clear()

    def _reasoning(self, text: str, at: int) -> None:
        self.out.text(text, at, Where.REASONING)

    def _content(self, text: str, at: int) -> None:
        if not self.content_seen and text.strip():
            self.content_seen = True
        self.out.text(text, at, Where.CONTENT)


class BlockReader(Reader):
    """A reader whose state is `prose_state` before the first call and `after_state` after a
    call's block closes; every other state is inside a call."""

    prose_state: object
    after_state: object
    after_what = "between calls"  # how a framing finding names the place

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.state = self.prose_state
        self.call: CallDraft | None = None

    def in_call(self) -> bool:
        return self.state is not self.prose_state and self.state is not self.after_state

    def outside_text(self, seg: str, seg_at: int) -> None:
        if self.state is self.prose_state:
            self.prose(seg, seg_at)
        else:
            self.after_block(seg, seg_at, None)

    def exactly(self, seg: str, seg_at: int, expected: str, where: str) -> None:
        """The framing `where` is `expected` to the byte; if not, the open call is broken."""
        if seg != expected:
            if self.call is not None:
                self.call.broken = True
            self.out.add(
                Kind.BAD_FRAMING, seg_at, f"expected {expected!r} {where}, found {snippet(seg)!r}"
            )

    def after_block(self, seg: str, seg_at: int, expected: str | None) -> None:
        """After a block: `expected` before the next one; at the end (None) nothing."""
        if seg == (expected or ""):
            return
        if seg.strip():
            kind = Kind.TEXT_AFTER_BLOCK if expected is None else Kind.BAD_FRAMING
            self.out.add(kind, seg_at, f"text after a tool call: `{snippet(seg)}`")
            self.prose(seg, seg_at)
        else:
            want = "nothing" if expected is None else repr(expected)
            self.out.add(
                Kind.BAD_FRAMING, seg_at, f"expected {want} {self.after_what}, found {seg!r}"
            )
