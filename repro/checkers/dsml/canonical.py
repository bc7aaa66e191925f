"""The canonical form, as DeepSeek's encoder writes it (repro.dsml.encode), read in one go.

One reading of it for the two shortcuts of the parser: `read_canonical_invoke` takes one
invoke whole (the streaming state machine, stream.py) and clean_turn.py matches a whole
block with the same tag patterns. A shortcut is not a second grammar: it answers only where
the tag-by-tag reading would find no markup defect, and otherwise says "read it tag by tag"
(None). The parser's tests compare the readings on every corpus and corruption.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from repro.checkers.dsml.tags import KEY_MAX_CHARS, param_value
from repro.dsml.markers import BAR, DSML, INVOKE_OPEN

# Printable ASCII but quotes, angle brackets and bars: a name as tags.py reads it, narrowed
# so that a tag holds no character a character defect could start at (clean_turn.py).
NAME = r'[^"<>|\x00-\x1f\x7f-\U0010ffff]'
# Up to the first `<｜` or `</｜`; possessive, so a failed match does not backtrack.
VALUE = f"[^<]*+(?:<(?!/?{BAR})[^<]*+)*+"
NEXT_INVOKE = f">\n{INVOKE_OPEN}"  # what follows an invoke when another comes next


def canonical_tags(group: Callable[[str], str]) -> tuple[str, str]:
    """Patterns of an invoke's tag and of a whole parameter, `group` around the parts to
    capture: the tool name; the key, the string attribute and the value.

    A key longer than KEY_MAX_CHARS puts the tag's `>` past the state machine's limit.
    """
    invoke = f'<{DSML}invoke name="{group(NAME + "*")}">\n'
    param = (
        f'<{DSML}parameter name="{group(f"{NAME}{{0,{KEY_MAX_CHARS}}}")}" '
        f'string="{group("true|false")}">{group(VALUE)}</{DSML}parameter>\n'
    )
    return invoke, param


_HEAD, _PARAM = (re.compile(p) for p in canonical_tags(lambda p: f"({p})"))


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
        key, attribute, raw = tag.groups()
        if key in keys:
            return None
        keys.add(key)
        try:
            value = param_value(raw, attribute == "true")
        except ValueError:
            return None
        params.append(CanonicalParam(key, tag.start(), value, raw, tag.start(3)))
        pos = tag.end()
    # Every `DSML` must belong to a tag just read: then no value holds the marker's word
    # (the value pattern already stops at `<｜`).
    if span.count("DSML") != 1 + 2 * len(params):
        return None
    return CanonicalInvoke(head.group(1), tuple(params))
