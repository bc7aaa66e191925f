"""OpenAI chat-completion SSE events: split a byte stream into events, read and edit a delta's text.

An event is one `data: {json}` block ended by a blank line. The text a checker judges sits in
`choices[0].delta`: `content`, or `tool_calls[i].function.arguments` when the server parses
calls. Reasoning is left alone: it is free text, so corruption there proves nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson

SEPARATOR = b"\n\n"
DATA = b"data:"


def split_events(buffer: bytearray) -> list[bytes]:
    """Remove and return every complete event (with its separator) from the front of `buffer`."""
    events = []
    while (end := buffer.find(SEPARATOR)) >= 0:
        events.append(bytes(buffer[: end + len(SEPARATOR)]))
        del buffer[: end + len(SEPARATOR)]
    return events


def parse(event: bytes) -> dict | None:
    """The JSON object of a `data:` event; None for `[DONE]`, comments and anything unparsable."""
    if not event.startswith(DATA):
        return None
    payload = event[len(DATA) :].strip()
    if not payload.startswith(b"{"):
        return None
    try:
        parsed = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def serialize(payload: dict) -> bytes:
    return DATA + b" " + orjson.dumps(payload) + SEPARATOR


@dataclass(frozen=True, slots=True)
class JudgedText:
    """Where the judged text of one event lives, and the text itself."""

    field: str  # "content" or "tool_calls[i].arguments"
    text: str


def _delta(payload: dict) -> dict | None:
    choices = payload.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return None
    delta = choices[0].get("delta")
    return delta if isinstance(delta, dict) else None


def _arguments(delta: dict) -> list[tuple[int, str]]:
    """Each tool call's index and argument text, skipping any of the wrong shape (an upstream
    may send anything, and a victim's events are read whatever they hold)."""
    calls = delta.get("tool_calls")
    if not isinstance(calls, list):
        return []
    found = []
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(arguments, str):
            found.append((index, arguments))
    return found


def judged_text(payload: dict) -> JudgedText | None:
    """The event's tool-call argument text, else its content; None if it carries neither."""
    delta = _delta(payload)
    if delta is None:
        return None
    for index, arguments in _arguments(delta):
        if arguments:
            return JudgedText(f"tool_calls[{index}].arguments", arguments)
    content = delta.get("content")
    if isinstance(content, str) and content:
        return JudgedText("content", content)
    return None


def any_text(payload: dict) -> str:
    """Every piece of text an event carries (content, reasoning, arguments): a splice donor's bytes."""
    delta = _delta(payload)
    if delta is None:
        return ""
    parts = [delta.get(key) for key in ("reasoning_content", "reasoning", "content")]
    parts += [arguments for _, arguments in _arguments(delta)]
    return "".join(p for p in parts if isinstance(p, str))


def replace_judged_text(payload: dict, where: JudgedText, edit: Callable[[str], str]) -> None:
    """Apply `edit` to the judged text in place."""
    delta = _delta(payload)
    assert delta is not None
    if where.field == "content":
        delta["content"] = edit(delta["content"])
        return
    index = int(where.field[len("tool_calls[") :].split("]", 1)[0])
    function = delta["tool_calls"][index]["function"]
    function["arguments"] = edit(function["arguments"])


def drop_later_text(payload: dict) -> bool:
    """After a cut: remove the event's judged text; True if anything else is left to send."""
    delta = _delta(payload)
    if delta is None:
        return True
    delta.pop("content", None)
    delta.pop("tool_calls", None)
    choice = payload["choices"][0]
    return bool(choice.get("finish_reason") or payload.get("usage") or any_text(payload))


def has_calls(payload: dict) -> bool:
    """Whether the event's first choice carries tool-call deltas."""
    delta = _delta(payload)
    return delta is not None and bool(delta.get("tool_calls"))


def finish_reason(payload: dict) -> str | None:
    """The first choice's finish_reason, if this event carries one."""
    choices = payload.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return None
    reason = choices[0].get("finish_reason")
    return reason if isinstance(reason, str) else None
