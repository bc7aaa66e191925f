"""Requests (and the answers they got) as turn lines: what `repro record` writes as traffic
passes and what `repro trace import` writes from a request log.

A request body gives its messages, tools, model and sampling parameters; only the
parameters listed in SAMPLING are kept, so nothing else a client puts in a body (a user id,
metadata) reaches the trace. Headers never do. The messages are written from where they
differ from the session's previous request (`base`), so a trace grows with each
conversation, not with the square of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repro.traces.grouping import Assignment, SessionGrouper
from repro.traces.model import Message

SAMPLING = (
    "temperature", "top_p", "top_k", "min_p", "max_tokens", "max_completion_tokens", "n",
    "stop", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "logprobs",
    "top_logprobs", "tool_choice", "parallel_tool_calls", "response_format", "reasoning_effort",
    "chat_template_kwargs", "separate_reasoning", "thinking_token_budget", "stream",
)  # fmt: skip
REDACTED = "[redacted]"


class Redaction:
    """`--redact` rules: every match of each regular expression in message text (content,
    reasoning, tool-call arguments; requests and answers) becomes [redacted]."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.rules = [re.compile(p) for p in patterns]

    def __bool__(self) -> bool:
        return bool(self.rules)

    def text(self, text: str) -> str:
        for rule in self.rules:
            text = rule.sub(REDACTED, text)
        return text

    def message(self, message: Message) -> Message:
        if not self.rules:
            return message
        out = dict(message)
        for key in ("content", "reasoning_content", "reasoning"):
            value = out.get(key)
            if isinstance(value, str):
                out[key] = self.text(value)
            elif isinstance(value, list):
                out[key] = [self._part(p) for p in value]
        if isinstance(out.get("tool_calls"), list):
            out["tool_calls"] = [self._call(c) for c in out["tool_calls"]]
        return out

    def _part(self, part: Any) -> Any:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            return {**part, "text": self.text(part["text"])}
        return part

    def _call(self, call: Any) -> Any:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            return {**call, "function": {**function, "arguments": self.text(function["arguments"])}}
        return call


@dataclass(frozen=True, slots=True)
class Request:
    """What one chat request asked for, as the trace keeps it."""

    messages: list[Message]
    tools: list[Message]
    params: dict[str, Any]
    model: str | None


def request_of(body: Mapping[str, Any]) -> Request | None:
    """A chat-completions request body's parts; None if it is not one (no messages)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return None
    if not all(isinstance(m, dict) for m in messages):
        return None
    tools = body.get("tools")
    if not isinstance(tools, list):
        tools = _legacy_functions(body.get("functions"))
    params = {k: body[k] for k in SAMPLING if k in body}
    model = body.get("model")
    return Request(messages, tools, params, model if isinstance(model, str) else None)


def _legacy_functions(functions: Any) -> list[Message]:
    if not isinstance(functions, list):
        return []
    return [{"type": "function", "function": f} for f in functions if isinstance(f, dict)]


@dataclass(frozen=True, slots=True)
class Answer:
    """The engine's answer to one request, as far as it came."""

    message: Message | None  # the assistant message (None: nothing usable came back)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    status: int | None = None
    error: str | None = None
    at: float | None = None  # when the request arrived, seconds since the epoch
    ttft_s: float | None = None
    duration_s: float | None = None


class TurnLines:
    """Builds turn lines: `start` a request when it comes, `line` once its answer is in."""

    def __init__(self, grouper: SessionGrouper, redaction: Redaction | None = None) -> None:
        self.grouper = grouper
        self.redaction = redaction or Redaction(())
        self.turns = 0

    def start(self, request: Request, arrived_s: float | None = None) -> Assignment:
        """The request's session and turn (`arrived_s`: when it came, on a monotonic clock)."""
        return self.grouper.assign(request.messages, request.tools, arrived_s)

    def line(
        self, request: Request, where: Assignment, answer: Answer, ended_s: float | None = None
    ) -> dict[str, Any]:
        """The turn's line; the session may take its next request from `ended_s` on."""
        self.grouper.done(where.session, ended_s)
        self.turns += 1
        redact = self.redaction.message
        line: dict[str, Any] = {"session": where.session, "turn": where.turn}
        if where.turn:
            line["base"] = where.base
        line["messages"] = [redact(m) for m in request.messages[where.base :]]
        if where.tools_changed:
            line["tools"] = request.tools
        if request.params:
            line["params"] = request.params
        if request.model is not None:
            line["model"] = request.model
        line["response"] = redact(answer.message) if answer.message is not None else None
        optional = {
            "finish_reason": answer.finish_reason,
            "usage": answer.usage,
            "status": answer.status,
            "error": answer.error,
            "at": answer.at,
            "ttft_s": answer.ttft_s,
            "duration_s": answer.duration_s,
        }
        line |= {k: v for k, v in optional.items() if v is not None}
        return line
