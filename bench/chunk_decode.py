"""Decoding one SSE event: repro's msgspec schema against the alternatives, CPU per event.

    python bench/chunk_decode.py [--events 200000]

The schema (repro/harness/load/chunk.py) decodes and validates in one pass. The rows below it:
what the client did before (orjson, then walking dicts with no type checks), pydantic's
strict JSON validation of the same shape, and the standard library's json (no checks).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import timeit
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from repro.harness.load.chunk import decode_event

CONTENT = json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                      "model": "m", "choices": [{"index": 0, "delta": {"content": " token"},
                                                 "finish_reason": None, "logprobs": None}]})  # fmt: skip
TOOL_CALL = json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [
    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]},
     "finish_reason": None}]})  # fmt: skip


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True)


class PFunction(_Strict):
    name: str | None = None
    arguments: str | None = None


class PToolCall(_Strict):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: PFunction | None = None


class PDelta(_Strict):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[PToolCall] | None = None


class PChoice(_Strict):
    index: int = 0
    delta: PDelta | None = None
    finish_reason: str | None = None


class PUsage(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class PChunk(_Strict):
    choices: list[PChoice] | None = None
    usage: PUsage | None = None
    object: str | None = None
    error: Any = None


def before(data: str) -> None:
    """The client's code before the schema: orjson, then dict lookups, no type checks."""
    event = orjson.loads(data)
    if not isinstance(event, dict) or "error" in event:
        return
    choices = event.get("choices") or ()
    if choices:
        delta = choices[0].get("delta") or {}
        delta.get("reasoning_content"), delta.get("content")
        for call in delta.get("tool_calls") or ():
            (call.get("function") or {}).get("arguments")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    n = parser.parse_args().events
    decoders = {
        "msgspec schema, decode + validate (repro now)": decode_event,
        "orjson + dict walk, no validation (repro before)": before,
        "pydantic strict model_validate_json": PChunk.model_validate_json,
        "json.loads, no validation": json.loads,
    }
    print(f"`python bench/chunk_decode.py --events {n}`, load average {os.getloadavg()[0]:.2f}\n")
    print("| decoder | µs per content chunk | µs per tool-call chunk |")
    print("|---|---|---|")
    for name, decode in decoders.items():
        times = [
            min(timeit.repeat(functools.partial(decode, data), number=n, repeat=3)) / n * 1e6
            for data in (CONTENT, TOOL_CALL)
        ]
        print(f"| {name} | {times[0]:.2f} | {times[1]:.2f} |")


if __name__ == "__main__":
    main()
