"""The streaming client against scripted SSE bodies served on 127.0.0.1: outcomes and fields."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest

from repro.checkers.verdict import ToolCall
from repro.harness.load.chunk import decode_event
from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog
from repro.records.turn import TurnOutcome
from tests.unit.harness.scripted_server import Scripted, scripted_server

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


async def call(
    body: bytes | AsyncIterator[bytes], status: int = 200, idle_timeout_s: float = 5, **kwargs
) -> StreamProgress:
    async with scripted_server([(status, body)]) as url, running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, idle_timeout_s)
        progress = StreamProgress(scheduled_at_s=watchdog.clock.now())
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
    assert progress.usage.prompt_tokens == 1200 and progress.usage.completion_tokens == 42
    assert progress.chunks == 7 and progress.gap_stats().count == 6
    assert (
        progress.sent_at_s
        <= progress.first_token_at_s
        <= progress.last_token_at_s
        <= progress.ended_at_s
    )


CALL_PIECE = (
    b'{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": '
    b'{"name": "read_file", "arguments": %s}}]}}]}'
)


def test_a_turns_text_is_joined_once_and_still_grows() -> None:
    progress = StreamProgress(scheduled_at_s=0.0)
    assert progress.content_text() == "" and progress.reasoning_text() == ""
    progress.content += ["Read", "ing", "."]
    progress.reasoning += ["Let ", "me"]
    assert progress.content_text() == "Reading." and progress.reasoning_text() == "Let me"
    # Merged in place: the next reader joins nothing, and a later piece is still appended.
    assert progress.content == ["Reading."] and progress.reasoning == ["Let me"]
    progress.content.append(" Done.")
    assert progress.content_text() == "Reading. Done."
    for piece in ('{"path"', ': "a.py"}'):
        arguments = json.dumps(piece)
        progress.apply(decode_event(CALL_PIECE % arguments.encode()))
    assert progress.tool_calls() == (ToolCall("read_file", '{"path": "a.py"}'),)
    assert progress.calls[0].arguments == ['{"path": "a.py"}']


async def test_a_stream_cut_off_is_a_transport_error_not_a_turn() -> None:
    progress = await call(GOOD.split(b"data: [DONE]")[0])
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR
    assert "without [DONE]" in progress.error


async def test_a_stream_cut_inside_an_event_is_a_transport_error() -> None:
    # The last event never got its blank line: the connection ended it, not the server's JSON.
    progress = await call(sse(chunk(content="a")) + b'data: {"choices": [{"delta": {"con')
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR and "inside an event" in progress.error
    assert "".join(progress.content) == "a"


async def test_a_whole_event_that_is_not_json_is_a_protocol_error() -> None:
    progress = await call(sse(chunk(content="a"), '{\'error\': {"message": {"cut', "[DONE]"))
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR and "not valid JSON" in progress.error
    assert progress.bad_event == '{\'error\': {"message": {"cut'


async def test_events_without_blank_lines_between_them_still_count() -> None:
    body = b"".join(f"data: {json.dumps(chunk(content=c))}\n".encode() for c in "abc")
    progress = await call(body + b"data: [DONE]\n")
    assert progress.outcome is TurnOutcome.OK and "".join(progress.content) == "abc"


def choice(**fields) -> dict:
    return {"choices": [{"index": 0, **fields}]}


# Well-formed JSON, wrong shape: each one crashed repro or reached turns.parquet before.
HOSTILE_EVENTS = {
    "content an integer": (choice(delta={"content": 5}), "$.choices[0].delta.content"),
    "reasoning a list": (choice(delta={"reasoning_content": ["x"]}), "reasoning_content"),
    "delta a string": (choice(delta="hello"), "$.choices[0].delta"),
    "delta a list": (choice(delta=[{"content": "a"}]), "$.choices[0].delta"),
    "choices an object": ({"choices": {"0": {"delta": {}}}}, "$.choices"),
    "choices a string": ({"choices": "abc"}, "$.choices"),
    "a choice a number": ({"choices": [7]}, "$.choices[0]"),
    "finish_reason an integer": (choice(delta={}, finish_reason=1), "finish_reason"),
    "usage a string": ({"choices": [], "usage": "lots"}, "$.usage"),
    "prompt_tokens a string": ({"choices": [], "usage": {"prompt_tokens": "9"}}, "prompt_tokens"),
    "completion_tokens negative": ({"usage": {"completion_tokens": -3}}, "completion_tokens"),
    "prompt_tokens past int64": ({"usage": {"prompt_tokens": 2**70}}, "prompt_tokens"),
    "cached_tokens a float": (
        {"usage": {"prompt_tokens_details": {"cached_tokens": 1.5}}},
        "cached_tokens",
    ),
    "tool_calls an object": (choice(delta={"tool_calls": {"index": 0}}), "tool_calls"),
    "arguments an object": (
        choice(delta={"tool_calls": [{"index": 0, "function": {"arguments": {"a": 1}}}]}),
        "arguments",
    ),
    "tool name an integer": (
        choice(delta={"tool_calls": [{"index": 0, "function": {"name": 3}}]}),
        "name",
    ),
    "tool call index a string": (choice(delta={"tool_calls": [{"index": "0"}]}), "index"),
    "tool call id a list": (choice(delta={"tool_calls": [{"index": 0, "id": []}]}), "id"),
    "an array, not an object": ([chunk(content="a")], "Expected `object`, got `array`"),
    "a bare number": (42, "Expected `object`, got `int`"),
}


@pytest.mark.parametrize("name", HOSTILE_EVENTS)
async def test_an_event_of_the_wrong_shape_is_a_protocol_error_not_a_crash(name: str) -> None:
    event, where = HOSTILE_EVENTS[name]
    raw = json.dumps(event)
    progress = await call(sse(chunk(content="kept"), raw, chunk(content="never"), "[DONE]"))
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR, progress.error
    assert where in progress.error and "schema" in progress.error
    assert progress.bad_event == raw and progress.bad_event_chars == len(raw)
    assert "".join(progress.content) == "kept"  # what came before is still there


async def test_a_lone_surrogate_never_reaches_the_text() -> None:
    # Parquet (UTF-8) cannot hold one; it would have failed every later write of the turns.
    progress = await call(
        sse(chunk(content="a"), '{"choices": [{"delta": {"content": "\\ud800"}}]}')
    )
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR
    assert "".join(progress.content) == "a"


async def test_a_long_bad_event_is_kept_truncated() -> None:
    raw = json.dumps(choice(delta={"content": 1}, padding="x" * 10_000))
    progress = await call(sse(raw, "[DONE]"))
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR
    assert progress.bad_event == raw[:4096] and progress.bad_event_chars == len(raw)


async def test_unknown_fields_and_nulls_are_fine() -> None:
    events = [
        {"id": "x", "created": 1, "system_fingerprint": None, **chunk(content="a", extra=1)},
        {"choices": None, "usage": None},
        {"choices": [{"index": 0, "delta": None, "finish_reason": "stop", "logprobs": None}]},
        "[DONE]",
    ]
    progress = await call(sse(*events))
    assert progress.outcome is TurnOutcome.OK and progress.finish_reason == "stop"


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
    assert progress.ended_at_s - progress.sent_at_s >= 0.3  # ended by the deadline, not before


async def test_a_server_silent_past_the_idle_limit_is_a_stall() -> None:
    async def silent() -> AsyncIterator[bytes]:
        yield sse(chunk(content="partial"))
        await anyio.sleep(10)
        yield b"data: [DONE]\n\n"

    progress = await call(silent(), idle_timeout_s=0.4, deadline_s=30)
    assert progress.outcome is TurnOutcome.STALLED and "no data from the server" in progress.error
    assert progress.ended_at_s - progress.last_event_at_s >= 0.4  # cut after the idle limit


async def test_connection_refused_is_a_transport_error() -> None:
    async with running_watchdog() as watchdog:
        client = ChatClient("http://127.0.0.1:9", watchdog, 1)
        progress = StreamProgress(scheduled_at_s=0.0)
        await client.stream_chat(b"{}", progress, deadline_s=5)
        await client.aclose()
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR and "ConnectError" in progress.error


async def test_an_error_status_with_a_broken_event_stream_is_a_transport_error() -> None:
    body = b'data: {\'error\': {"message": {"code": 500, "detail": "cut'
    progress = await call(body, status=500)
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR and progress.http_status == 500
    assert "malformed event stream" in progress.error


async def test_a_whole_stream_in_one_read_is_assembled() -> None:
    # Head and 100 kB of events in one write: the header limit counts only the head.
    words = [f"w{i} " for i in range(800)]
    body = sse(*(chunk(content=w) for w in words), "[DONE]")
    progress = await call(body)
    assert progress.outcome is TurnOutcome.OK and "".join(progress.content) == "".join(words)
    assert progress.chunks == 800 and progress.gap_stats().count == 799


# Events of every shape StreamProgress.apply folds in.
MIXED = [
    chunk(role="assistant", reasoning_content="Let me "),
    chunk(reasoning_content="look.", content=""),
    chunk(content="Read", reasoning_content=""),
    chunk(content="ing", reasoning_content=" twice"),
    chunk(content=None),
    chunk(content=""),
    choice(delta={"content": " a"}, logprobs={"content": [{"token": " a", "logprob": -0.5}]}),
    choice(delta={"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}),
    choice(delta={"content": "."}, finish_reason="stop"),
    {"choices": [{"index": 0, "delta": {"content": "!"}}], "usage": {"completion_tokens": 9}},
]


async def test_an_event_per_read_is_folded_in_as_one_read_of_all_of_them() -> None:
    # Alone in its HTTP chunk, an event takes the read callback's short way (one whole event,
    # decoded from the body); several in one chunk are split first. Both must build one turn.
    async def one_per_chunk(events: list) -> AsyncIterator[bytes]:
        for event in events:
            yield sse(event)

    whole = await call(sse(*MIXED, "[DONE]"))
    apart = await call(one_per_chunk([*MIXED, "[DONE]"]))
    for progress in (whole, apart):
        assert progress.outcome is TurnOutcome.OK and progress.done
    assert "".join(apart.reasoning) == "Let me look. twice" == "".join(whole.reasoning)
    assert "".join(apart.content) == "Reading a.!" == "".join(whole.content)
    assert apart.chunks == 8 == whole.chunks
    assert apart.finish_reason == "stop" == whole.finish_reason
    assert apart.logprobs == [{"token": " a", "logprob": -0.5}] == whole.logprobs
    assert apart.usage.completion_tokens == 9 == whole.usage.completion_tokens
    assert apart.tool_calls() == whole.tool_calls() and apart.call_ids() == ("c",)

    error = {"object": "error", "message": "boom", "choices": [{"delta": {"content": "z"}}]}
    failed = await call(one_per_chunk([chunk(content="a"), error, chunk(content="b")]))
    assert failed.outcome is TurnOutcome.HTTP_ERROR and "boom" in failed.error
    assert "".join(failed.content) == "a"


async def test_an_endless_line_is_cut_as_a_protocol_error() -> None:
    async def endless() -> AsyncIterator[bytes]:
        yield sse(chunk(content="kept"))
        yield b'data: {"choices": [{"delta": {"content": "'
        for _ in range(40):
            yield b"x" * 65536  # 2.5 MB and no newline
        await anyio.sleep(10)

    progress = await call(endless())
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR and "an event passed" in progress.error
    assert "".join(progress.content) == "kept"


async def test_a_response_past_its_byte_cap_is_cut_as_a_protocol_error() -> None:
    async def flood() -> AsyncIterator[bytes]:
        while True:
            yield sse(*(chunk(content="y" * 100) for _ in range(100)))

    async with scripted_server([(200, flood())]) as url, running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, 5, max_response_bytes=200_000)
        progress = StreamProgress(scheduled_at_s=0.0)
        await client.stream_chat(b"{}", progress, deadline_s=5)
        await client.aclose()
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR and "200,000 bytes" in progress.error
    assert 0 < len("".join(progress.content)) <= 200_000


async def test_turns_share_one_kept_alive_connection() -> None:
    scripted = Scripted([(200, GOOD), (400, b'{"error": "no"}'), (200, GOOD)])
    async with scripted_server([], scripted) as url, running_watchdog() as watchdog:
        client = ChatClient(url + "/prefix", watchdog, 5)
        outcomes = []
        for _ in range(3):
            progress = StreamProgress(scheduled_at_s=0.0)
            await client.stream_chat(b'{"n": 1}', progress, deadline_s=5)
            outcomes.append(progress.outcome)
        await client.aclose()
    assert outcomes == [TurnOutcome.OK, TurnOutcome.HTTP_ERROR, TurnOutcome.OK]
    assert scripted.connections == 1
    assert scripted.requests == [("/prefix/v1/chat/completions", b'{"n": 1}')] * 3


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    scripted = Scripted([(200, GOOD)])
    async with scripted_server([], scripted) as url, running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, 5)
        first = StreamProgress(scheduled_at_s=0.0)
        await client.stream_chat(b"{}", first, deadline_s=5)
        for task in list(scripted.handlers):
            task.cancel()  # the server drops the idle connection
        await anyio.sleep(0.1)
        second = StreamProgress(scheduled_at_s=0.0)
        await client.stream_chat(b"{}", second, deadline_s=5)
        await client.aclose()
    assert first.outcome is second.outcome is TurnOutcome.OK and scripted.connections == 2
