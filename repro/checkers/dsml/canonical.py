"""An invoke read in one go when it is exactly as DeepSeek's encoder writes it.

A shortcut for the parser, not a second grammar: it answers only where the tag-by-tag
reading would find no markup defect, and otherwise says "read it tag by tag" (None). The
parser's tests compare both readings on every corpus and corruption.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from repro.checkers.dsml.markers import DSML, INVOKE_OPEN
from repro.checkers.dsml.tags import KEY_MAX_CHARS
from repro.checkers.json_codec import read_json

_HEAD = re.compile(f'<{DSML}invoke name="([^"<>\n]*)">\n')
# A name longer than KEY_MAX_CHARS puts the tag's `>` past the state machine's limit.
_PARAM = re.compile(
    f'<{DSML}parameter name="([^"<>\n]{{0,{KEY_MAX_CHARS}}})" string="(true|false)">'
)
_PARAM_CLOSE_LINE = f"</{DSML}parameter>\n"
NEXT_INVOKE = f">\n{INVOKE_OPEN}"  # what follows an invoke when another comes next


class CanonicalParam(NamedTuple):  # tuples: built once per parameter, on the hot path
    key: str
    at: int  # where its tag starts
    value: object
    raw: str  # the value's text
    value_at: int


class CanonicalInvoke(NamedTuple):
    name: str
    params: tuple[CanonicalParam, ...]


def read_canonical_invoke(buf: str, lo: int, hi: int) -> CanonicalInvoke | None:
    """The invoke in buf[lo:hi] (its tag up to `</｜DSML｜invoke`), or None to read tag by tag.

    None whenever anything is off: another shape, a duplicate key, a `string="false"`
    value that is not JSON, or any markup inside a value.
    """
    head = _HEAD.match(buf, lo, hi)
    if head is None:
        return None
    span = buf[lo:hi]
    if "<invoke" in span or "<parameter" in span or "think>" in span or "_calls>" in span:
        return None  # triggers of markup_scan (`_calls>`: function_calls>, tool_calls>)
    params: list[CanonicalParam] = []
    keys: set[str] = set()
    pos = head.end()
    if hi - pos == 1 and buf[pos] == "\n":
        pos = hi  # the zero-argument form: a blank line
    while pos < hi:  # parameters back to back, each one `>\n` after the last
        tag = _PARAM.match(buf, pos, hi)
        if tag is None:
            return None
        value_end = buf.find(_PARAM_CLOSE_LINE, tag.end(), hi)
        if value_end == -1:
            return None
        key, raw = tag.group(1), buf[tag.end() : value_end]
        if key in keys:
            return None
        keys.add(key)
        if tag.group(2) == "true":
            value: object = raw
        else:
            try:
                value = read_json(raw)
            except (ValueError, RecursionError):
                return None
        params.append(CanonicalParam(key, tag.start(), value, raw, tag.end()))
        pos = value_end + len(_PARAM_CLOSE_LINE)
    # Every `DSML` and `<｜` must belong to a tag just read: then no value holds markup and
    # each value really ends at its own closing tag.
    if span.count("DSML") != 1 + 2 * len(params) or span.count("<\uff5c") != 1 + len(params):
        return None
    return CanonicalInvoke(head.group(1), tuple(params))
