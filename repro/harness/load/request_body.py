"""The chat request every turn sends, built in one place so a replay can rebuild it byte for byte.

With the divergence or the stream oracle the body also asks for logprobs (a difference is
classed by them) and carries the run's seed; temperature is 0 either way, so a
batch-invariant engine must answer it the same under load and alone, streamed or not. A turn's
request shape (repro.shapes) adds its fields; without `--mix` the body is what it always was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from repro.shapes import BUDGET_TOKENS, Shape
from repro.spec import RunSpec

PLAIN = Shape()


def chat_body(
    spec: RunSpec,
    model: str,
    tools: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    shape: Shape = PLAIN,
) -> dict[str, Any]:
    thinking = shape.thinking(spec.thinking)
    kwargs: dict[str, Any] = {"thinking": spec.thinking}
    if thinking is not None:  # DeepSeek's templates read `thinking`, Qwen's `enable_thinking`
        kwargs = {"thinking": thinking, "enable_thinking": thinking}
    body: dict[str, Any] = {
        "model": model,
        # A copy: a scripted history appends to its list as it advances, and a body kept
        # for later (the replay's alone answer, a failure's record) must stay as it was sent.
        "messages": list(messages),
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": shape.max_tokens(spec.max_output_tokens),
        "chat_template_kwargs": kwargs,
        "separate_reasoning": True,
    }
    if shape.values:
        body |= shape.fields(tools)
        if shape["reasoning"] == "budget":
            body["thinking_token_budget"] = BUDGET_TOKENS
        if not shape.streamed:
            body = as_whole(body)
    if spec.compares_answers:
        body["seed"] = spec.seed
        if spec.top_logprobs:
            body |= {"logprobs": True, "top_logprobs": spec.top_logprobs}
    return body


def as_whole(body: dict[str, Any]) -> dict[str, Any]:
    """The same request with `stream: false` (no stream_options: vLLM refuses them then)."""
    whole = {k: v for k, v in body.items() if k != "stream_options"}
    whole["stream"] = False
    return whole


def as_streamed(body: dict[str, Any]) -> dict[str, Any]:
    """The same request streamed, with usage in its last chunk."""
    items = list(body.items())
    at = next((i for i, (k, _) in enumerate(items) if k == "stream"), len(items))
    items = [(k, v) for k, v in items if k not in ("stream", "stream_options")]
    items[at:at] = [("stream", True), ("stream_options", {"include_usage": True})]
    return dict(items)


def twin_of(body: dict[str, Any]) -> dict[str, Any]:
    """The stream oracle's twin: the same request the other way (streamed or whole)."""
    return as_whole(body) if body.get("stream") else as_streamed(body)


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
