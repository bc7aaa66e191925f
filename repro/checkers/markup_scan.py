"""Find DSML markup and special tokens where only text may be, and name each garbled form.

Cheap on clean text: a few `str.find` calls for trigger strings, then a look at a small
window around each hit. Every judgement reads at most `WINDOW_BEFORE` characters before
and `WINDOW_AFTER` after its trigger, so a region can be scanned in pieces (streaming)
with the same findings as in one go.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from repro.checkers.kinds import Kind
from repro.dsml.markers import BAR, DSML, V32, Dialect

WINDOW_BEFORE = 8
WINDOW_AFTER = 160

_BARS = "|" + BAR
# What a judgement starts from; each is searched with str.find, which is cheap on clean text.
TRIGGERS = ("DSML", f"<{BAR}", "think>", "function_calls>", "tool_calls>", "<invoke", "<parameter")
# One pass that says whether a region holds any trigger at all (the usual answer: no).
ANY_TRIGGER = re.compile("|".join(re.escape(t) for t in TRIGGERS))
_LONGEST_TRIGGER = max(map(len, TRIGGERS))
_SHORT_CHARS = 256
_TINY_CHARS = 32
_SPECIAL_TOKEN = re.compile(f"<{BAR}([^{BAR}<>\n]{{1,48}}){BAR}>")
_TAG_NAME = re.compile(r"[A-Za-z_]{0,32}")
_INVOKE_ATTR = re.compile(r'<invoke\s+name="')
_PARAM_ATTR = re.compile(r'<parameter\s+name="[^"\n]{0,64}"\s+string="')
_XML_ATTR = re.compile(r"<(?:invoke|parameter)[\s>/]")


class Where(Enum):
    """What kind of text is being scanned, which decides what a well-formed tag there means."""

    CONTENT = "in content"
    REASONING = "in the reasoning"
    VALUE = "inside a parameter value"  # or a server-parsed argument string
    STRUCTURE = "between the tags of a block"  # where only tags may be
    TRAILER = "after the block"  # after the block or EOS: already a defect as a whole


# A well-formed DSML tag or marker is only wrong because of where it is.
_MISPLACED = {
    Where.CONTENT: Kind.MARKUP_IN_CONTENT,
    Where.REASONING: Kind.MARKUP_IN_REASONING,
    Where.VALUE: Kind.MARKUP_IN_VALUE,
    Where.STRUCTURE: Kind.UNBALANCED_MARKUP,
    Where.TRAILER: None,
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One misplaced or garbled piece of markup: [start, end) in the scanned string."""

    start: int
    end: int
    kind: Kind
    message: str


def snippet(text: str, limit: int = 40) -> str:
    """Show a piece of text on one line: newlines escaped, long text cut."""
    shown = text.replace("\n", "\\n")
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def holds_trigger(text: str) -> bool:
    """Whether a trigger string occurs in text: a few `in` tests (on all but the shortest
    text, together cheaper than one search of ANY_TRIGGER, which tries every trigger at
    every character)."""
    if len(text) < _TINY_CHARS:
        return ANY_TRIGGER.search(text) is not None
    for trigger in TRIGGERS:  # noqa: SIM110 (any() with a generator costs more here)
        if trigger in text:
            return True
    return False


def find_triggers(text: str, lo: int, hi: int, seg_hi: int) -> list[tuple[int, str]]:
    """Trigger strings that start in [lo, hi) and end by `seg_hi`, in text order."""
    if hi - lo < _SHORT_CHARS:  # one regex call beats seven on short text; str.find is
        # about twenty times faster than the regex per character on long text
        first = ANY_TRIGGER.search(text, lo, min(hi + _LONGEST_TRIGGER - 1, seg_hi))
        if first is None or first.start() >= hi:
            return []
        lo = first.start()
    hits = []
    for trigger in TRIGGERS:
        stop = min(hi + len(trigger) - 1, seg_hi)
        j = text.find(trigger, lo, stop)
        while j != -1:
            hits.append((j, trigger))
            j = text.find(trigger, j + 1, stop)
    hits.sort()
    return hits


def judge_hits(
    text: str,
    hits: list[tuple[int, str]],
    seg_lo: int,
    seg_hi: int,
    where: Where,
    dialect: Dialect = V32,
    skip_until: int = 0,
) -> tuple[list[Finding], int]:
    """Findings for trigger hits (in text order), each judged on text[seg_lo:seg_hi].

    Returns the findings and the new `skip_until` (the end of the last finding), to pass
    to the next call on the same region so one marker is never reported twice.
    """
    found = []
    for j, trigger in hits:
        if j < skip_until:
            continue
        window_lo, window_hi = max(seg_lo, j - WINDOW_BEFORE), min(seg_hi, j + WINDOW_AFTER)
        finding = _judge(text, j, trigger, window_lo, window_hi, where, dialect)
        if finding is not None:
            found.append(finding)
            skip_until = max(skip_until, finding.end)
    return found, skip_until


def scan_markup(text: str, where: Where, dialect: Dialect = V32) -> list[Finding]:
    """Every finding in a whole string."""
    hits = find_triggers(text, 0, len(text), len(text))
    if not hits:
        return []
    return judge_hits(text, hits, 0, len(text), where, dialect)[0]


def _judge(
    text: str, j: int, trigger: str, lo: int, hi: int, where: Where, dialect: Dialect
) -> Finding | None:
    if trigger == "DSML":
        return _judge_dsml(text, j, lo, hi, where, dialect)
    if trigger == f"<{BAR}":
        return _judge_special_token(text, j, hi, where)
    if trigger == "think>":
        return _judge_think(text, j, lo, where)
    if trigger in ("function_calls>", "tool_calls>"):
        return _judge_bare_block(text, j, lo, trigger)
    return _judge_bare_tag(text, j, hi, where)


def _judge_dsml(
    text: str, j: int, lo: int, hi: int, where: Where, dialect: Dialect
) -> Finding | None:
    """`DSML` with bars around it: the canonical `｜DSML｜` token, or a garbled copy of it."""
    start = _skip_back(text, j, lo, " ", 2)
    bars_end = start
    start = _skip_back(text, start, lo, _BARS, 3)
    left_bars = text[start:bars_end]
    spaced = bars_end != j
    tag_start = _skip_back(text, start, lo, " ", 2)
    tag_start = _skip_back(text, tag_start, lo, "/", 1)
    tag_start = _skip_back(text, tag_start, lo, " ", 2)
    if tag_start > lo and text[tag_start - 1] == "<":
        start = tag_start - 1
        spaced = spaced or text[start:j].count(" ") > 0
    is_tag = text[start] == "<"
    end = _skip_forward(text, j + 4, hi, " ", 2)
    spaced = spaced or end != j + 4
    bars_lo = end
    end = _skip_forward(text, end, hi, _BARS, 3)
    right_bars = text[bars_lo:end]
    name_match = _TAG_NAME.match(text, end, hi)
    name = name_match.group() if name_match else ""
    end += len(name)
    shown = snippet(text[start:end])
    if left_bars == BAR and right_bars == BAR and not spaced:
        if not is_tag:
            return _misplaced(where, start, end, f"bare {DSML} token `{shown}` {where.value}")
        if name in dialect.tag_names:
            return _misplaced(where, start, end, f"DSML tag `{shown}` {where.value}")
        if name in dialect.foreign_block_names:
            return Finding(
                start,
                end,
                Kind.WRONG_BLOCK_NAME,
                f"`{shown}` is another DSML generation's block; this format's is "
                f"`{dialect.block_name}`",
            )
        return Finding(start, end, Kind.UNKNOWN_TAG, f"unknown DSML tag `{shown}`")
    if "|" in left_bars + right_bars:
        return Finding(start, end, Kind.ASCII_BARS, f"DSML marker with ASCII bars: `{shown}`")
    if len(left_bars) > 1 or len(right_bars) > 1:
        return Finding(start, end, Kind.DOUBLED_BARS, f"DSML marker with doubled bars: `{shown}`")
    if not left_bars and not right_bars and not is_tag:
        return None  # the word DSML in prose
    return Finding(start, end, Kind.GARBLED_MARKER, f"garbled DSML marker `{shown}`")


def _misplaced(where: Where, start: int, end: int, message: str) -> Finding | None:
    kind = _MISPLACED[where]
    return None if kind is None else Finding(start, end, kind, message)


def _judge_special_token(text: str, j: int, hi: int, where: Where) -> Finding | None:
    m = _SPECIAL_TOKEN.match(text, j, hi)
    if m is None or m.group(1) == "DSML":
        return None
    return Finding(
        m.start(), m.end(), Kind.SPECIAL_TOKEN, f"special token `{m.group()}` {where.value}"
    )


def _judge_think(text: str, j: int, lo: int, where: Where) -> Finding | None:
    if j - 2 >= lo and text[j - 2 : j] == "</":
        start = j - 2
    elif j - 1 >= lo and text[j - 1] == "<":
        start = j - 1
    else:
        return None
    token = text[start : j + 6]
    return Finding(start, j + 6, Kind.SPECIAL_TOKEN, f"special token `{token}` {where.value}")


def _judge_bare_block(text: str, j: int, lo: int, word: str) -> Finding | None:
    if j - 2 >= lo and text[j - 2 : j] == "</":
        start = j - 2
    elif j - 1 >= lo and text[j - 1] == "<":
        start = j - 1
    else:
        return None  # `｜DSML｜function_calls>` and garbled forms are judged at `DSML`
    shown = text[start : j + len(word)]
    return Finding(
        start, j + len(word), Kind.MISSING_DSML_PREFIX, f"block tag `{shown}` without {DSML}"
    )


def _judge_bare_tag(text: str, j: int, hi: int, where: Where) -> Finding | None:
    """`<invoke …` or `<parameter …` without the DSML token.

    In free text only the DSML shapes count (`<invoke name="`, `<parameter name="…"
    string="`), so XML that merely uses these words is left alone; inside a block any
    such tag is garbled DSML.
    """
    word = "invoke" if text.startswith("<invoke", j) else "parameter"
    if where is Where.STRUCTURE:
        pattern = _XML_ATTR
    else:
        pattern = _INVOKE_ATTR if word == "invoke" else _PARAM_ATTR
    if pattern.match(text, j, hi) is None:
        return None
    return Finding(j, j + 1 + len(word), Kind.MISSING_DSML_PREFIX, f"tag `<{word}` without {DSML}")


def _skip_back(text: str, i: int, lo: int, chars: str, most: int) -> int:
    n = 0
    while n < most and i > lo and text[i - 1] in chars:
        i -= 1
        n += 1
    return i


def _skip_forward(text: str, i: int, hi: int, chars: str, most: int) -> int:
    n = 0
    while n < most and i < hi and text[i] in chars:
        i += 1
        n += 1
    return i
