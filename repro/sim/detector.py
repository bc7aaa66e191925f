"""A lenient, SGLang-like DSML tool-call detector, streaming and one-shot.

It behaves like SGLang's `deepseekv32` detector (research/dsml.md §2.2; read from the
installed 0.5.23 source, code written here): regexes tolerate any whitespace, the
`string` attribute may hold anything (non-"true" values are tried as JSON), a JSON
object body is accepted, a bare invoke without the block wrapper is accepted, unknown
function names are dropped, an invoke whose body leaves DSML fragments unmatched is
dropped (fail closed), and the blank line before the block is not content. Applied to
the text the engine actually emitted, a corrupted emission yields what SGLang would
return: garbled arguments, dropped calls, markup left in content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from repro.dsml.markers import BLOCK_CLOSE, BLOCK_OPEN, DSML, INVOKE_CLOSE, INVOKE_OPEN

_INVOKE_RE = re.compile(
    rf'<{DSML}invoke\s+name="(?P<name>[^"]+)"\s*(?:(?P<self_close>/>)|>(?P<body>.*?){re.escape(INVOKE_CLOSE)})',
    re.DOTALL,
)
_PARAM_RE = re.compile(
    rf'<{DSML}parameter\s+name="([^"]+)"\s+string="([^"]+)"\s*>(.*?)</{DSML}parameter>',
    re.DOTALL,
)
_STARTS = (BLOCK_OPEN, INVOKE_OPEN)
_STRAY_CLOSERS = (BLOCK_CLOSE, INVOKE_CLOSE)


@dataclass(frozen=True, slots=True)
class ParsedCall:
    index: int
    name: str
    arguments: str  # JSON text, SGLang's formatting (", " and ": ", ensure_ascii off)


@dataclass(frozen=True, slots=True)
class Parsed:
    """What one feed or finish produced: content text and completed calls, in order."""

    content: str = ""
    calls: tuple[ParsedCall, ...] = ()


def _reject_constant(value: str) -> Any:
    raise ValueError(f"invalid JSON constant {value}")


def parse_arguments(body: str, strip_strings: bool = True) -> str:
    """Arguments JSON of one invoke body; raises ValueError when it is malformed.

    SGLang strips string values; `strip_strings=False` keeps them verbatim (for checks).
    """
    stripped = body.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise ValueError("invoke body is not JSON") from exc
        if not isinstance(parsed, dict):
            raise ValueError("invoke body is not a JSON object")
        return stripped
    params: dict[str, Any] = {}
    leftover: list[str] = []
    last = 0
    matched = False
    for match in _PARAM_RE.finditer(body):
        matched = True
        leftover.append(body[last : match.start()])
        last = match.end()
        name, kind, value = match.group(1), match.group(2), match.group(3)
        if kind == "true":
            params[name] = value.strip() if strip_strings else value
        else:
            try:
                params[name] = json.loads(value.strip(), parse_constant=_reject_constant)
            except ValueError:
                params[name] = value.strip()
    leftover.append(body[last:])
    rest = "".join(leftover)
    if DSML in rest or (not matched and rest.strip()):
        raise ValueError("malformed DSML parameter")
    return json.dumps(params, ensure_ascii=False)


def _held_suffix_start(text: str) -> int:
    """Where the tail that could still become a block start begins (len(text) if none)."""
    cut = len(text)
    lt = text.rfind("<", max(0, len(text) - len(BLOCK_OPEN)))
    if lt != -1 and any(s.startswith(text[lt:]) for s in _STARTS):
        cut = lt
    while cut > 0 and text[cut - 1] == "\n":  # the blank line before a block is not content
        cut -= 1
    return cut


class DsmlDetector:
    """Feed emitted text as it streams; get content and completed calls back."""

    def __init__(self, tool_names: Collection[str], strip_strings: bool = True) -> None:
        self._tool_names = frozenset(tool_names)
        self._strip_strings = strip_strings
        self._buffer = ""
        self._in_block = False
        self._next_index = 0

    def feed(self, text: str) -> Parsed:
        self._buffer += text
        content: list[str] = []
        calls: list[ParsedCall] = []
        while True:
            if not self._in_block:
                starts = [i for i in (self._buffer.find(s) for s in _STARTS) if i != -1]
                if not starts:
                    cut = _held_suffix_start(self._buffer)
                    content.append(self._buffer[:cut])
                    self._buffer = self._buffer[cut:]
                    break
                start = min(starts)
                content.append(self._buffer[:start].removesuffix("\n\n"))
                self._in_block = True
                opener = BLOCK_OPEN if self._buffer.startswith(BLOCK_OPEN, start) else ""
                self._buffer = self._buffer[start + len(opener) :]
                continue
            match = _INVOKE_RE.search(self._buffer)
            close_at = self._buffer.find(BLOCK_CLOSE)
            if match and (close_at == -1 or match.start() < close_at):
                self._buffer = self._buffer[match.end() :]
                call = self._call(match)
                if call is not None:
                    calls.append(call)
                continue
            if close_at != -1 and (match is None or close_at < match.start()):
                self._in_block = False
                self._buffer = self._buffer[close_at + len(BLOCK_CLOSE) :]
                continue
            break
        return Parsed(_clean("".join(content)), tuple(calls))

    def finish(self) -> Parsed:
        """End of stream: held plain text is content; an unclosed invoke is dropped."""
        rest, self._buffer = self._buffer, ""
        if self._in_block:
            return Parsed()
        return Parsed(_clean(rest))

    def _call(self, match: re.Match[str]) -> ParsedCall | None:
        name = match.group("name").strip()
        try:
            arguments = (
                "{}"
                if match.group("self_close")
                else parse_arguments(match.group("body"), self._strip_strings)
            )
        except ValueError:
            return None
        if name not in self._tool_names:
            return None
        call = ParsedCall(self._next_index, name, arguments)
        self._next_index += 1
        return call


def _clean(content: str) -> str:
    for closer in _STRAY_CLOSERS:
        if closer in content:
            content = content.replace(closer, "")
    return content


def parse_completion(text: str, tool_names: Collection[str], strip_strings: bool = True) -> Parsed:
    """One-shot parse of a whole completion (the non-streaming path)."""
    detector = DsmlDetector(tool_names, strip_strings)
    head, tail = detector.feed(text), detector.finish()
    return Parsed(head.content + tail.content, head.calls + tail.calls)
