"""The chat request every turn sends, built in one place so a replay can rebuild it byte for byte.

With the divergence oracle the body also asks for logprobs (the first divergence is classed
by them) and carries the run's seed; temperature is 0 either way, so a batch-invariant
engine must answer it the same under load and alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from repro.spec import RunSpec


def chat_body(
    spec: RunSpec, model: str, tools: Sequence[dict[str, Any]], messages: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": spec.max_output_tokens,
        "chat_template_kwargs": {"thinking": spec.thinking},
        "separate_reasoning": True,
    }
    if spec.judges_divergence:
        body["seed"] = spec.seed
        if spec.top_logprobs:
            body |= {"logprobs": True, "top_logprobs": spec.top_logprobs}
    return body


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
