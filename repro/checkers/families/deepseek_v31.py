"""DeepSeek-V3.1's special-token calls read strictly (repro.toolformats.deepseek_v31).

The call's head is the bare tool name. V3.1 calls tools in non-thinking mode only, so a call
before `</think>` is call_in_reasoning. Engines' recoveries flagged here: a call with no
`<｜tool▁calls▁begin｜>` (SGLang's streaming path reads it), text between the markers.
"""

from __future__ import annotations

from functools import partial

from repro.checkers.families.calls import TOOL_NAME_TEXT, CallDraft
from repro.checkers.families.canonical import read_canonical
from repro.checkers.families.family import Family
from repro.checkers.families.leaks import Glued, LeakScan
from repro.checkers.families.reader import ReasoningRule
from repro.checkers.families.section import SectionReader, section_shape
from repro.toolformats.deepseek_v31 import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    END_OF_TURN,
    SEP,
    THINK_CLOSE,
    THINK_OPEN,
)

CALL_MARKERS = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP)
MARKERS = (THINK_OPEN, THINK_CLOSE, *CALL_MARKERS, *END_OF_TURN)
# What the markers leave when their special tokens are mangled: the words inside the bars.
STRIPPED = (r"tool▁calls?▁(?:begin|end)", r"tool▁sep")
SPECIALS = (r"<｜[^｜<>\n]{1,48}｜>", r"</?think>")


class DeepSeekV31Reader(SectionReader):
    rule = ReasoningRule.FORBIDDEN
    end_tokens = END_OF_TURN
    markers = MARKERS
    section_begin, section_end = CALLS_BEGIN, CALLS_END
    call_begin, sep, call_end = CALL_BEGIN, SEP, CALL_END

    def read_head(self, call: CallDraft, head: str, at: int) -> None:
        call.set_name(self.out, head, at)


LEAKS = LeakScan(CALL_MARKERS, (CALLS_BEGIN, CALL_BEGIN), STRIPPED, SPECIALS, Glued.JSON)
SHAPE = section_shape(DeepSeekV31Reader, MARKERS, LEAKS, "(?P<name>" + TOOL_NAME_TEXT + ")")

DEEPSEEK_V31 = Family(
    "deepseek_v31",
    "raw DeepSeek-V3.1 completion text (special-token JSON calls)",
    MARKERS,
    DeepSeekV31Reader,
    LEAKS,
    partial(read_canonical, SHAPE),
)
