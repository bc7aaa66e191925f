"""What a scenario is: tools, a session's tool simulator and oracle, and the agent's script.

A scenario has two halves that must agree on the text they exchange:
- the client half (`Scenario`, `Session`) opens each conversation, answers every tool
  call with a deterministic result sized to grow the context, and judges each call
  against what this session was shown (the semantic oracle);
- the model half (`Script`) is what the embedded engine's scripted agent follows: a
  pure function from the conversation so far to the next assistant turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from repro.checkers.verdict import Defect, ToolCall

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedTurn:
    """The next assistant turn as the scripted agent means it, before encoding."""

    reasoning: str
    content: str = ""
    calls: tuple[PlannedCall, ...] = ()


class Script(Protocol):
    """The model half: the next turn from the conversation (OpenAI messages, tools)."""

    def __call__(self, messages: Sequence[Message], tools: Sequence[Message]) -> PlannedTurn: ...


class Session(Protocol):
    """The client half of one conversation; it remembers what the session was shown."""

    tools: list[Message]  # the OpenAI `tools` list the session's next request carries

    def opening(self) -> list[Message]:
        """The first messages: system prompt and the task."""
        ...

    def respond(
        self,
        calls: Sequence[ToolCall],
        call_ids: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> list[Message]:
        """One `tool` message per call, sized so the next prompt lands on the schedule."""
        ...

    def retry_notice(self) -> Message:
        """The user message an agent framework sends when a reply had no usable call."""
        ...

    def follow_up(self) -> list[Message]:
        """After a clean answer without calls: the user's next messages, if the conversation
        goes on (a recorded chat), else nothing and the session ends (the agent's answer)."""
        ...

    def semantic_defects(self, calls: Sequence[ToolCall], answer: str = "") -> list[Defect]:
        """Calls that name paths, symbols or lines this session was never shown; without
        calls, an `answer` (the turn's free text) that names tests or paths never shown."""
        ...

    def finished(self, prompt_tokens: int) -> bool:
        """True once the session has reached its target context or finished its task."""
        ...


class Plan(Protocol):
    """Scripted history: the conversation the scenario plans, whatever the model answers.

    `messages` is the next request's history, one list changed in place by `advance`;
    `step` counts the planned assistant turns so far (request number `step` of the session).
    """

    session: Session
    messages: list[Message]
    step: int

    def advance(self) -> bool:
        """Move to the next planned request; False when the plan ends."""
        ...


class Scenario(Protocol):
    name: str

    def tools(self) -> list[Message]:
        """The OpenAI `tools` list requests carry (a session's own: `Session.tools`)."""
        ...

    def session(self, session_id: int, seed: int, context_max_tokens: int) -> Session: ...

    def scripted(
        self, session_id: int, seed: int, context_max_tokens: int, thinking: bool
    ) -> Plan: ...
