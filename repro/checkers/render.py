"""Point at a defect in its text: line and column, the line itself, a caret under the spot.

Columns count characters from 1; the caret is placed by display width (CJK and fullwidth
characters take two cells, combining marks none), and a long line is cut to a window.
"""

from __future__ import annotations

import unicodedata

from repro.checkers.verdict import Defect

WINDOW_CELLS = 120


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of character `offset` in `text`."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def _cells(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _printable(ch: str) -> str:
    if ch == "\t":
        return " "
    if ch.isprintable():
        return ch
    return "?"  # control characters, lone surrogates: one cell, never raw


def caret(text: str, offset: int) -> tuple[str, str]:
    """The line holding `offset` (cut to WINDOW_CELLS around it) and a caret line under it."""
    offset = max(0, min(offset, len(text)))
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    line = text[start : len(text) if end == -1 else end]
    k = offset - start
    lo, hi = 0, len(line)
    if sum(_cells(ch) for ch in line) > WINDOW_CELLS:  # a long line: a window around k
        lo = k
        used = 0
        while lo > 0 and used < WINDOW_CELLS // 2:
            lo -= 1
            used += _cells(line[lo])
        hi = k
        used = 0
        while hi < len(line) and used < WINDOW_CELLS // 2:
            used += _cells(line[hi])
            hi += 1
    shown = "".join(_printable(ch) for ch in line[lo:hi])
    pad = sum(_cells(_printable(ch)) for ch in line[lo:k])
    prefix = "…" if lo > 0 else ""
    suffix = "…" if hi < len(line) else ""
    return prefix + shown + suffix, " " * (pad + len(prefix)) + "^"


def render_defect(source: str, text: str, defect: Defect, *, field_is_source: bool) -> str:
    """`source:line:col: kind: message`, then the line and a caret (indented by two)."""
    line, column = line_col(text, defect.offset)
    where = (
        f"{source}:{line}:{column}"
        if field_is_source
        else f"{source}: {defect.field}:{line}:{column}"
    )
    shown, mark = caret(text, defect.offset)
    return f"{where}: {defect.kind}: {defect.message}\n  {shown}\n  {mark}"
