"""An SGLang-like DSML tool-call detector, streaming and one-shot.

It returns what SGLang 0.5.23's `deepseekv32` detector returns for the same text
(research/dsml.md §2.2; behaviour read from the installed source, code written here;
tests/conformance/test_conformance_sim_detector.py compares the two on spliced output):

- Streaming (`DsmlDetector`, what a streamed response goes through). Text is released as
  content only while the buffer holds no DSML marker (`｜DSML｜`, `<｜`, `</｜`) and does not
  end in what could start one; trailing whitespace is held. Once the buffer holds one, it
  waits for a complete invoke (`<｜DSML｜invoke name="…">` up to the first
  `</｜DSML｜invoke>`, or self-closing). The first complete invoke releases the text before
  it (or before the block opener nearest before it), less a trailing blank line; nothing
  after it is ever content. Each complete invoke is a call, with any name; one whose body
  leaves a DSML fragment unmatched is dropped (fail closed). At the end, a buffer with no
  invoke yet releases the text before its first marker; after an invoke, nothing.
- One-shot (`parse_completion`, SGLang's non-streaming path): content is the text before the
  block opener; calls come from complete blocks only (or from a bare invoke), and calls to
  tools the request did not declare are dropped.

So a corrupted emission yields what SGLang would return: garbled arguments, dropped calls,
markup left in content, a final answer cut short where spliced markup began.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from repro.dsml.markers import BAR, BLOCK_CLOSE, BLOCK_OPEN, DSML, INVOKE_OPEN

# The body runs to the first invoke closer; `end` is empty while that closer has not come.
_INVOKE_RE = re.compile(
    rf'<{DSML}invoke\s+name="(?P<name>[^"]+)"\s*'
    rf"(?:(?P<self_close>/>)|>(?P<body>.*?)(?P<end></{DSML}invoke>|$))",
    re.DOTALL,
)
_PARAM_RE = re.compile(
    rf'<{DSML}parameter\s+name="([^"]+)"\s+string="([^"]+)"\s*>(.*?)</{DSML}parameter>',
    re.DOTALL,
)
_BLOCK_RE = re.compile(rf"{re.escape(BLOCK_OPEN)}(.*?){re.escape(BLOCK_CLOSE)}", re.DOTALL)
_MARKERS = (DSML, f"<{BAR}", f"</{BAR}")
_MARKER_PREFIXES = ("<", f"<{BAR}", "</", f"</{BAR}")


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


def _text_before_markup(text: str) -> str:
    """The text before the first DSML marker (and the `<` or `</` opening it), less a
    trailing blank line."""
    at = text.find(DSML)
    if at == -1:
        return text
    if text.endswith("</", 0, at):
        at -= 2
    elif text.endswith("<", 0, at):
        at -= 1
    return text[:at].removesuffix("\n\n")


def _may_hold_markup(text: str) -> bool:
    """A marker (every DSML tag holds one), or an end that could become one."""
    return any(marker in text for marker in _MARKERS) or text.rstrip().endswith(_MARKER_PREFIXES)


def _complete(match: re.Match[str]) -> bool:
    return bool(match.group("self_close") or match.group("end"))


def _arguments(match: re.Match[str], strip_strings: bool) -> str:
    """A complete invoke's arguments JSON; ValueError (or RecursionError) when malformed."""
    if match.group("self_close"):
        return "{}"
    return parse_arguments(match.group("body"), strip_strings)


class DsmlDetector:
    """Feed emitted text as it streams; get content and completed calls back."""

    def __init__(self, strip_strings: bool = True) -> None:
        # No tool names: SGLang's streaming path emits calls with any name.
        self._strip_strings = strip_strings
        self._buffer = ""
        self._started = False  # a complete invoke has been seen: no more content
        self._next_index = 0

    def feed(self, text: str) -> Parsed:
        self._buffer += text
        if not _may_hold_markup(self._buffer):
            kept = self._buffer.rstrip()
            self._buffer = self._buffer[len(kept) :]  # maybe the blank line before a block
            return Parsed(kept)
        content = ""
        calls: list[ParsedCall] = []
        while (match := _INVOKE_RE.search(self._buffer)) is not None:
            if not _complete(match):
                break  # the invoke is still streaming in
            if not self._started:
                self._started = True
                start = match.start()
                opener = self._buffer.rfind(BLOCK_OPEN, 0, start)
                content = self._buffer[: opener if opener != -1 else start].removesuffix("\n\n")
            self._buffer = self._buffer[match.end() :]
            call = self._call(match)
            if call is not None:
                calls.append(call)
        return Parsed(content, tuple(calls))

    def finish(self) -> Parsed:
        """End of stream: without any complete invoke, the text before the markup."""
        rest, self._buffer = self._buffer, ""
        if not rest or self._started:
            return Parsed()
        return Parsed(_text_before_markup(rest))

    def _call(self, match: re.Match[str]) -> ParsedCall | None:
        try:
            arguments = _arguments(match, self._strip_strings)
        except (ValueError, RecursionError):
            return None  # fail closed: the invoke is dropped, the next one still counts
        call = ParsedCall(self._next_index, match.group("name").strip(), arguments)
        self._next_index += 1
        return call


def parse_completion(text: str, tool_names: Collection[str], strip_strings: bool = True) -> Parsed:
    """One-shot parse of a whole completion (SGLang's non-streaming path)."""
    opener = text.find(BLOCK_OPEN)
    if opener != -1:
        content = text[:opener].removesuffix("\n\n")
        sections = _BLOCK_RE.findall(text)
    else:
        bare = text.find(INVOKE_OPEN)
        if bare == -1:
            return Parsed(text)
        content, sections = _text_before_markup(text), [text[bare:]]
    calls: list[ParsedCall] = []
    for section in sections:
        for match in _INVOKE_RE.finditer(section):
            if not _complete(match):
                continue  # an unclosed invoke is dropped
            name = match.group("name").strip()
            try:
                arguments = _arguments(match, strip_strings)
                # SGLang re-serialises the arguments (a JSON body is normalised too).
                arguments = json.dumps(json.loads(arguments), ensure_ascii=False)
            except (ValueError, RecursionError):
                continue
            if name in tool_names:
                calls.append(ParsedCall(len(calls), name, arguments))
    return Parsed(content, tuple(calls))
