"""Characters a healthy model never emits: U+FFFD, UTF-8 read as Latin-1/cp1252, C1 controls.

Mojibake is recognised by shape: a UTF-8 lead byte followed by the right number of
continuation bytes, each shown as the Latin-1 or cp1252 character for that byte (`é` =
C3 A9 shows as `Ã©`). A match is at most four characters long.
"""

from __future__ import annotations

import re

from repro.checkers.kinds import Kind

MATCH_MAX_CHARS = 4

# Bytes 0x80-0xBF as Latin-1 shows them, plus cp1252's printable characters for 0x80-0x9F.
_CONT = "\u0080-\u00bf€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"
# A lead byte and as many continuation bytes as it announces (two to four characters).
MOJIBAKE = re.compile(
    f"[\u00c2-\u00df][{_CONT}]|[\u00e0-\u00ef][{_CONT}]{{2}}|[\u00f0-\u00f4][{_CONT}]{{3}}"
)
# Fast first pass: an alternation is slow to search, so MOJIBAKE runs only at these.
MOJIBAKE_START = re.compile(f"[\u00c2-\u00f4][{_CONT}]")
# Any character a defect starts with, as one class: one fast pass over clean text.
SUSPECT = re.compile("[\x00\u0080-\u00ff\ud800-\udfff\ufffd]")
# Exactly where a defect can start: NUL, C1, a surrogate or U+FFFD, or a mojibake lead
# followed by a continuation. Accented letters are SUSPECT but rarely this. One class
# first keeps the search a fast class scan (an alternation would not be); the lookbehind,
# on the character just read, then asks whether it was a lead.
_LEAD = "\u00c2-\u00f4"
DEFECT_START = re.compile(
    f"[\x00\u0080-\u009f{_LEAD}\ud800-\udfff\ufffd](?:(?<=[{_LEAD}])[{_CONT}]|(?<![{_LEAD}]))"
)
INVALID = re.compile("[\x00\u0080-\u009f\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def may_start_defect(text: str) -> bool:
    """False only if no character defect starts in the text: one or two class scans, where
    the full scan takes three."""
    if text.isascii():
        return "\x00" in text
    first = SUSPECT.search(text)  # CJK, DSML bars, emoji: none of these
    # Accented letters are SUSPECT but rarely a defect: look closer from the first.
    return first is not None and DEFECT_START.search(text, first.start()) is not None


def describe(kind: Kind, text: str) -> str:
    """A one-line message for the first character defect of a kind, `text` being the match."""
    if kind is Kind.MOJIBAKE:
        try:
            meant = text.encode("cp1252").decode("utf-8")
        except UnicodeError:
            meant = text.encode("latin-1", "replace").decode("utf-8", "replace")
        return f"mojibake `{text}` (UTF-8 for `{meant}` read as Latin-1/cp1252)"
    if kind is Kind.REPLACEMENT_CHAR:
        return "U+FFFD replacement character: bytes that failed to decode"
    return f"invalid character U+{ord(text):04X}"
