"""The recorder's reading of an answer: SSE deltas (content, reasoning, tool calls in pieces by
index, usage in a last chunk) and a whole JSON body become one assistant message."""

from __future__ import annotations

import orjson

from repro.record.answer import read_stream, read_whole


def sse(*payloads: dict) -> bytes:
    events = [b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads]
    return b"".join(events) + b"data: [DONE]\n\n"


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_stream_with_reasoning_and_two_calls_in_pieces() -> None:
    data = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "I will "}),
        chunk({"reasoning_content": "read."}),
        chunk({"tool_calls": [{"index": 0, "id": "c0", "type": "function",
                               "function": {"name": "read", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "c1", "function": {"name": "grep", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.py"}'}}]}),
        chunk({}, "tool_calls"),
        {"id": "x", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
    )  # fmt: skip
    # Split anywhere, even inside an event: the recorder joins the chunks before reading.
    read = read_stream(data[:37] + data[37:])
    assert read.message == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I will read.",
        "tool_calls": [
            {
                "id": "c0",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a.py"}'},
            },
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
        ],
    }
    assert read.finish_reason == "tool_calls"
    assert read.usage == {"prompt_tokens": 10, "completion_tokens": 5}


def test_a_stream_cut_short_keeps_what_came_and_noise_is_skipped() -> None:
    data = sse(chunk({"content": "Hel"}), chunk({"content": "lo"})) + b"data: {broken\n\n: ping\n\n"
    read = read_stream(data.replace(b"data: [DONE]\n\n", b""))
    assert read.message == {"role": "assistant", "content": "Hello"} and read.finish_reason is None
    assert read_stream(b"").message is None


def test_a_whole_answer() -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3}}  # fmt: skip
    read = read_whole(orjson.dumps(body))
    assert (read.message, read.finish_reason, read.usage) == (
        {"role": "assistant", "content": "hi"},
        "stop",
        {"prompt_tokens": 3},
    )
    assert read_whole(b"<html>").message is None and read_whole(b"[1]").message is None
