"""Every answer shape a server can give is used or named: raw HTTP answers on 127.0.0.1.

Interim 1xx answers, line ends of CR LF or CR alone, 200 answers that are not event streams
(a whole JSON completion, an HTML page, a compressed body nobody asked for), nesting deeper
than the decoder goes, and liveness by tokens (keep-alive comments reset nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog
from repro.records.turn import TurnOutcome

pytestmark = pytest.mark.anyio

Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]


def event(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode()


TEXT = event({"choices": [{"index": 0, "delta": {"content": "Done."}}]})
STOP = event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


def raw(data: bytes) -> Answer:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(data)

    return answer


def head(status: str = "200 OK", *fields: str) -> bytes:
    final = [] if status.startswith("1") else ["connection: close"]
    lines = [f"HTTP/1.1 {status}", *fields, *final, "", ""]
    return "\r\n".join(lines).encode()


SSE = "content-type: text/event-stream"


@contextlib.asynccontextmanager
async def raw_server(answer: Answer) -> AsyncIterator[str]:
    handlers: set[asyncio.Task] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in request.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            await answer(writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            handlers.discard(task)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with server:
            yield f"http://127.0.0.1:{port}"
    finally:
        for task in list(handlers):  # an answer still writing (the keep-alive one)
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


async def call(answer: Answer, idle_timeout_s: float = 5, deadline_s: float = 5) -> StreamProgress:
    async with raw_server(answer) as url, running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, idle_timeout_s)
        progress = StreamProgress(scheduled_at_s=watchdog.clock.now())
        try:
            await client.stream_chat(b"{}", progress, deadline_s=deadline_s)
        finally:
            await client.aclose()
    return progress


@pytest.mark.parametrize("interim", ["100 Continue", "103 Early Hints"])
async def test_an_interim_answer_is_skipped_and_the_final_one_read(interim: str) -> None:
    stream = TEXT + b"\n\n" + STOP + b"\n\ndata: [DONE]\n\n"
    progress = await call(raw(head(interim, "link: </a>") + head("200 OK", SSE) + stream))
    assert progress.outcome is TurnOutcome.OK and progress.http_status == 200
    assert progress.content_text() == "Done." and progress.finish_reason == "stop"


@pytest.mark.parametrize("end", [b"\r\n", b"\r"])
async def test_lines_ended_by_cr_lf_or_cr_alone_are_events(end: bytes) -> None:
    stream = end.join([TEXT, b"", b": keep-alive", STOP, b"", b"data: [DONE]", b"", b""])
    progress = await call(raw(head("200 OK", SSE) + stream))
    assert progress.outcome is TurnOutcome.OK and progress.done
    assert progress.content_text() == "Done." and progress.finish_reason == "stop"


COMPLETION = json.dumps(
    {"object": "chat.completion", "choices": [{"message": {"content": "Done."}}]}
).encode()


@pytest.mark.parametrize(
    ("fields", "body", "kind", "said"),
    [
        (["content-type: application/json"], COMPLETION, "not_event_stream",
         "a whole JSON completion (the server ignored `stream: true`)"),
        (["content-type: text/html; charset=utf-8"], b"<html><body>Bad gateway</body></html>",
         "not_event_stream", "an HTML page"),
        ([SSE, "content-encoding: gzip"], gzip.compress(TEXT + b"\n\n"), "compressed",
         "content-encoding: gzip"),
        ([], b"<html>no content type</html>", "not_event_stream", "not an event stream"),
    ],
)  # fmt: skip
async def test_a_200_that_is_not_an_event_stream_is_named_with_its_start_kept(
    fields: list[str], body: bytes, kind: str, said: str
) -> None:
    progress = await call(raw(head("200 OK", *fields) + body))
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR and said in progress.error
    assert progress.protocol_kind == kind
    assert "cut off" not in progress.error  # not mistaken for a stream cut inside an event
    if kind == "not_event_stream":
        assert progress.bad_event.startswith(body[:20].decode())


async def test_an_event_nested_past_the_decoders_depth_is_a_protocol_error_kept() -> None:
    deep = b'data: {"choices": [{"logprobs": ' + b"[" * 50_000 + b"]" * 50_000 + b"}]}\n\n"
    progress = await call(raw(head("200 OK", SSE) + deep))
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR and progress.protocol_kind == "too_deep"
    assert progress.bad_event.startswith('{"choices"') and progress.bad_event_chars > 100_000


async def test_keep_alive_comments_alone_are_a_stall_after_the_idle_limit() -> None:
    """A server that sends only comments is not alive: the idle limit (not the whole-turn
    deadline) ends the turn, whatever bytes keep coming."""

    async def comments(writer: asyncio.StreamWriter) -> None:
        writer.write(head("200 OK", SSE) + TEXT + b"\n\n")
        for _ in range(100):
            writer.write(b": keep-alive\n\n")
            await writer.drain()
            await asyncio.sleep(0.05)

    progress = await call(comments, idle_timeout_s=0.6, deadline_s=30)
    assert progress.outcome is TurnOutcome.STALLED, progress.error
    assert progress.ended_at_s - progress.sent_at_s < 3  # the idle limit, not the deadline
    assert progress.content_text() == "Done."
