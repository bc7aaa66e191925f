"""The streaming client against scripted SSE bodies (httpx.MockTransport): outcomes and fields."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from repro.harness.client import ChatClient, RunClock, StreamProgress
from repro.harness.turn import TurnOutcome

pytestmark = pytest.mark.anyio


def sse(*events: dict | str) -> bytes:
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    return "".join(lines).encode()


def chunk(**delta) -> dict:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


GOOD = sse(
    chunk(role="assistant", reasoning_content="Let me "),
    chunk(reasoning_content="look."),
    chunk(content="Reading."),
    chunk(
        tool_calls=[
            {
                "index": 0,
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_file", "arguments": ""},
            }
        ]
    ),
    chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"path": "a.py",'}}]),
    chunk(tool_calls=[{"index": 0, "function": {"arguments": ' "start_line": 3}'}}]),
    chunk(
        tool_calls=[
            {
                "index": 1,
                "id": "call_b",
                "type": "function",
                "function": {"name": "run_tests", "arguments": '{"target": "t"}'},
            }
        ]
    ),
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {
        "choices": [],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 42, "total_tokens": 1242},
    },
    "[DONE]",
)


async def call(body: bytes | AsyncIterator[bytes], status: int = 200, **kwargs) -> StreamProgress:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})

    clock = RunClock()
    client = ChatClient(
        "http://engine", clock, read_timeout_s=5, transport=httpx.MockTransport(handler)
    )
    progress = StreamProgress(scheduled_at_s=clock.now())
    try:
        await client.stream_chat(
            b"{}", progress, deadline_s=kwargs.pop("deadline_s", 5.0), **kwargs
        )
    finally:
        await client.aclose()
    return progress


async def test_a_complete_stream_is_assembled() -> None:
    progress = await call(GOOD)
    assert progress.outcome is TurnOutcome.OK and progress.done
    assert "".join(progress.reasoning) == "Let me look." and "".join(progress.content) == "Reading."
    calls = progress.tool_calls()
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("read_file", {"path": "a.py", "start_line": 3}),
        ("run_tests", {"target": "t"}),
    ]
    assert progress.call_ids() == ("call_a", "call_b")
    assert progress.finish_reason == "tool_calls"
    assert progress.usage["prompt_tokens"] == 1200
    assert progress.chunks == 7 and len(progress.gaps_s) == 6
    assert (
        progress.sent_at_s
        <= progress.first_token_at_s
        <= progress.last_token_at_s
        <= progress.ended_at_s
    )


async def test_a_stream_cut_off_is_a_transport_error_not_a_turn() -> None:
    progress = await call(GOOD.split(b"data: [DONE]")[0])
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR
    assert "without [DONE]" in progress.error


async def test_malformed_sse_is_a_transport_error() -> None:
    progress = await call(sse(chunk(content="a"), '{\'error\': {"message": {"cut'))
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR and "malformed SSE" in progress.error


async def test_http_error_keeps_the_status_and_body() -> None:
    progress = await call(b'{"error": "context too long"}', status=400)
    assert progress.outcome is TurnOutcome.HTTP_ERROR and progress.http_status == 400
    assert "context too long" in progress.error


async def test_error_event_inside_the_stream() -> None:
    progress = await call(sse(chunk(content="a"), {"object": "error", "message": "boom"}, "[DONE]"))
    assert progress.outcome is TurnOutcome.HTTP_ERROR and "boom" in progress.error
    assert "".join(progress.content) == "a"


async def test_abort_after_chunks_closes_the_stream() -> None:
    progress = await call(GOOD, abort_after_chunks=2)
    assert progress.outcome is TurnOutcome.ABORTED and progress.chunks == 2


async def test_whole_turn_deadline_keeps_partial_text() -> None:
    async def drip() -> AsyncIterator[bytes]:
        yield sse(chunk(content="partial"))
        await anyio.sleep(10)
        yield b"data: [DONE]\n\n"

    progress = await call(drip(), deadline_s=0.3)
    assert progress.outcome is TurnOutcome.TIMEOUT and "".join(progress.content) == "partial"
    assert progress.ended_at_s - progress.sent_at_s < 2


async def test_connection_refused_is_a_transport_error() -> None:
    clock = RunClock()
    client = ChatClient("http://127.0.0.1:9", clock, read_timeout_s=1)
    progress = StreamProgress(scheduled_at_s=0.0)
    await client.stream_chat(b"{}", progress, deadline_s=5)
    await client.aclose()
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR and "ConnectError" in progress.error


async def test_an_error_status_with_a_broken_event_stream_is_a_transport_error() -> None:
    body = b'data: {\'error\': {"message": {"code": 500, "detail": "cut'
    progress = await call(body, status=500)
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR and progress.http_status == 500
    assert "malformed event stream" in progress.error
