"""A trace session's context against `--context-max`: where it is cut, and how it is stretched.

Sizes are estimated from the text as scripted history estimates them (about four characters
a token, repro.scenarios.scripted): a pure function of the trace, so a request can be
rebuilt byte for byte for the divergence oracle's replay.

- Cut: a session ends before the first request whose estimate passes `--context-max` (its
  first request is always sent).
- Stretch (`trace-stretched:FILE`): a session whose last request falls short of
  `--context-max` has each of its tool results repeated k times (k the largest that keeps
  the last request within the ceiling), so a short recording grows to long contexts with
  its own content.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from repro.scenarios.scripted import CHARS_PER_TOKEN, estimate_tokens
from repro.traces import Message, TraceSession

REPEAT_JOINER = "\n\n"


def tools_tokens(tools: Sequence[Message]) -> int:
    return len(orjson.dumps(tools)) // CHARS_PER_TOKEN if tools else 0


def _tool_chars(messages: Sequence[Message]) -> int:
    return sum(len(m["content"]) for m in messages if _repeatable(m))


def _repeatable(message: Message) -> bool:
    return message.get("role") == "tool" and isinstance(message.get("content"), str)


class Sizing:
    """How one trace session is sized: its repeat factor and its cut."""

    def __init__(self, session: TraceSession, context_max_tokens: int, stretch: bool) -> None:
        self.session = session
        self.context_max_tokens = context_max_tokens
        self.repeat = 1
        last = session.turns[-1]
        if stretch:
            final = self.prompt_tokens(last.messages, last.tools)
            tool_tokens = _tool_chars(last.messages) // CHARS_PER_TOKEN
            if tool_tokens and final < context_max_tokens:
                fixed = final - tool_tokens
                self.repeat = max(1, (context_max_tokens - fixed) // tool_tokens)
        self._stretched: dict[int, Message] = {}  # by id() of the trace's message (kept alive)

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Message]) -> int:
        return tools_tokens(tools) + estimate_tokens(messages)

    def message(self, message: Message) -> Message:
        """The message as sent: a tool result repeated `repeat` times (the same object for
        the same trace message, so a request is rebuilt alike every time)."""
        if self.repeat == 1 or not _repeatable(message):
            return message
        known = self._stretched.get(id(message))
        if known is None:
            text = REPEAT_JOINER.join([message["content"]] * self.repeat)
            known = {**message, "content": text}
            self._stretched[id(message)] = known
        return known

    def messages(self, messages: Sequence[Message]) -> list[Message]:
        return [self.message(m) for m in messages]

    def turns_within(self) -> int:
        """How many of the session's requests are sent: up to the first past the ceiling."""
        for k, turn in enumerate(self.session.turns):
            if k and self.prompt_tokens(self.messages(turn.messages), turn.tools) > (
                self.context_max_tokens
            ):
                return k
        return len(self.session.turns)
