"""Split a completion at its format's markers, whole or fed in chunks, with the same result.

A format's reader sees the text as (segment, marker) pairs: the text since the last marker,
then the marker. Markers are found leftmost first, the longest at a position winning. Fed in
chunks, a marker is taken only once every marker that could start at or before it would fit
in the text so far, so any split of a text yields the pairs the whole text yields.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol


class MarkerReader(Protocol):
    def marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        """Take a marker and the segment before it; True keeps the marker as text of the
        segment (data inside a value), which then runs on to the next marker."""

    def end(self, seg: str, seg_at: int) -> None:
        """The text has ended; `seg` is what follows the last marker."""


def marker_pattern(markers: Sequence[str]) -> re.Pattern[str]:
    ordered = sorted(set(markers), key=len, reverse=True)  # longest first at one position
    return re.compile("|".join(re.escape(m) for m in ordered))


def read_whole(pattern: re.Pattern[str], text: str, reader: MarkerReader) -> None:
    seg_at = 0
    for m in pattern.finditer(text):
        at = m.start()
        if not reader.marker(text[seg_at:at], seg_at, m.group(), at):
            seg_at = m.end()
    reader.end(text[seg_at:], seg_at)


STEP_CHARS = 512  # chunks are read once this much text is pending: cheap per token


class MarkerStream:
    """`feed` chunks, then `finish`: the reader gets exactly what `read_whole` gives it."""

    __slots__ = (
        "_base",
        "_buf",
        "_longest",
        "_pattern",
        "_pending",
        "_pending_chars",
        "_reader",
        "_scan_at",
        "_seg_at",
    )

    def __init__(self, pattern: re.Pattern[str], longest: int, reader: MarkerReader) -> None:
        self._pattern = pattern
        self._longest = longest
        self._reader = reader
        self._buf = ""
        self._base = 0  # absolute offset of _buf[0]
        self._seg_at = 0  # where the open segment starts
        self._scan_at = 0  # no marker starts in [_seg_at, _scan_at) but kept ones
        # Chunks not yet joined to the buffer: joining every token's chunk to a long open
        # segment (a file's content) would copy it once per token.
        self._pending: list[str] = []
        self._pending_chars = 0

    def feed(self, chunk: str) -> None:
        if chunk:
            self._pending.append(chunk)
            self._pending_chars += len(chunk)
            if self._pending_chars >= STEP_CHARS:
                self._join()
                self._take(final=False)

    def finish(self) -> None:
        self._join()
        self._take(final=True)
        self._reader.end(self._buf[self._seg_at - self._base :], self._seg_at)

    def _join(self) -> None:
        if self._pending:
            self._buf += "".join(self._pending)
            self._pending.clear()
            self._pending_chars = 0

    def _take(self, final: bool) -> None:
        buf, base = self._buf, self._base
        end = base + len(buf)
        # Every marker that starts before the horizon fits in the text so far.
        horizon = end if final else end - self._longest + 1
        while True:
            m = self._pattern.search(buf, self._scan_at - base)
            if m is None or m.start() + base >= horizon:
                self._scan_at = max(self._scan_at, horizon)
                break
            at = m.start() + base
            seg = buf[self._seg_at - base : m.start()]
            kept = self._reader.marker(seg, self._seg_at, m.group(), at)
            self._scan_at = m.end() + base
            if not kept:
                self._seg_at = self._scan_at
        if self._seg_at > base:  # the open segment is all a reader may still need
            self._buf = buf[self._seg_at - base :]
            self._base = self._seg_at


class AnyOf:
    """Whether a text holds a match of any of some regexes, each beginning with a literal
    character. One search per first character: `re` skips to a literal first character at
    C speed, but reads an alternation of several first characters one character at a
    time, about twenty times slower."""

    __slots__ = ("_searches",)

    def __init__(self, patterns: Sequence[str]) -> None:
        groups: dict[str, list[str]] = {}
        for p in patterns:
            groups.setdefault(_first_literal(p), []).append(p)
        self._searches = tuple(re.compile("|".join(ps)).search for ps in groups.values())

    def __call__(self, text: str) -> bool:
        for search in self._searches:  # noqa: SIM110 (any() costs more than these few)
            if search(text) is not None:
                return True
        return False


def _first_literal(pattern: str) -> str:
    if pattern[0] == "\\" and pattern[1] not in "sSdDwWbBAZ":
        return pattern[1]
    if pattern[0] in "([.^$|?*+{\\":
        raise ValueError(f"{pattern!r} must begin with a literal character")
    return pattern[0]


def marker_test(markers: Sequence[str]) -> AnyOf:
    """Whether a text holds any of `markers`."""
    return AnyOf([re.escape(m) for m in markers])
