"""Character defects and runaway repetition over one field's text, fed front to back.

It reports the first defect of each kind with a count, not every occurrence: one bad
decode tends to spread U+FFFD through the rest of a turn.
"""

from __future__ import annotations

from repro.checkers.char_scan import (
    INVALID,
    MATCH_MAX_CHARS,
    MOJIBAKE,
    MOJIBAKE_START,
    REPLACEMENT,
    describe,
    may_start_defect,
)
from repro.checkers.kinds import Kind
from repro.checkers.repetition import RepetitionProbe
from repro.checkers.verdict import Defect


class TextWatch:
    """Scans a growing text (a buffer and its absolute offset); `defects` once at the end."""

    __slots__ = (
        "_char_pos",
        "_counts",
        "_covered_from",
        "_covered_to",
        "_first",
        "_mojibake_until",
        "_repetition",
    )

    def __init__(self) -> None:
        self._char_pos = 0
        self._mojibake_until = 0  # where the last mojibake found ends
        self._covered_from = self._covered_to = 0  # its part past the last piece scanned
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
        if settled > self._char_pos:
            self._scan_chars(buf, base, self._char_pos - base, settled - base)
            self._char_pos = settled
        self._repetition.advance(buf, base, final)

    def _scan_chars(self, buf: str, base: int, lo: int, hi: int) -> None:
        """Character defects that start in buf[lo:hi] (a match may run past `hi`)."""
        if not may_start_defect(buf[lo : hi + 1]):  # one more: a mojibake may end past hi
            return  # the usual case
        region = buf[lo:hi]
        covered = set()  # positions inside mojibake: a C1 character there is part of it
        for m in MOJIBAKE_START.finditer(buf, lo):
            at = m.start() + base
            if at >= hi + base:
                break
            if at < self._mojibake_until:
                continue
            full = MOJIBAKE.match(buf, m.start())
            if full is not None:
                self._note(Kind.MOJIBAKE, at, full.group())
                self._mojibake_until = full.end() + base
                covered.update(range(at, self._mojibake_until))
        at = region.find(REPLACEMENT)
        while at != -1:
            self._note(Kind.REPLACEMENT_CHAR, lo + at + base, REPLACEMENT)
            at = region.find(REPLACEMENT, at + 1)
        for m in INVALID.finditer(buf, lo, hi):
            at = m.start() + base
            if at not in covered and not (self._covered_from <= at < self._covered_to):
                self._note(Kind.INVALID_CHAR, at, m.group())
        if self._mojibake_until > hi + base:  # mojibake that runs into the next piece
            self._covered_from, self._covered_to = hi + base, self._mojibake_until

    def _note(self, kind: Kind, offset: int, text: str) -> None:
        if kind not in self._first or offset < self._first[kind][0]:
            self._first[kind] = (offset, text)
        self._counts[kind] = self._counts.get(kind, 0) + 1

    def defects(self, field: str) -> list[Defect]:
        found = []
        for kind, (offset, text) in sorted(self._first.items(), key=lambda item: item[1][0]):
            more = self._counts[kind] - 1
            message = describe(kind, text) + (f" ({more} more in {field})" if more else "")
            found.append(Defect(kind, offset, message, field))
        run = self._repetition.run
        if run is not None:
            shown = f" ({run.unit!r})" if run.unit else ""
            message = (
                f"runaway repetition: a {run.period_chars}-character unit{shown} repeats "
                f"{run.repeats} times"
            )
            found.append(Defect(Kind.RUNAWAY_REPETITION, run.offset, message, field))
        return found
