"""SGLang's response shapes: SSE chunks and the non-streaming body, from emitted tokens.

A `TurnRenderer` turns the token pieces the scheduler emits into what SGLang would send:
text before `</think>` as `reasoning_content` (reasoning parser on, thinking on,
separate_reasoning not false), tool calls parsed by the DSML detector (tool-call parser
on) as `tool_calls` deltas (id, type and name first, then argument fragments), raw text
otherwise; EOS is the stop token and never text. With a `LogprobModel` (the request asked
for `logprobs`), every chunk also carries its tokens' `logprobs.content`, whichever field
their text went to (a chunk of tokens the tool parser still holds back has an empty delta).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from repro.dsml.markers import EOS, THINK_CLOSE
from repro.sim.detector import DsmlDetector, Parsed, ParsedCall, parse_completion
from repro.sim.logprobs import LogprobModel

DONE = b"data: [DONE]\n\n"
EOS_TOKEN_ID = 1
ARGUMENT_FRAGMENT_CHARS = 64


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def error_body(message: str, status: int, kind: str = "BadRequestError") -> bytes:
    return orjson.dumps(
        {"object": "error", "message": message, "type": kind, "param": None, "code": status}
    )


class TurnRenderer:
    def __init__(
        self,
        rid: str,
        model: str,
        created: int,
        *,
        split_reasoning: bool,
        tool_names: frozenset[str] | None,
        scores: LogprobModel | None = None,
    ) -> None:
        self._rid = rid
        self._model = model
        self._created = created
        self._in_reasoning = split_reasoning
        self._tool_names = tool_names
        self._detector = DsmlDetector() if tool_names is not None else None
        self._raw_content: list[str] = []  # what the tool parser was fed, for the one-shot path
        self._call_prefix = "call_" + hashlib.blake2b(rid.encode(), digest_size=6).hexdigest()
        self.reasoning_parts: list[str] = []
        self.content_parts: list[str] = []
        self.calls: list[ParsedCall] = []
        self.raw_parts: list[str] = []
        self._scores = scores
        self._position = 0  # index of the next generated token
        self._pending_logprobs: list[dict[str, Any]] = []
        self.logprobs: list[dict[str, Any]] = []

    def call_id(self, index: int) -> str:
        return f"{self._call_prefix}{index:02d}"

    def feed(self, tokens: list[str]) -> tuple[str, str, tuple[ParsedCall, ...]]:
        """Reasoning text, content text and completed calls for these tokens."""
        reasoning: list[str] = []
        content: list[str] = []
        if self._scores is not None:
            scored = self._scores.entries(self._position, tokens)
            self._pending_logprobs += scored
            self.logprobs += scored
        self._position += len(tokens)
        for token in tokens:
            self.raw_parts.append(token)
            if token == EOS:
                continue
            if self._in_reasoning:
                if token == THINK_CLOSE:
                    self._in_reasoning = False
                else:
                    reasoning.append(token)
            else:
                content.append(token)
        text = "".join(content)
        self._raw_content.append(text)
        parsed = self._detector.feed(text) if self._detector and text else Parsed(text)
        return self._record("".join(reasoning), parsed)

    def finish(self) -> tuple[str, str, tuple[ParsedCall, ...]]:
        parsed = self._detector.finish() if self._detector else Parsed()
        return self._record("", parsed)

    def _record(self, reasoning: str, parsed: Parsed) -> tuple[str, str, tuple[ParsedCall, ...]]:
        if reasoning:
            self.reasoning_parts.append(reasoning)
        if parsed.content:
            self.content_parts.append(parsed.content)
        self.calls.extend(parsed.calls)
        return reasoning, parsed.content, parsed.calls

    def finish_reason(self, scheduler_reason: str | None) -> str:
        if scheduler_reason == "stop" and self.calls:
            return "tool_calls"
        return scheduler_reason or "stop"

    # --- streaming -------------------------------------------------------------------

    def chunk(
        self,
        delta: dict[str, Any],
        finish_reason: str | None = None,
        logprobs: list[dict[str, Any]] | None = None,
    ) -> bytes:
        matched = EOS_TOKEN_ID if finish_reason in ("stop", "tool_calls") else None
        return sse(
            {
                "id": self._rid,
                "object": "chat.completion.chunk",
                "created": self._created,
                "model": self._model,
                "choices": [
                    {
                        "index": 0,
                        "delta": delta,
                        "logprobs": {"content": logprobs} if logprobs else None,
                        "finish_reason": finish_reason,
                        "matched_stop": matched,
                    }
                ],
                "usage": None,
            }
        )

    def delta_events(
        self, reasoning: str, content: str, calls: tuple[ParsedCall, ...]
    ) -> list[bytes]:
        events: list[bytes] = []
        # The tokens' logprobs ride on the first event; alone when no text is released yet.
        logprobs, self._pending_logprobs = self._pending_logprobs, []
        if reasoning:
            delta = {"role": None, "content": None, "reasoning_content": reasoning}
            events.append(self.chunk(delta, logprobs=logprobs))
            logprobs = []
        if content:
            delta = {"role": None, "content": content, "reasoning_content": None}
            events.append(self.chunk(delta, logprobs=logprobs))
            logprobs = []
        for call in calls:
            head = {"id": self.call_id(call.index), "index": call.index, "type": "function"}
            head["function"] = {"name": call.name, "arguments": ""}
            events.append(self.chunk({"role": None, "content": None, "tool_calls": [head]}))
            for i in range(0, len(call.arguments), ARGUMENT_FRAGMENT_CHARS):
                fragment = call.arguments[i : i + ARGUMENT_FRAGMENT_CHARS]
                item = {"index": call.index, "function": {"arguments": fragment}}
                events.append(self.chunk({"role": None, "content": None, "tool_calls": [item]}))
        if logprobs:
            events.insert(0, self.chunk({}, logprobs=logprobs))
        return events

    def usage_event(self, usage: dict[str, Any]) -> bytes:
        payload = {
            "id": self._rid,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": [],
            "usage": usage,
        }
        return sse(payload)

    # --- non-streaming ---------------------------------------------------------------

    def body(self, finish_reason: str, usage: dict[str, Any]) -> bytes:
        content, calls = "".join(self.content_parts), self.calls
        if self._tool_names is not None:
            # SGLang parses a non-streamed answer in one go, which differs from its streaming
            # parser on broken markup (repro.sim.detector).
            whole = parse_completion("".join(self._raw_content), self._tool_names)
            content, calls = whole.content, list(whole.calls)
            if finish_reason in ("stop", "tool_calls"):
                finish_reason = "tool_calls" if calls else "stop"
        tool_calls = [
            {
                "id": self.call_id(c.index),
                "index": c.index,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
        message = {
            "role": "assistant",
            "content": content if content or not tool_calls else None,
            "reasoning_content": "".join(self.reasoning_parts) or None,
            "tool_calls": tool_calls or None,
        }
        matched = EOS_TOKEN_ID if finish_reason in ("stop", "tool_calls") else None
        return orjson.dumps(
            {
                "id": self._rid,
                "object": "chat.completion",
                "created": self._created,
                "model": self._model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": {"content": self.logprobs} if self._scores else None,
                        "finish_reason": finish_reason,
                        "matched_stop": matched,
                    }
                ],
                "usage": usage,
            }
        )


def usage_of(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }
