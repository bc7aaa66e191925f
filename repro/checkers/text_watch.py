"""Character defects and runaway repetition over one field's text, fed front to back.

It reports the first defect of each kind with a count, not every occurrence: one bad
decode tends to spread U+FFFD through the rest of a turn.
"""

from __future__ import annotations

from repro.checkers.char_scan import CHAR_DEFECT, KIND_OF_GROUP, MATCH_MAX_CHARS, SUSPECT, describe
from repro.checkers.kinds import Kind
from repro.checkers.repetition import RepetitionProbe
from repro.checkers.verdict import Defect


class TextWatch:
    """Scans a growing text (a buffer and its absolute offset); `defects` once at the end."""

    __slots__ = ("_char_pos", "_counts", "_first", "_repetition")

    def __init__(self) -> None:
        self._char_pos = 0
        self._first: dict[Kind, tuple[int, str]] = {}
        self._counts: dict[Kind, int] = {}
        self._repetition = RepetitionProbe()

    def keep_from(self) -> int:
        """The earliest absolute offset this watch may still read."""
        return min(self._char_pos, self._repetition.keep_from())

    def advance(self, buf: str, base: int, final: bool) -> None:
        end = base + len(buf)
        # A match is at most MATCH_MAX_CHARS long: one starting before `settled` is whole.
        settled = end if final else end - (MATCH_MAX_CHARS - 1)
        pos = self._char_pos
        while pos < settled:
            # Most text has no suspect character at all; each one found is tried in place.
            suspect = SUSPECT.search(buf, pos - base, settled - base)
            if suspect is None:
                break
            m = CHAR_DEFECT.match(buf, suspect.start())
            if m is None:
                pos = suspect.start() + 1 + base
                continue
            kind = KIND_OF_GROUP[m.lastgroup or ""]
            if kind not in self._first:
                self._first[kind] = (m.start() + base, m.group())
            self._counts[kind] = self._counts.get(kind, 0) + 1
            pos = m.end() + base
        self._char_pos = max(pos, settled)
        self._repetition.advance(buf, base, final)

    def defects(self, field: str) -> list[Defect]:
        found = []
        for kind, (offset, text) in self._first.items():
            more = self._counts[kind] - 1
            message = describe(kind, text) + (f" ({more} more in {field})" if more else "")
            found.append(Defect(kind, offset, message, field))
        run = self._repetition.run
        if run is not None:
            message = (
                f"runaway repetition: a {run.period_chars}-character unit repeats "
                f"{run.repeats} times"
            )
            found.append(Defect(Kind.RUNAWAY_REPETITION, run.offset, message, field))
        return found
