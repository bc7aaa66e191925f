"""A tool-call format as one record, and the two ways to check a turn in it: whole, or streamed.

`check` and `FamilyStream` feed the same reader the same (segment, marker) pairs
(lexer.py), so a text fed in any chunks gets the verdict of the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from repro.checkers.families.findings import Findings
from repro.checkers.families.leaks import LeakScan, Where
from repro.checkers.families.lexer import MarkerStream, marker_pattern, read_whole
from repro.checkers.families.reader import Reader
from repro.checkers.json_codec import read_json
from repro.checkers.kinds import Kind
from repro.checkers.openai_parsed import check_parsed_calls
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput, Defect, Verdict


@dataclass(frozen=True, slots=True)
class Family:
    """`markers` are what the lexer splits on; `reader` builds the format's state machine."""

    name: str
    summary: str
    markers: Sequence[str]
    reader: Callable[[Findings, bool], Reader]
    leaks: LeakScan
    # Reads a canonical turn at once (canonical.py); False: read it marker by marker.
    shortcut: Callable[[str, Findings, bool], bool] | None = None
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    longest: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", marker_pattern(self.markers))
        object.__setattr__(self, "longest", max(map(len, self.markers)))

    def check(self, output: AssistantOutput, tools: ToolSet) -> Verdict:
        """The verdict on one turn: raw text read by the grammar, or server-parsed calls."""
        if output.tool_calls:
            return self._check_parsed(output, tools)
        reasoning = self._reasoning_defects(output.reasoning, tools)
        out = Findings(tools, self.leaks, output.finish_reason)
        apart = bool(output.reasoning)
        if self.shortcut is None or not self.shortcut(output.content, out, apart):
            read_whole(self.pattern, output.content, self.reader(out, apart))
        return _merged(out.verdict(), reasoning)

    def check_marker_by_marker(self, output: AssistantOutput, tools: ToolSet) -> Verdict:
        """`check` without the shortcut: what tests hold the shortcut to."""
        return Family(self.name, self.summary, self.markers, self.reader, self.leaks).check(
            output, tools
        )

    def stream(self, tools: ToolSet) -> FamilyStream:
        return FamilyStream(self, tools)

    def _reasoning_defects(self, reasoning: str, tools: ToolSet) -> list[Defect]:
        if not reasoning:
            return []
        out = Findings(tools, self.leaks, None, field="reasoning")
        out.text(reasoning, 0, Where.REASONING)
        return out.defects

    def _check_parsed(self, output: AssistantOutput, tools: ToolSet) -> Verdict:
        """The server parsed the calls: they must be sound, the text around them clean."""
        defects = self._reasoning_defects(output.reasoning, tools)
        out = Findings(tools, self.leaks, output.finish_reason)
        out.text(output.content, 0, Where.CONTENT)
        defects += out.defects
        defects += check_parsed_calls(output.tool_calls, tools, output.finish_reason)
        for i, call in enumerate(output.tool_calls):
            try:
                value = read_json(call.arguments)
            except (ValueError, RecursionError):
                continue  # check_parsed_calls reported it
            args = Findings(tools, self.leaks, None, field=f"tool_calls[{i}]")
            args.json_strings(value, call.arguments, 0)
            defects += (d for d in args.defects if d.kind not in _TEXT_KINDS)
        return _merged(Verdict(tuple(output.tool_calls), ()), defects)


# check_parsed_calls already runs the text checks on argument strings.
_TEXT_KINDS = frozenset(
    {Kind.REPLACEMENT_CHAR, Kind.MOJIBAKE, Kind.INVALID_CHAR, Kind.RUNAWAY_REPETITION}
)
_FIELD_ORDER = {"reasoning": 0, "content": 1}


def _merged(verdict: Verdict, more: list[Defect]) -> Verdict:
    if not more:
        return verdict
    defects = sorted(
        {*verdict.defects, *more},
        key=lambda d: (_FIELD_ORDER.get(d.field, 2), d.field, d.offset, d.kind, d.message),
    )
    return Verdict(verdict.calls, tuple(defects))


class FamilyStream:
    """Feed a completion's text (the content, reasoning inside it) in chunks, then `finish()`:
    the verdict equals `family.check(AssistantOutput(content=text, finish_reason=...))`."""

    __slots__ = ("_finish_reason", "_out", "_reader", "_stream", "_verdict")

    def __init__(self, family: Family, tools: ToolSet) -> None:
        self._out = Findings(tools, family.leaks, None)
        self._reader = family.reader(self._out, False)
        self._stream = MarkerStream(family.pattern, family.longest, self._reader)
        self._verdict: Verdict | None = None

    def feed(self, chunk: str) -> None:
        if self._verdict is not None:
            raise RuntimeError("FamilyStream.feed() after finish()")
        self._stream.feed(chunk)

    def finish(self, finish_reason: str | None = None) -> Verdict:
        if self._verdict is None:
            self._out.finish_reason = finish_reason
            self._stream.finish()
            self._verdict = self._out.verdict()
        return self._verdict
