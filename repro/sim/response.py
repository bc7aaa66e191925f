"""SGLang's response shapes: SSE chunks and the non-streaming body, from emitted tokens.

A `TurnRenderer` turns the token pieces the scheduler emits into what SGLang would send:
text before `</think>` as `reasoning_content` (reasoning parser on, thinking on,
separate_reasoning not false), tool calls parsed by the tool-call parser (on: the DSML
detector, or the parser of the model's family, repro.sim.formats) as `tool_calls` deltas (id,
type and name first, then argument fragments), raw text otherwise; EOS is the stop token and
never text. The reasoning ends at the family's own token (`</think>`, Mistral's `[/THINK]`,
Harmony's analysis `<|end|>`); its opening marker and, for Harmony, the next message's role
are dropped by the reasoning parser. With a `LogprobModel` (the request asked
for `logprobs`), every chunk also carries its tokens' `logprobs.content`, whichever field
their text went to (a chunk of tokens the tool parser still holds back has an empty delta).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from repro.dsml.markers import EOS
from repro.sim.detector import Parsed, ParsedCall
from repro.sim.formats import DSML_FORMAT, ModelFormat, ToolParser
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
        index: int = 0,
        fmt: ModelFormat = DSML_FORMAT,
        parser: ToolParser | None = None,
        tools: Sequence[dict[str, Any]] = (),
        parser_bug: bool = False,
    ) -> None:
        self._rid = rid
        self._index = index  # which choice of the request (n > 1) this one renders
        self._model = model
        self._created = created
        self._in_reasoning = split_reasoning
        self._tool_names = tool_names
        self._fmt = fmt
        self._parser = parser or ToolParser(DSML_FORMAT.name)
        self._tools = tools
        self._parser_bug = parser_bug
        self._detector = self._parser.stream(tools) if tool_names is not None else None
        # The reasoning parser drops the family's opening marker, and (Harmony) the role that
        # opens the next message: tokens that may be one held back here until they are whole.
        self._opening: list[str] | None = [] if split_reasoning and fmt.think_open else None
        self._leading: list[str] | None = None
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
        think_close = self._fmt.think_close
        for token in tokens:
            self.raw_parts.append(token)
            if token == EOS:
                continue
            if self._in_reasoning:
                if token == think_close:
                    self._in_reasoning = False
                    reasoning += self._opening or ()
                    self._opening = None
                    self._leading = [] if self._fmt.content_lead else None
                elif self._opening is not None:
                    self._opening = self._held(
                        self._opening, token, self._fmt.think_open, reasoning
                    )
                else:
                    reasoning.append(token)
            elif self._leading is not None:
                self._leading = self._held(self._leading, token, self._fmt.content_lead, content)
            else:
                content.append(token)
        text = "".join(content)
        self._raw_content.append(text)
        parsed = self._detector.feed(text) if self._detector and text else Parsed(text)
        return self._record("".join(reasoning), parsed)

    @staticmethod
    def _held(pending: list[str], token: str, marker: str, out: list[str]) -> list[str] | None:
        """Hold tokens while they may still spell `marker` (after whitespace); drop them
        once they do (None: done), pass them on once they cannot."""
        pending.append(token)
        text = "".join(pending).lstrip()
        if text == marker:
            return None
        if marker.startswith(text):
            return pending
        out += pending
        return None

    def finish(self) -> tuple[str, str, tuple[ParsedCall, ...]]:
        held = "".join(self._opening or self._leading or ())
        self._opening = self._leading = None
        reasoning, first = "", Parsed()
        if held:  # the turn ended inside what might have been a marker: it is text
            if self._in_reasoning:
                reasoning = held
            else:
                self._raw_content.append(held)
                first = self._detector.feed(held) if self._detector else Parsed(held)
        last = self._detector.finish() if self._detector else Parsed()
        return self._record(
            reasoning, Parsed(first.content + last.content, first.calls + last.calls)
        )

    def _latched(self, calls: Sequence[ParsedCall]) -> tuple[ParsedCall, ...]:
        """The planted parser bug (a test switch): calls after the first are dropped."""
        return tuple(c for c in calls if c.index == 0) if self._parser_bug else tuple(calls)

    def _record(self, reasoning: str, parsed: Parsed) -> tuple[str, str, tuple[ParsedCall, ...]]:
        if reasoning:
            self.reasoning_parts.append(reasoning)
        if parsed.content:
            self.content_parts.append(parsed.content)
        calls = self._latched(parsed.calls)
        self.calls.extend(calls)
        return reasoning, parsed.content, calls

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
                        "index": self._index,
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
        return whole_body([self], [finish_reason], usage)

    def whole_choice(self, finish_reason: str) -> dict[str, Any]:
        """This choice of a non-streamed answer."""
        content, calls = "".join(self.content_parts), self.calls
        if self._tool_names is not None:
            # SGLang parses a non-streamed answer in one go, which differs from its streaming
            # parser on broken markup (repro.sim.detector).
            raw = "".join(self._raw_content)
            whole = self._parser.whole(raw, self._tools, self._tool_names)
            content, calls = whole.content, list(self._latched(whole.calls))
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
        return {
            "index": self._index,
            "message": message,
            "logprobs": {"content": self.logprobs} if self._scores else None,
            "finish_reason": finish_reason,
            "matched_stop": matched,
        }


def whole_body(renderers: list[TurnRenderer], reasons: list[str], usage: dict[str, Any]) -> bytes:
    """A non-streamed answer: one choice per renderer, their usage."""
    first = renderers[0]
    return orjson.dumps(
        {
            "id": first._rid,
            "object": "chat.completion",
            "created": first._created,
            "model": first._model,
            "choices": [r.whole_choice(why) for r, why in zip(renderers, reasons, strict=True)],
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
