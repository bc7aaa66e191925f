"""What the consistency checks read: an answer as the client received it, and what its request
asked for. The harness builds both (harness.load); the checks never see a socket."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from repro.checkers.verdict import ToolCall


@dataclass(frozen=True, slots=True)
class ServedCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ServedChoice:
    """One choice of an answer, whole: its texts, its calls, why it ended, its logprobs."""

    index: int
    content: str
    reasoning: str
    calls: tuple[ServedCall, ...]
    finish_reason: str | None
    logprobs: tuple[dict, ...] = ()  # `logprobs.content` items, as sent

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.name, c.arguments) for c in self.calls)


@dataclass(frozen=True, slots=True)
class ServedAnswer:
    """A whole answer: every choice, the usage it reported and, streamed, what broke the
    stream's own order (`anomalies`: (rule, what happened), noted as the events came)."""

    streamed: bool
    choices: tuple[ServedChoice, ...]
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    usage_events: int = 0
    anomalies: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Asked:
    """What the request asked for, as far as the checks need it."""

    max_tokens: int
    n: int = 1
    tool_choice: str = "auto"  # auto, required, named, none
    named_tool: str = ""
    response_format: str = "text"  # text, json_object, json_schema
    schema: dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    stop: tuple[str, ...] = ()
    streamed: bool = True
    include_usage: bool = True  # a streamed request asked for the usage chunk
    window_tokens: int | None = None  # the model's context window, when the server said it
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def forces_call(self) -> bool:
        return self.tool_choice in ("required", "named")
