"""A small SSE client for the engine tests: send one chat request, collect what came back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path", "limit"],
            },
        },
    }
]
MESSAGES = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "The test fails."},
]


def chat_body(stream: bool, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "messages": MESSAGES,
        "tools": TOOLS,
        "stream": stream,
        "chat_template_kwargs": {"thinking": True},
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body | extra


@dataclass
class Streamed:
    status: int
    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False

    def deltas(self) -> list[dict[str, Any]]:
        return [c["choices"][0]["delta"] for c in self.chunks if c.get("choices")]

    def text(self, key: str) -> str:
        return "".join(d.get(key) or "" for d in self.deltas())

    def finish_reason(self) -> str | None:
        reasons = [c["choices"][0]["finish_reason"] for c in self.chunks if c.get("choices")]
        return next((r for r in reasons if r), None)

    def usage(self) -> dict[str, Any] | None:
        return self.chunks[-1].get("usage") if self.chunks else None

    def calls(self) -> list[tuple[str, str]]:
        """(name, arguments) per tool call, assembled from the deltas."""
        calls: dict[int, list[str]] = {}
        for delta in self.deltas():
            for item in delta.get("tool_calls") or ():
                entry = calls.setdefault(item["index"], ["", ""])
                function = item.get("function") or {}
                entry[0] += function.get("name") or ""
                entry[1] += function.get("arguments") or ""
        return [(name, args) for name, args in calls.values()]


def stream_chat(client: httpx.Client, url: str, body: dict[str, Any]) -> Streamed:
    with client.stream(
        "POST", url + "/v1/chat/completions", content=orjson.dumps(body)
    ) as response:
        result = Streamed(response.status_code)
        if response.status_code != 200:
            response.read()
            return result
        for line in response.iter_lines():
            if line == "data: [DONE]":
                result.done = True
            elif line.startswith("data: "):
                result.chunks.append(orjson.loads(line[6:]))
    return result
