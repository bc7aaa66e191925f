"""Markup where only text may be: a format's own markers, their stripped or garbled remnants,
and special tokens, found in one regular-expression pass over a piece of text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from repro.checkers.families.lexer import AnyOf
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.checkers.toolset import ToolSet


class Where(Enum):
    CONTENT = "in content"
    REASONING = "in the reasoning"
    VALUE = "inside a value"


_WHOLE = {
    Where.CONTENT: Kind.MARKUP_IN_CONTENT,
    Where.REASONING: Kind.MARKUP_IN_REASONING,
    Where.VALUE: Kind.MARKUP_IN_VALUE,
}


_FRAGMENT_CHARS = 4
# What follows a marker cut short in a stream: the next line, the next marker, a closing
# quote (`\\`: an escaped newline in JSON). `<param name=` or `<parameter>` in prose is
# followed by none of them. A cut at the end of a piece is Reader.tail's to report.
_CUT_BY = frozenset({"\n", "<", "[", '"', "\\"})


@dataclass(frozen=True, slots=True)
class Leak:
    start: int
    kind: Kind
    message: str


class LeakScan:
    """`markers`: the format's markers, whole; `call_openers`: those that start a call (in the
    reasoning they are `call_in_reasoning`); `stripped`: regexes for what a marker leaves
    when its special tokens are dropped or mangled; `specials`: special-token regexes;
    `glued`: how a call with its markers dropped reads; `markers_are_text`: the markers are
    ordinary tokens (Qwen, Hermes, MiniMax), so a value may hold them. A value reads on past
    a marker either way (research/toolformats.md §4.6); special-token markers inside it are
    flagged, as a healthy model does not emit a control token mid-value."""

    __slots__ = (
        "_call_openers",
        "_glued",
        "_markers",
        "_markers_are_text",
        "_pattern",
        "_screen",
        "_value_screen",
    )

    def __init__(
        self,
        markers: Sequence[str],
        call_openers: Sequence[str] = (),
        stripped: Sequence[str] = (),
        specials: Sequence[str] = (),
        glued: Glued | None = None,
        markers_are_text: bool = False,
    ) -> None:
        ordered = sorted(set(markers), key=len, reverse=True)
        whole = "|".join(re.escape(m) for m in ordered)
        parts = [f"(?P<whole>{whole})"]
        # A marker cut short: its first _FRAGMENT_CHARS or more characters, then what ends a
        # piece of a stream (`</paramete` and a newline).
        heads = sorted({m[:_FRAGMENT_CHARS] for m in ordered if len(m) > _FRAGMENT_CHARS + 1})
        if heads:
            parts.append(f"(?P<fragment>(?:{'|'.join(map(re.escape, heads))})[A-Za-z_:▁]*)")
        if stripped:
            parts.append(f"(?P<stripped>{'|'.join(stripped)})")
        if specials:
            parts.append(f"(?P<special>{'|'.join(specials)})")
        self._pattern = re.compile("|".join(parts))
        # Whether a text may hold anything at all (lexer.AnyOf); finditer above is read
        # only when it may.
        self._screen = AnyOf(
            [*map(re.escape, ordered), *map(re.escape, heads), *stripped, *specials]
        )
        # In a value only markers (where they are control tokens), cut markers and special
        # tokens count: a value may spell what a stripped marker leaves.
        whole_in_values = () if markers_are_text else tuple(map(re.escape, ordered))
        self._value_screen = AnyOf([*whole_in_values, *map(re.escape, heads), *specials])
        self._call_openers = frozenset(call_openers)
        self._glued = glued
        self._markers = tuple(ordered)
        self._markers_are_text = markers_are_text

    def screen(self, text: str) -> bool:
        """Whether anything in `text` may be a leak (the scan may find it is none)."""
        return self._screen(text)

    def screen_values(self, text: str) -> bool:
        """`screen` for text inside values."""
        return self._value_screen(text)

    @property
    def glues(self) -> bool:
        """Whether this family looks for calls left as text (Glued)."""
        return self._glued is not None

    def glued_calls(self, text: str, tools: ToolSet) -> list[Leak]:
        return [] if self._glued is None else self._glued.scan(text, tools)

    def scan(self, text: str, where: Where, tools: ToolSet | None = None) -> list[Leak]:
        found = []
        if self._glued is not None and tools is not None and where is not Where.VALUE:
            found += self._glued.scan(text, tools)
        if not self._screen(text):
            return found  # the usual case
        for m in self._pattern.finditer(text):
            shown = snippet(m.group())
            if m.lastgroup == "fragment":
                after = text[m.end() : m.end() + 1]
                # A value ends at its closer: one ending in a marker's first characters
                # holds a piece of markup a repeated delta left.
                ends_value = not after and where is Where.VALUE
                cut = after in _CUT_BY or ends_value
                if not cut or not any(k.startswith(m.group()) for k in self._markers):
                    continue
                found.append(Leak(m.start(), Kind.PARTIAL_MARKER, f"`{shown}`: a marker cut short"))
                continue
            if m.lastgroup == "whole":
                if where is Where.VALUE and self._markers_are_text:
                    continue  # ordinary text a healthy value may hold, not a control token
                if where is Where.REASONING and m.group() in self._call_openers:
                    kind = Kind.CALL_IN_REASONING
                    message = f"a tool call `{shown}` opens {where.value}"
                else:
                    kind, message = _WHOLE[where], f"marker `{shown}` {where.value}"
            elif m.lastgroup == "stripped":
                if where is Where.VALUE:
                    continue  # a value may spell what a marker leaves; prose never does
                kind = Kind.STRIPPED_MARKER
                message = f"`{shown}` {where.value}: a marker's text without its special tokens"
            else:
                kind, message = Kind.SPECIAL_TOKEN, f"special token `{shown}` {where.value}"
            found.append(Leak(m.start(), kind, message))
        return found


class Glued(Enum):
    """A whole call left as text once its special tokens are dropped: a declared tool's name
    glued to its JSON (`search{"query": ...}`: DeepSeek, Mistral), or to its first key
    (`search\nquery\nx` or `searchqueryx`: GLM)."""

    JSON = "json"
    PAIRS = "pairs"

    def scan(self, text: str, tools: ToolSet) -> list[Leak]:
        for name in tools.validators:
            at = text.find(name)
            while at != -1:
                end = at + len(name)
                if self._glued_at(text, at, end, name, tools):
                    shown = snippet(text[at : end + 24])
                    message = f"`{shown}`: a call left as text, its markers dropped"
                    return [Leak(at, Kind.STRIPPED_MARKER, message)]
                at = text.find(name, end)
        return []

    def _glued_at(self, text: str, at: int, end: int, name: str, tools: ToolSet) -> bool:
        if self is Glued.JSON:
            return text.startswith(('{"', "{}"), end) and (at == 0 or not text[at - 1].isalnum())
        line_start = at == 0 or text[at - 1] == "\n"
        if line_start and (end == len(text) or text[end] == "\n"):
            return True  # the tool's name alone on a line: a call with no arguments
        if text.startswith("\n", end):
            end += 1
        validator = tools.validators.get(name)
        properties = validator.schema.get("properties", {}) if validator is not None else {}
        return any(text.startswith(key, end) for key in (*properties, *tools.validators))


class MarkerTails:
    """Where a text ends in the first characters of one of `markers`, found by looking back
    from the end for a character markers start with (usually none is near the end)."""

    __slots__ = ("_by_first", "_longest", "_shortest")

    def __init__(self, markers: Sequence[str], shortest: int = 2) -> None:
        self._by_first: dict[str, tuple[str, ...]] = {}
        for m in markers:
            self._by_first[m[0]] = (*self._by_first.get(m[0], ()), m)
        self._longest = max(map(len, markers))
        self._shortest = shortest

    def cut_at(self, text: str) -> int:
        """The offset of a marker's proper prefix that ends the text, else -1."""
        lo = max(0, len(text) - self._longest + 1)
        best = -1
        for first, markers in self._by_first.items():
            k = text.find(first, lo)
            while k != -1:
                piece = text[k:]
                if len(piece) >= self._shortest and any(
                    len(m) > len(piece) and m.startswith(piece) for m in markers
                ):
                    if best == -1 or k < best:
                        best = k
                    break
                k = text.find(first, k + 1)
        return best
