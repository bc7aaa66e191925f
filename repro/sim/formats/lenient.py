"""Engine-style tool-call parsers for the families other than DSML, streaming and one-shot.

Like repro.sim.detector for DSML, these return what a serving engine's parser returns for a
completion: text is released as content while no call marker has come (trailing whitespace
and what could begin a marker held back); once one has, text waits for a complete call; the
first complete call releases the prose before the calls; every complete call is emitted with
its arguments as SGLang writes them (`json.dumps`, ensure_ascii off), a malformed one dropped
(fail closed); text after the first call is never content. At the end, with no call, the
prose before the first marker. One-shot (a non-streamed answer) is the same reading of the
whole text, less calls to tools the request did not declare.

Harmony (gpt-oss) is read message by message instead: the text of `final` messages and of
commentary preambles is content (their framing removed), `analysis` is never content, a
message addressed `to=functions.NAME` is a call, complete at `<|call|>` or at the end (the
stop token is trimmed by the server).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from repro.sim.detector import Parsed, ParsedCall
from repro.sim.formats.scanners import Scanner
from repro.sim.formats.typed import Schemas
from repro.toolformats import harmony as hm


def _arguments_json(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def _held_from(text: str, markers: tuple[str, ...]) -> int:
    """Where a tail of `text` that could still become a marker starts (len(text): none)."""
    cut = len(text)
    for marker in markers:
        for k in range(min(len(marker) - 1, len(text)), 0, -1):
            if text.endswith(marker[:k]):
                cut = min(cut, len(text) - k)
                break
    return cut


class FamilyDetector:
    """Feed emitted text as it streams; content and completed calls come back."""

    def __init__(self, scanner: Scanner, schemas: Schemas) -> None:
        self._scanner = scanner
        self._schemas = schemas
        self._buffer = ""
        self._pos = 0  # where the next call is looked for, once calls began
        self._started = False  # a complete call has been seen: no more content
        self._next_index = 0

    def _first_marker(self, text: str | None = None) -> int:
        """Where the first call marker is in `text` (the buffer by default); -1: none."""
        text = self._buffer if text is None else text
        found = [at for s in self._scanner.starts if (at := text.find(s)) != -1]
        return min(found, default=-1)

    def feed(self, text: str) -> Parsed:
        self._buffer += text
        return self._advance(final=False)

    def finish(self) -> Parsed:
        parsed = self._advance(final=True)
        rest, self._buffer = self._buffer, ""
        if self._started:
            return parsed
        at = self._first_marker(rest)
        return Parsed(rest if at == -1 else rest[:at].rstrip())

    def _advance(self, final: bool) -> Parsed:
        content = ""
        if not self._started:
            marker = self._first_marker()
            if marker == -1:
                if final:
                    return Parsed()  # finish() releases what is left
                held = _held_from(self._buffer, self._scanner.starts)
                kept = self._buffer[:held].rstrip()
                self._buffer = self._buffer[len(kept) :]
                return Parsed(kept)
            self._pos = marker
        calls: list[ParsedCall] = []
        while (
            found := self._scanner.next(self._buffer, self._pos, final, self._schemas)
        ) is not None:
            _, end, call = found
            if not self._started:
                self._started = True
                content = self._buffer[: self._first_marker()].rstrip()
            self._pos = end
            if call is not None:
                name, arguments = call
                calls.append(ParsedCall(self._next_index, name, _arguments_json(arguments)))
                self._next_index += 1
        if self._started:
            self._buffer, self._pos = self._buffer[self._pos :], 0
        return Parsed(content, tuple(calls))


# --- Harmony ----------------------------------------------------------------------------

_RECIPIENT = r" to=functions\.([^\s<]+)"
_HEADER = re.compile(
    rf"(?:{re.escape(hm.START)}{hm.ASSISTANT}(?:{_RECIPIENT})?)?"
    rf"{re.escape(hm.CHANNEL)}(\w+)(?:{_RECIPIENT})?\s*"
    rf"(?:{re.escape(hm.CONSTRAIN)}\w*)?{re.escape(hm.MESSAGE)}"
)
_ENDS = (hm.END, hm.CALL, hm.RETURN)


class HarmonyDetector:
    """gpt-oss's messages, read as an engine's Harmony parser reads them."""

    def __init__(self) -> None:
        self._buffer = ""
        self._channel: str | None = None  # inside a message body (None: a header is next)
        self._recipient: str | None = None
        self._done = False  # after <|call|> or <|return|>
        self._next_index = 0

    def feed(self, text: str) -> Parsed:
        self._buffer += text
        return self._advance(final=False)

    def finish(self) -> Parsed:
        return self._advance(final=True)

    def _advance(self, final: bool) -> Parsed:
        content: list[str] = []
        calls: list[ParsedCall] = []
        while self._buffer and not self._done:
            if self._channel is None:
                if not self._header(final, content):
                    break
                continue
            ends = [(at, m) for m in _ENDS if (at := self._buffer.find(m)) != -1]
            at, marker = min(ends, default=(-1, ""))
            if at == -1 and not final:
                if self._recipient is None and self._channel != "analysis":
                    held = _held_from(self._buffer, _ENDS)
                    content.append(self._buffer[:held])
                    self._buffer = self._buffer[held:]
                break
            body = self._buffer if at == -1 else self._buffer[:at]
            self._buffer = "" if at == -1 else self._buffer[at + len(marker) :]
            if self._recipient is not None:
                try:
                    value = json.loads(body)
                except (ValueError, RecursionError):
                    value = None
                if isinstance(value, dict):
                    call = ParsedCall(self._next_index, self._recipient, _arguments_json(value))
                    calls.append(call)
                    self._next_index += 1
            elif self._channel != "analysis":
                content.append(body)
            self._done = marker in (hm.CALL, hm.RETURN)
            self._channel = self._recipient = None
        return Parsed("".join(content), tuple(calls))

    def _header(self, final: bool, content: list[str]) -> bool:
        """Read the next message's header; False while it is incomplete (or all is read)."""
        m = _HEADER.match(self._buffer)
        if m is not None:
            self._channel = m.group(2)
            self._recipient = m.group(1) or m.group(3)
            self._buffer = self._buffer[m.end() :]
            return True
        message = self._buffer.find(hm.MESSAGE)
        if message == -1 and not final:
            return False  # still streaming in
        # Not a header: the text up to the next message is prose, as the engines pass it on.
        cut = len(self._buffer) if message == -1 else message + len(hm.MESSAGE)
        content.append(self._buffer[:cut])
        self._buffer = self._buffer[cut:]
        return bool(self._buffer)


def parse_whole(
    detector: FamilyDetector | HarmonyDetector, text: str, tool_names: Collection[str]
) -> Parsed:
    """One-shot: the whole text read at once, calls to undeclared tools dropped."""
    first, last = detector.feed(text), detector.finish()
    calls = [c for c in (*first.calls, *last.calls) if c.name in tool_names]
    renumbered = tuple(ParsedCall(i, c.name, c.arguments) for i, c in enumerate(calls))
    return Parsed(first.content + last.content, renumbered)
