"""Checks for a field that must be plain text: content beside parsed calls, and reasoning."""

from __future__ import annotations

from repro.checkers.markup_scan import Where, scan_markup
from repro.checkers.text_watch import TextWatch
from repro.checkers.verdict import Defect


def check_free_text(text: str, field: str, where: Where) -> list[Defect]:
    """Markup and special tokens (none may appear), character defects, runaway repetition."""
    if not text:
        return []
    findings = scan_markup(text, where)
    defects = [Defect(f.kind, f.start, f.message, field) for f in findings]
    watch = TextWatch()
    watch.advance(text, 0, final=True)
    return defects + watch.defects(field)
