"""Shortcut for the usual turn: exactly what the family's template writes, confirmed by a few
regular expressions run in C, then the same value, schema and text checks the reader makes.

Anything else returns False having recorded nothing, and the turn is read marker by marker.
The shortcut takes only turns whose markup the reader would find no fault with, and checks
their text, values and calls as the reader does, so the verdicts are equal;
tests/unit/checkers/test_family_shortcut.py holds them equal on the whole corpus.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from repro.checkers.char_scan import may_start_defect
from repro.checkers.families.calls import key_finder
from repro.checkers.families.findings import UNICODE_ESCAPE, Findings, types_of
from repro.checkers.families.json_payload import STRICT_JSON
from repro.checkers.families.leaks import LeakScan, MarkerTails, Where
from repro.checkers.families.lexer import AnyOf, marker_test
from repro.checkers.families.typed_values import STRING_ONLY
from repro.checkers.kinds import Kind
from repro.checkers.repetition import LOOP_MIN_CHARS


@dataclass(frozen=True, slots=True)
class XmlCall:
    """A call whose values are untyped text: (key, raw value, value's offset, key's offset)."""

    name: str
    at: int
    params: list[tuple[str, str, int, int]]


@dataclass(frozen=True, slots=True)
class JsonCall:
    """A call whose arguments are a JSON object: `raw` at `raw_at`, decoded as `value`."""

    name: str
    at: int
    raw: str
    raw_at: int
    value: dict


Draft = XmlCall | JsonCall


@dataclass(frozen=True, slots=True)
class Shape:
    """A family's canonical turn: `[<think>]REASONING</think>` (for a family with reasoning
    markers), prose, then from `first` on: `prefix`, calls (`call` matched one after
    another, `joint` apart, each starting with `each`), `suffix`; then at most one
    end-of-turn token. `draft` reads one call's match, or None if it is not canonical."""

    markers: AnyOf  # whether a piece of text holds a marker
    tails: MarkerTails
    leaks: LeakScan
    first: str
    call: re.Pattern[str]
    draft: Callable[[re.Match[str]], Draft | None]
    each: str
    series: Callable[[list[re.Match[str]]], bool] | None = None  # a rule across the calls
    joint: str = ""
    prefix: str = ""
    suffix: str = ""
    think_open: str = ""
    think_close: str = ""
    end_tokens: Sequence[str] = ()


def reader_shape(reader: type, leaks: LeakScan, **calls: Any) -> Shape:
    """A Shape whose markers, reasoning markers and end-of-turn tokens are `reader`'s own
    (a Reader subclass), and whose calls are as `calls` says (Shape's other fields)."""
    return Shape(
        markers=marker_test(reader.markers),
        tails=reader.tails,
        leaks=leaks,
        think_open=reader.think_open,
        think_close=reader.think_close,
        end_tokens=reader.end_tokens,
        **calls,
    )


def xml_draft(params: re.Pattern[str]) -> Callable[[re.Match[str]], XmlCall | None]:
    """A draft for calls matched with the name in group 1 and the parameters (each matched
    by `params`) in group 2."""

    def draft(m: re.Match[str]) -> XmlCall | None:
        found = xml_params(params, m, 2)
        return None if found is None else XmlCall(m[1], m.start(), found)

    return draft


def read_canonical(shape: Shape, text: str, out: Findings, reasoning_apart: bool) -> bool:
    """Read `text` if canonical, recording its checks in `out`; False (nothing recorded) if not."""
    reasoning_at, reasoning, content_at = -1, "", 0
    if shape.think_close and not reasoning_apart:
        close = text.find(shape.think_close)
        if close != -1:
            lead = len(text) - len(text.lstrip())
            start = lead + len(shape.think_open) if text.startswith(shape.think_open, lead) else 0
            reasoning, reasoning_at = text[start:close], start
            if shape.markers(reasoning):
                return False
            content_at = close + len(shape.think_close)
    end = len(text)
    for token in shape.end_tokens:
        if text.endswith(token):
            end -= len(token)
            break
    first = text.find(shape.first, content_at, end)
    prose = text[content_at : end if first == -1 else first]
    if shape.markers(prose):
        return False
    drafts: list[Draft] = []
    if first != -1 and not _read_calls(shape, text, first, end, drafts):
        return False
    # The markup is canonical: the reader's checks on the text, values and calls.
    values: list[str] = []
    for draft in drafts:
        if isinstance(draft, XmlCall):
            values += (p[1] for p in draft.params)
        else:
            values.append(draft.raw)
    out.quiet = quiet_text(shape.leaks, [reasoning, prose], values)
    if reasoning_at != -1:
        _piece(shape, out, reasoning, reasoning_at, Where.REASONING)
    _piece(shape, out, prose, content_at, Where.CONTENT)
    for draft in drafts:
        if isinstance(draft, XmlCall):
            _xml_call(out, draft)
        else:
            _json_call(out, draft)
    if first == -1 and not prose.strip():
        out.add(Kind.EMPTY_TURN, 0, "the turn has no content and no tool call")
    return True


def quiet_text(leaks: LeakScan, prose: list[str], values: list[str]) -> bool:
    """Whether no piece of text can hold a leak or a character defect: a conservative
    screen, one pass each over the prose joined and the values joined. Strings behind `\\u`
    escapes are seen only decoded, so values with such escapes are not screened."""
    # Joined by newlines: a pattern that spans two pieces only makes the screen cautious.
    said, held = "\n".join(prose), "\n".join(values)
    if "\\u" in held and UNICODE_ESCAPE.search(held) is not None:
        return False
    if may_start_defect(said) or may_start_defect(held):
        return False
    return not leaks.screen(said) and not leaks.screen_values(held)


def _read_calls(shape: Shape, text: str, first: int, end: int, drafts: list[Draft]) -> bool:
    at = first
    if shape.prefix:
        if not text.startswith(shape.prefix, at):
            return False
        at += len(shape.prefix)
    matches = []
    while True:
        m = shape.call.match(text, at)
        if m is None:
            return False
        draft = shape.draft(m)
        if draft is None:
            return False
        drafts.append(draft)
        matches.append(m)
        at = m.end()
        following = at + len(shape.joint)
        if text.startswith(shape.joint, at) and text.startswith(shape.each, following):
            at = following
            continue
        break
    if shape.suffix:
        if not text.startswith(shape.suffix, at):
            return False
        at += len(shape.suffix)
    return at == end and (shape.series is None or shape.series(matches))


def _piece(shape: Shape, out: Findings, text: str, at: int, where: Where) -> None:
    """A piece of free text, as Reader.prose and the reasoning it leads to check it."""
    if not text:
        return
    cut = shape.tails.cut_at(text)
    if cut != -1:
        out.add(Kind.PARTIAL_MARKER, at + cut, f"the text ends in part of a marker: `{text[cut:]}`")
    if out.quiet and len(text) < LOOP_MIN_CHARS and not shape.leaks.glues:
        return  # screened, too short to repeat itself, no glued call to look for
    out.text(text, at, where)


def _xml_call(out: Findings, draft: XmlCall) -> None:
    args: dict[str, Any] = {}
    key_at: dict[str, int] = {}
    whole = True
    tool, tools, quiet = draft.name, out.tools, out.quiet
    for key, raw, raw_at, at in draft.params:
        if quiet and len(raw) < LOOP_MIN_CHARS and types_of(tools, tool, key) is STRING_ONLY:
            value = raw  # what typed_value would find, without its general path
        else:
            value, ok = out.typed_value(tool, key, raw, raw_at)
            whole = whole and ok
        args[key] = value
        key_at[key] = at
    if whole:
        out.call(draft.name, args, draft.at, key_at)


def _json_call(out: Findings, draft: JsonCall) -> None:
    out.json_strings(draft.value, draft.raw, draft.raw_at)
    out.call(draft.name, draft.value, draft.at, key_finder(draft.raw, draft.raw_at, draft.at))


def json_object(raw: str) -> dict | None:
    """`raw` as one JSON object with nothing around it, as the reader requires; else None
    (the reader then says why)."""
    try:
        value, end = STRICT_JSON.raw_decode(raw)
    except ValueError:  # not JSON, a key twice, NaN, or whitespace first
        return None
    except RecursionError:
        return None
    return value if end == len(raw) and type(value) is dict else None


def xml_params(pattern: re.Pattern[str], m: re.Match[str], body: int) -> list | None:
    """A call's parameters from group `body` of `m`: (key, raw value, its offset, the
    parameter's offset), read with `pattern` (groups: key, value); None if a key repeats."""
    params = [
        (p.group(1), p.group(2), p.start(2), p.start())
        for p in pattern.finditer(m.string, m.start(body), m.end(body))
    ]
    return params if distinct_keys(params) else None


def distinct_keys(params: Sequence[tuple[str, str, int, int]]) -> bool:
    return len({p[0] for p in params}) == len(params)


def free_text(markers: Sequence[str]) -> str:
    """A regex for text holding none of `markers`. Written as an unrolled loop (runs of
    characters no marker starts with, then a marker's first character not followed by the
    rest of one) so plain text is matched at C speed; as no marker may occur inside, the
    text ends at the first marker whatever follows."""
    by_first: dict[str, list[str]] = {}
    for m in sorted(set(markers), key=len, reverse=True):
        by_first.setdefault(m[0], []).append(re.escape(m[1:]))
    plain = "[^" + "".join(re.escape(c) for c in by_first) + "]*"
    guarded = "|".join(f"{re.escape(c)}(?!{'|'.join(rest)})" for c, rest in by_first.items())
    return f"{plain}(?:(?:{guarded}){plain})*"
