"""An engine's answer, as the recorder saw its bytes, made one assistant message again.

A streamed answer is SSE: `data: {chunk}` events whose first choice carries deltas of the
content, the reasoning and the tool calls (each call's id and name first, its arguments in
pieces, by `index`), a finish reason, and usage in a last chunk. A whole answer is one JSON
body. Anything unreadable leaves what was read so far; only the first choice is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from repro.traces import Message


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class Reassembly:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    events: int = 0

    def message(self) -> Message | None:
        if not self.events:
            return None
        message: Message = {"role": "assistant", "content": "".join(self.content) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c.id or f"call_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": "".join(c.arguments)},
                }
                for i, c in sorted(self.calls.items())
            ]
        return message

    def event(self, payload: dict[str, Any]) -> None:
        self.events += 1
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = payload.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            return
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        for key, into in (("content", self.content), ("reasoning_content", self.reasoning),
                          ("reasoning", self.reasoning)):  # fmt: skip
            if isinstance(piece := delta.get(key), str):
                into.append(piece)
        for position, call in enumerate(delta.get("tool_calls") or ()):
            if isinstance(call, dict):
                self._call_delta(position, call)

    def _call_delta(self, position: int, call: dict[str, Any]) -> None:
        index = call.get("index", position)
        one = self.calls.setdefault(index if isinstance(index, int) else position, _Call())
        if isinstance(call.get("id"), str) and not one.id:
            one.id = call["id"]
        function = call.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str) and not one.name:
                one.name = function["name"]
            if isinstance(function.get("arguments"), str):
                one.arguments.append(function["arguments"])


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    message: Message | None
    finish_reason: str | None
    usage: dict[str, Any] | None


def read_stream(data: bytes) -> ReadAnswer:
    """A streamed (SSE) answer's message, finish reason and usage."""
    built = Reassembly()
    for event in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        for row in event.split(b"\n"):
            if not row.startswith(b"data:"):
                continue
            payload = row[5:].strip()
            if not payload.startswith(b"{"):
                continue  # [DONE]
            try:
                parsed = orjson.loads(payload)
            except orjson.JSONDecodeError:
                continue
            if isinstance(parsed, dict):
                built.event(parsed)
    return ReadAnswer(built.message(), built.finish_reason, built.usage)


def read_whole(data: bytes) -> ReadAnswer:
    """A whole (non-streamed) chat completion's message, finish reason and usage."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return ReadAnswer(None, None, None)
    if not isinstance(body, dict):
        return ReadAnswer(None, None, None)
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    usage = body.get("usage")
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    return ReadAnswer(
        message if isinstance(message, dict) else None,
        finish if isinstance(finish, str) else None,
        usage if isinstance(usage, dict) else None,
    )
