"""A chat-completions request as the engine reads it (OpenAI schema plus SGLang's extras)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson


class BadRequest(ValueError):
    """The request cannot be served as sent (HTTP 400, SGLang's error shape)."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    rid: str
    model: str | None
    stream: bool
    include_usage: bool
    max_tokens: int | None
    thinking: bool
    separate_reasoning: bool
    tool_choice: Any
    bootstrap_host: str | None
    bootstrap_port: int | None
    bootstrap_room: int | None
    logprobs: bool = False
    top_logprobs: int = 0
    n: int = 1
    stop: tuple[str, ...] = ()
    response_format: str = "text"  # text, json_object, json_schema
    parallel_tool_calls: bool = True

    @classmethod
    def from_body(cls, body: bytes) -> ChatRequest:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"Request body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest("Request body must be a JSON object.")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list.")
        tools = data.get("tools") or []
        if not isinstance(tools, list):
            raise BadRequest("'tools' must be a list.")
        max_tokens = data.get("max_completion_tokens", data.get("max_tokens"))
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise BadRequest("'max_tokens' must be a positive integer.")
        logprobs, top_logprobs = _logprobs(data)
        kwargs = data.get("chat_template_kwargs") or {}
        stream_options = data.get("stream_options") or {}
        room = data.get("bootstrap_room")
        port = data.get("bootstrap_port")
        n = data.get("n", 1)
        if n is None:
            n = 1
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_N:
            raise BadRequest(f"'n' must be an integer from 1 to {MAX_N}.")
        return cls(
            messages=messages,
            tools=tools if data.get("tool_choice") != "none" else [],
            rid=str(data.get("rid") or f"chatcmpl-{uuid.uuid4().hex}"),
            model=data.get("model"),
            stream=bool(data.get("stream", False)),
            include_usage=bool(stream_options.get("include_usage", False)),
            max_tokens=max_tokens,
            thinking=bool(kwargs.get("thinking", kwargs.get("enable_thinking", False))),
            separate_reasoning=data.get("separate_reasoning", True) is not False,
            tool_choice=data.get("tool_choice"),
            bootstrap_host=data.get("bootstrap_host"),
            bootstrap_port=int(port) if port is not None else None,
            bootstrap_room=int(room) if room is not None else None,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            n=n,
            stop=_stop(data.get("stop")),
            response_format=_response_format(data.get("response_format")),
            parallel_tool_calls=data.get("parallel_tool_calls", True) is not False,
        )

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(t.get("function", {}).get("name", "") for t in self.tools)


MAX_TOP_LOGPROBS = 20  # OpenAI's limit
MAX_N = 16
MAX_STOP = 4  # OpenAI's limit on stop sequences


def _stop(stop: Any) -> tuple[str, ...]:
    if stop is None:
        return ()
    items = [stop] if isinstance(stop, str) else stop
    if (
        not isinstance(items, list)
        or len(items) > MAX_STOP
        or not all(isinstance(s, str) for s in items)
    ):
        raise BadRequest(f"'stop' must be a string or a list of at most {MAX_STOP} strings.")
    return tuple(s for s in items if s)


def _response_format(value: Any) -> str:
    if value is None:
        return "text"
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise BadRequest("'response_format.type' must be text, json_object or json_schema.")
    if kind == "json_schema" and not isinstance(value.get("json_schema"), dict):
        raise BadRequest("'response_format.json_schema' must be given for type json_schema.")
    return kind


def _logprobs(data: dict[str, Any]) -> tuple[bool, int]:
    """`logprobs` and `top_logprobs` as OpenAI checks them (top_logprobs needs logprobs)."""
    wanted = data.get("logprobs") or False
    top = data.get("top_logprobs")
    if not isinstance(wanted, bool):
        raise BadRequest("'logprobs' must be a boolean.")
    if top is None:
        return wanted, 0
    if not isinstance(top, int) or isinstance(top, bool) or not 0 <= top <= MAX_TOP_LOGPROBS:
        raise BadRequest(f"'top_logprobs' must be an integer from 0 to {MAX_TOP_LOGPROBS}.")
    if top and not wanted:
        raise BadRequest("'top_logprobs' needs 'logprobs' set to true.")
    return wanted, top
