"""Markup findings in the parser's current segment, scanned as its text settles.

The parser calls `scan` with the part of the segment no stop string can still claim; each
trigger is judged on a window that lies inside that part, so scanning in pieces finds what
one scan of the whole segment finds.
"""

from __future__ import annotations

import re

from repro.checkers.dsml.text_buffer import TextBuffer
from repro.checkers.markup_scan import Finding, Where, find_triggers, judge_hits
from repro.dsml.markers import Dialect

_NON_SPACE = re.compile(r"\S")


class SegmentScan:
    __slots__ = ("nonblank", "pos", "skip")

    def __init__(self) -> None:
        self.pos = 0  # absolute: the segment is scanned up to here
        self.skip = 0  # absolute: the end of the last finding (one marker, one finding)
        self.nonblank = False  # some scanned content was not whitespace

    def scan(
        self, tb: TextBuffer, seg_lo: int, hi: int, seg_hi: int, where: Where, dialect: Dialect
    ) -> list[Finding]:
        """Findings for triggers in [pos, hi), judged on the segment up to `seg_hi`
        (absolute positions)."""
        b, lo = tb.base, self.pos
        self.pos = hi
        if where is Where.CONTENT and not self.nonblank:
            self.nonblank = _NON_SPACE.search(tb.text, lo - b, hi - b) is not None
        hits = find_triggers(tb.text, lo - b, hi - b, seg_hi - b)
        if not hits:
            return []
        window_lo = max(seg_lo, b) - b
        found, skip = judge_hits(
            tb.text, hits, window_lo, seg_hi - b, where, dialect, self.skip - b
        )
        self.skip = skip + b
        return [Finding(f.start + b, f.end + b, f.kind, f.message) for f in found]
