"""Kimi K2's tool-call section read strictly (repro.toolformats.kimi_k2).

The head is the call id `functions.NAME:IDX`; IDX climbs by one within the turn (bad_call_id
otherwise). Flagged where engines recover: the singular `<|tool_call_section_begin|>`
spelling and an id without `functions.` (marker_variant), a bare counter or whitespace in
the id, a call outside a section. K2-Thinking may open the section before `</think>`: an
implicit end of its reasoning.
"""

from __future__ import annotations

import re
from functools import partial

from repro.checkers.families.calls import TOOL_NAME_TEXT, CallDraft
from repro.checkers.families.canonical import read_canonical
from repro.checkers.families.family import Family
from repro.checkers.families.findings import Findings
from repro.checkers.families.leaks import LeakScan
from repro.checkers.families.reader import ReasoningRule
from repro.checkers.families.section import SectionReader, section_shape
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.toolformats.kimi_k2 import (
    ARGUMENT_BEGIN,
    CALL_BEGIN,
    CALL_END,
    END_OF_TURN,
    SECTION_BEGIN,
    SECTION_BEGIN_SINGULAR,
    SECTION_END,
    SECTION_END_SINGULAR,
    THINK_CLOSE,
    THINK_OPEN,
)

CALL_MARKERS = (SECTION_BEGIN, SECTION_END, CALL_BEGIN, ARGUMENT_BEGIN, CALL_END)
VARIANTS = {SECTION_BEGIN_SINGULAR: SECTION_BEGIN, SECTION_END_SINGULAR: SECTION_END}
MARKERS = (THINK_OPEN, THINK_CLOSE, *CALL_MARKERS, *VARIANTS, *END_OF_TURN)
_ID = re.compile(r"(functions\.)?([^\s:<>|]+):(\d+)\Z")
STRIPPED = (
    r"tool_calls?_section_(?:begin|end)",
    r"tool_call_(?:argument_begin|begin|end)",
    r"functions\.[A-Za-z0-9_.\-]{1,64}:\d+",
)
SPECIALS = (r"<\|[A-Za-z_]{2,40}\|>", r"</?think>")


class KimiK2Reader(SectionReader):
    rule = ReasoningRule.IMPLICIT_END
    end_tokens = END_OF_TURN
    markers = MARKERS
    section_begin, section_end = SECTION_BEGIN, SECTION_END
    call_begin, sep, call_end = CALL_BEGIN, ARGUMENT_BEGIN, CALL_END
    variants = VARIANTS

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.next_index = -1  # the first call's index is the history's to set

    def read_head(self, call: CallDraft, head: str, at: int) -> None:
        m = _ID.match(head)
        if m is None:
            call.broken = True
            shown = snippet(head)
            kind = Kind.BAD_FRAMING if head != head.strip() else Kind.BAD_CALL_ID
            self.out.add(kind, at, f"call id `{shown}` is not `functions.NAME:IDX`")
            return
        prefix, name, index = m.group(1), m.group(2), int(m.group(3))
        call.set_name(self.out, name, at)
        if prefix is None:
            call.broken = True
            self.out.add(Kind.MARKER_VARIANT, at, f"call id `{head}` lacks `functions.`")
        if self.next_index != -1 and index != self.next_index:
            call.broken = True
            self.out.add(
                Kind.BAD_CALL_ID, at, f"call id `{head}`: index {index}, expected {self.next_index}"
            )
        self.next_index = index + 1


LEAKS = LeakScan(CALL_MARKERS, (SECTION_BEGIN, CALL_BEGIN), STRIPPED, SPECIALS)


def _counting_up(matches: list[re.Match[str]]) -> bool:
    first = int(matches[0]["index"])
    return all(int(m["index"]) == first + i for i, m in enumerate(matches))


SHAPE = section_shape(
    KimiK2Reader,
    MARKERS,
    LEAKS,
    r"functions\.(?P<name>" + TOOL_NAME_TEXT + r"):(?P<index>\d+)",
    _counting_up,
)

KIMI_K2 = Family(
    "kimi_k2",
    "raw Kimi K2 completion text (tool-call section)",
    MARKERS,
    KimiK2Reader,
    LEAKS,
    partial(read_canonical, SHAPE),
)
