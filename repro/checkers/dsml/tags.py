"""The shapes inside a DSML block, judged as DeepSeek's parser judges them (rules 4, 5).

Each check returns what it read or a `Flaw`: the offset where the text first departs
from the shape, the defect kind, and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repro.checkers.json_codec import read_json
from repro.checkers.kinds import Kind

HEAD_LIMIT_CHARS = 512  # a parameter tag not closed by `>` within this is malformed
# The longest parameter name a tag can carry within that limit: the `>` of
# ` name="KEY" string="false">` must come before it.
KEY_MAX_CHARS = HEAD_LIMIT_CHARS - len(' name="" string="false">')

# Rule 4 as DeepSeek writes it: `^\s*name="(.*?)">\n$`; Python's `$` also matches before
# one final newline, which is what lets a zero-argument invoke's blank line through.
_INVOKE_HEAD = re.compile(r'\s*name="(.*?)">\n\n?\Z', re.DOTALL)
# Rule 5's opening half, up to the first `>`; names and attribute values are read
# stricter than DeepSeek's lazy `(.*?)`: no quote, angle bracket or newline.
_PARAM_HEAD = re.compile(r' name="([^"\n<>]*)" string="([^"\n<>]*)">\Z')
_PARAM_HEAD_NO_STRING = re.compile(r' name="([^"\n<>]*)"\s*>\Z')
_BAD_NAME_CHAR = re.compile(r'["<>\n]')


@dataclass(frozen=True, slots=True)
class Flaw:
    offset: int
    kind: Kind
    reason: str


@dataclass(frozen=True, slots=True)
class ParamHead:
    key: str
    is_string: bool


def invoke_name(text: str, lo: int, hi: int) -> str | Flaw:
    """The tool name from an invoke head, text[lo:hi] between `<｜DSML｜invoke` and the next tag."""
    m = _INVOKE_HEAD.match(text, lo, hi)
    if m is None:
        return _invoke_flaw(text, lo, hi)
    name = m.group(1)
    bad = _BAD_NAME_CHAR.search(name)
    if bad is not None:
        offset = m.start(1) + bad.start()
        return Flaw(offset, Kind.MALFORMED_INVOKE, f"the tool name {name!r} has {bad.group()!r}")
    return name


def _invoke_flaw(text: str, lo: int, hi: int) -> Flaw:
    j = lo
    while j < hi and text[j].isspace():
        j += 1
    if not text.startswith('name="', j, hi):
        return Flaw(j, Kind.MALFORMED_INVOKE, 'expected ` name="…">` after `<｜DSML｜invoke`')
    close = text.find('">', j + 6, hi)
    if close == -1:
        return Flaw(j, Kind.MALFORMED_INVOKE, 'the invoke tag has no closing `">`')
    k = close + 2
    if k >= hi or text[k] != "\n":
        return Flaw(k, Kind.MALFORMED_INVOKE, "expected a newline right after the invoke tag")
    k += 2 if text.startswith("\n\n", k, hi) else 1
    return Flaw(k, Kind.MALFORMED_INVOKE, "unexpected text between the invoke tag and the next tag")


def param_head(text: str, lo: int, hi: int) -> ParamHead | Flaw:
    """Key and string attribute from text[lo:hi]: after `<｜DSML｜parameter`, to the first `>`."""
    m = _PARAM_HEAD.match(text, lo, hi)
    if m is not None:
        key, attr = m.groups()
        if attr in ("true", "false"):
            return ParamHead(key, attr == "true")
        return Flaw(
            m.start(2) - len('string="'),
            Kind.BAD_STRING_ATTRIBUTE,
            f'parameter {key!r} has string="{attr}"; only "true" or "false" are allowed',
        )
    m = _PARAM_HEAD_NO_STRING.match(text, lo, hi)
    if m is not None:
        return Flaw(
            lo, Kind.BAD_STRING_ATTRIBUTE, f"parameter {m.group(1)!r} has no string attribute"
        )
    return _param_flaw(text, lo, hi)


def _param_flaw(text: str, lo: int, hi: int) -> Flaw:
    expected = ' name="'
    if not text.startswith(expected, lo, hi):
        return Flaw(lo, Kind.MALFORMED_PARAMETER, 'expected ` name="` after `<｜DSML｜parameter`')
    close = text.find('"', lo + len(expected), hi)
    if close == -1:
        return Flaw(lo, Kind.MALFORMED_PARAMETER, "the parameter name is not closed by a quote")
    bad = _BAD_NAME_CHAR.search(text, lo + len(expected), close)
    if bad is not None:
        return Flaw(
            bad.start(), Kind.MALFORMED_PARAMETER, f"the parameter name has {bad.group()!r}"
        )
    after = close + 1
    attr = ' string="'
    if not text.startswith(attr, after, hi):
        return Flaw(after, Kind.MALFORMED_PARAMETER, 'expected ` string="…">` after the name')
    quote = text.find('"', after + len(attr), hi)
    if quote == -1:
        return Flaw(after, Kind.MALFORMED_PARAMETER, "the string attribute is not closed")
    if quote + 2 == hi:  # shaped right, but the value holds `<` or a newline
        value = text[after + len(attr) : quote]
        return Flaw(after, Kind.BAD_STRING_ATTRIBUTE, f"string={value!r} is neither true nor false")
    return Flaw(
        quote + 1, Kind.MALFORMED_PARAMETER, "expected `>` right after the string attribute"
    )


def value_end(text: str, lo: int, stop: int) -> int | None:
    """Where a parameter value ends, given `/｜DSML｜parameter` at `stop`; None if no `<`.

    Rule 5's `(.*?)<$`: the value is followed by `<` right before the stop, or by `<` and
    one newline (Python's `$` again).
    """
    if stop - 1 >= lo and text[stop - 1] == "<":
        return stop - 1
    if stop - 2 >= lo and text[stop - 2] == "<" and text[stop - 1] == "\n":
        return stop - 2
    return None


def param_value(raw: str, is_string: bool) -> object:
    """What a parameter's text stands for: itself with string="true", else its JSON.

    Raises ValueError for text that is not JSON (too deep a nesting included).
    """
    if is_string:
        return raw
    try:
        return read_json(raw)
    except RecursionError as e:
        raise ValueError("JSON nested too deep") from e
