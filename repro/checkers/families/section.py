"""The shape DeepSeek-V3.1 and Kimi K2 share: one section of special-token-delimited calls,

    SECTION_BEGIN (CALL_BEGIN HEAD SEP {JSON} CALL_END)* SECTION_END

with nothing between the markers but the call's head and its JSON. A marker inside an open
JSON string is read as the string's text (flagged as markup_in_value), so the call is not
cut short there as the engines cut it (research/toolformats.md §4.6).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from enum import IntEnum, auto
from typing import ClassVar

from repro.checkers.families.calls import CallDraft, read_json_arguments
from repro.checkers.families.canonical import (
    JsonCall,
    Shape,
    free_text,
    json_object,
    reader_shape,
)
from repro.checkers.families.findings import Findings
from repro.checkers.families.json_payload import PayloadCache
from repro.checkers.families.leaks import LeakScan
from repro.checkers.families.reader import Reader
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet


class _S(IntEnum):
    PROSE = auto()
    SECTION = auto()  # after the section opens or a call ends: a call, or the section's end
    HEAD = auto()  # after CALL_BEGIN: the call's head, then SEP
    ARGS = auto()  # after SEP: the JSON, then CALL_END
    AFTER = auto()  # after the section: nothing


class SectionReader(Reader):
    section_begin = ""
    section_end = ""
    call_begin = ""
    sep = ""
    call_end = ""
    # A spelling engines accept -> the marker it stands for.
    variants: ClassVar[dict[str, str]] = {}

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.state = _S.PROSE
        self.call: CallDraft | None = None
        self.section_at = -1
        self.calls_in_section = 0
        self.payloads = PayloadCache()

    # -- what a format adds ------------------------------------------------------------

    def read_head(self, call: CallDraft, head: str, at: int) -> None:
        raise NotImplementedError

    # -- Reader --------------------------------------------------------------------------

    def in_call(self) -> bool:
        return self.state in (_S.HEAD, _S.ARGS) or self.state is _S.SECTION

    def outside_text(self, seg: str, seg_at: int) -> None:
        if self.state is _S.PROSE:
            self.prose(seg, seg_at)
        else:
            self._after(seg, seg_at)

    def keeps_as_text(self, seg: str) -> bool:
        return self.state is _S.ARGS and self.payloads.read(seg).open_string

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        standing = self.variants.get(marker)
        if standing is not None:
            self.out.add(Kind.MARKER_VARIANT, at, f"`{marker}`: the model writes `{standing}`")
            marker = standing
        state = self.state
        if marker == self.section_begin and state is _S.PROSE:
            self.prose(seg, seg_at)
            self.call_opens(at)
            self.section_at = at
            self.state = _S.SECTION
        elif marker == self.call_begin and state in (_S.PROSE, _S.SECTION):
            if state is _S.PROSE:
                self.prose(seg, seg_at)
                self.call_opens(at)
                self.section_at = at
                self.out.add(
                    Kind.MISSING_OPEN_TAG, at, f"`{marker}` with no `{self.section_begin}`"
                )
            else:
                self._nothing_between(seg, seg_at)
            self.call = CallDraft(at)
            self.calls_in_section += 1
            self.state = _S.HEAD
        elif marker == self.sep and state is _S.HEAD:
            assert self.call is not None
            self.read_head(self.call, seg, seg_at)
            self.state = _S.ARGS
        elif marker == self.call_end and state is _S.ARGS:
            assert self.call is not None
            read_json_arguments(self.out, self.call, seg, seg_at, self.payloads.read(seg))
            self.call = None
            self.state = _S.SECTION
        elif marker == self.section_end and state is _S.SECTION:
            self._nothing_between(seg, seg_at)
            if self.calls_in_section == 0:
                self.out.add(
                    Kind.EMPTY_BLOCK, self.section_at, "the tool-call section holds no call"
                )
            self.state = _S.AFTER
        else:
            self._stray(seg, seg_at, marker, at)
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        state = self.state
        if state is _S.PROSE:
            self.prose(seg, seg_at)
        elif state is _S.AFTER:
            self._after(seg, seg_at)
        elif self.call is not None:
            self.out.truncated(self.call.at, self.call.label())
        else:
            self.out.truncated(self.section_at, "the tool-call section")

    # -- judgements -------------------------------------------------------------------------

    def _nothing_between(self, seg: str, seg_at: int) -> None:
        if seg:
            self.out.add(Kind.BAD_FRAMING, seg_at, f"text between calls: `{snippet(seg)}`")

    def _after(self, seg: str, seg_at: int) -> None:
        if seg:
            self.out.add(Kind.TEXT_AFTER_BLOCK, seg_at, f"text after the calls: `{snippet(seg)}`")
            self.prose(seg, seg_at)

    def _stray(self, seg: str, seg_at: int, marker: str, at: int) -> None:
        self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where the grammar does not allow it")
        if self.call is not None:
            self.call.broken = True
        # Read on from the state the marker leads to.
        if marker == self.call_begin:
            self.call = CallDraft(at)
            self.call.broken = True
            self.state = _S.HEAD
        elif marker == self.section_end:
            self.call = None
            self.state = _S.AFTER
        elif marker == self.call_end:
            self.call = None
            self.state = _S.SECTION
        elif marker == self.section_begin and self.state is _S.AFTER:
            self.state = _S.SECTION


def section_shape(
    reader: type[SectionReader],
    markers: Sequence[str],
    leaks: LeakScan,
    head: str,
    series: Callable[[list[re.Match[str]]], bool] | None = None,
) -> Shape:
    """The canonical section: `head` (a regex with the tool name as group `name`) between
    the call's begin and separator; the JSON holds no marker (one inside a string is read
    marker by marker, and flagged)."""
    r = reader
    call = re.compile(
        re.escape(r.call_begin)
        + head
        + re.escape(r.sep)
        + "(?P<args>"
        + free_text(markers)
        + ")"
        + re.escape(r.call_end)
    )

    def draft(m: re.Match[str]) -> JsonCall | None:
        value = json_object(m["args"])
        if value is None:
            return None
        return JsonCall(m["name"], m.start(), m["args"], m.start("args"), value)

    return reader_shape(
        reader,
        leaks,
        first=r.section_begin,
        call=call,
        draft=draft,
        each=r.call_begin,
        prefix=r.section_begin,
        suffix=r.section_end,
        series=series,
    )
