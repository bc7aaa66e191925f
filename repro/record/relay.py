"""The recorder's forwarding: each client connection relayed byte for byte to a connection of
its own to the upstream, both directions watched, never held.

`repro proxy` forwards through an HTTP stack (starlette, httpx), which it needs to rewrite
events; its cost per streamed chunk and per request put about 100 ms on the median time to
first token at 80 sessions on two cores (bench/HISTORY.md, "What recording adds"). The
recorder rewrites nothing, so it relays bytes: whatever arrives from one side is written to
the other at once, and a copy goes through httptools' parsers, which find each request (its
method, path and, for a chat completion, its body) and each answer (status, headers, body).
When an answer has ended, the pair is handed on (`on_exchange`) for the trace; nothing about
it is read before then. An exchange whose answer was cut (the client hung up, the upstream
closed) is handed on with what came and why it ended.

What the proxy promises the client, the relay keeps: an upstream that cannot be reached
gets the request a 502 with an OpenAI-style JSON error and one line on standard error; a
client that hangs up closes the upstream connection, so the engine stops generating; an
upstream that closes closes the client's connection where its bytes ended.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools
import orjson

CHAT_PATH = b"/chat/completions"
CONNECT_TIMEOUT_S = 10.0
HIGH_WATER_BYTES = 4 * 1024 * 1024  # a side that reads slowly pauses the other beyond this


@dataclass(frozen=True, slots=True)
class Upstream:
    host: str
    port: int
    tls: ssl.SSLContext | None
    url: str

    @classmethod
    def of(cls, url: str) -> Upstream:
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        port = parts.port or (443 if secure else 80)
        return cls(
            parts.hostname or "", port, ssl.create_default_context() if secure else None, url
        )


@dataclass(frozen=True, slots=True)
class Exchange:
    """One chat request and its answer's body, as far as it came."""

    body: bytes
    answer: bytes
    status: int
    streamed: bool
    encoding: bytes  # the answer's content-encoding (b"" for none)
    error: str | None
    at: float  # arrival, wall clock
    arrived_s: float  # arrival, monotonic
    ttft_s: float | None  # to the answer body's first byte
    duration_s: float


class _Request:
    __slots__ = ("arrived_s", "at", "body", "head_only", "method", "record", "url")

    def __init__(self) -> None:
        self.at, self.arrived_s = time.time(), time.monotonic()
        self.url = b""
        self.method = b""
        self.body: list[bytes] = []
        self.record = False
        self.head_only = False


class _Answer:
    __slots__ = ("body", "encoding", "first_s", "status", "streamed")

    def __init__(self) -> None:
        self.status = 0
        self.streamed = False
        self.encoding = b""
        self.body: list[bytes] = []
        self.first_s: float | None = None


class Relay:
    """Accepts client connections and relays each to the upstream; counts and notes."""

    def __init__(
        self,
        upstream: Upstream,
        on_exchange: Callable[[Exchange], None],
        note: Callable[[str], None],
    ) -> None:
        self.upstream = upstream
        self.on_exchange = on_exchange
        self.note = note
        self.connections: set[ClientSide] = set()

    def protocol(self) -> ClientSide:
        return ClientSide(self)


class ClientSide(asyncio.Protocol):
    """One client connection, its upstream connection, and what the parsers saw on both."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.transport: asyncio.Transport | None = None
        self.upstream: UpstreamSide | None = None
        self.waiting: list[bytes] = []  # what the client sent before the upstream connected
        self.requests: deque[_Request] = deque()  # complete, their answers not yet ended
        self.reading: _Request | None = None  # the request being parsed
        self.answer: _Answer | None = None
        self.watching = True  # False once either side is not HTTP the parsers can follow
        self.request_parser = httptools.HttpRequestParser(self)
        self.answer_parser = httptools.HttpResponseParser(_AnswerCallbacks(self))
        self.closed = False

    # --- the client's side ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=HIGH_WATER_BYTES)  # type: ignore[attr-defined]
        self.relay.connections.add(self)
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        upstream = self.relay.upstream
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                _, side = await loop.create_connection(
                    lambda: UpstreamSide(self), upstream.host, upstream.port, ssl=upstream.tls,
                    server_hostname=upstream.host if upstream.tls else None,
                )  # fmt: skip
        except (OSError, TimeoutError) as exc:
            self._unreachable(exc)
            return
        if self.closed:
            side.transport.close()
            return
        self.upstream = side
        for data in self.waiting:
            side.transport.write(data)
        self.waiting.clear()

    def _unreachable(self, exc: BaseException) -> None:
        """A 502 with an OpenAI-style error for the request, as `repro proxy` answers."""
        what = _failure(exc)
        self.relay.note(f"a client's connection: the upstream {what}; answered 502.")
        message = f"repro record: the upstream {self.relay.upstream.url} {what}."
        body = orjson.dumps({"error": {"message": message, "type": "upstream_error", "code": 502}})
        head = (b"HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body))  # fmt: skip
        self.requests.clear()  # answered here, by the recorder: not the engine's to record
        self.reading = None
        if self.transport is not None and not self.closed:
            self.transport.write(head + body)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self.upstream is not None:
            if not self.upstream.transport.is_closing():
                self.upstream.transport.write(data)
        else:
            self.waiting.append(data)
        if self.watching:
            try:
                self.request_parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                self.watching = False  # a protocol switch: bytes pass, unread
            except httptools.HttpParserError:
                self.watching = False

    def eof_received(self) -> bool:
        return False  # an HTTP client that stops sending has gone: close, as a hang-up

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.relay.connections.discard(self)
        self._cut("the client hung up")
        if self.upstream is not None:
            self.upstream.transport.close()  # the engine stops generating, as without us

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.transport.resume_reading()

    # httptools, requests
    def on_message_begin(self) -> None:
        self.reading = _Request()

    def on_url(self, url: bytes) -> None:
        if self.reading is not None:
            self.reading.url += url

    def on_headers_complete(self) -> None:
        request = self.reading
        if request is not None:
            request.method = self.request_parser.get_method()
            path = request.url.split(b"?", 1)[0]
            request.record = request.method == b"POST" and path.endswith(CHAT_PATH)
            request.head_only = request.method == b"HEAD"

    def on_body(self, body: bytes) -> None:
        if self.reading is not None and self.reading.record:
            self.reading.body.append(body)

    def on_message_complete(self) -> None:
        if self.reading is not None:
            self.requests.append(self.reading)
            if self.reading.head_only:
                self.watching = False  # an answer to HEAD has no body its parser can know
            self.reading = None

    # --- the upstream's side ---------------------------------------------------------

    def from_upstream(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
        if self.watching:
            try:
                self.answer_parser.feed_data(data)
            except httptools.HttpParserError:
                self.watching = False

    def upstream_lost(self) -> None:
        self._cut("the upstream closed the connection before its answer ended")
        if self.transport is not None:
            self.transport.close()

    def answer_begins(self) -> None:
        self.answer = _Answer()

    def answer_head(self, status: int) -> None:
        if self.answer is not None:
            self.answer.status = status

    def answer_header(self, name: bytes, value: bytes) -> None:
        answer, name = self.answer, name.lower()
        if answer is None:
            return
        if name == b"content-type":
            answer.streamed = value.lower().startswith(b"text/event-stream")
        elif name == b"content-encoding":
            answer.encoding = value.strip().lower()

    def answer_body(self, body: bytes) -> None:
        answer = self.answer
        if answer is None:
            return
        if answer.first_s is None:
            answer.first_s = time.monotonic()
        if self.requests and self.requests[0].record:
            answer.body.append(body)

    def answer_ends(self) -> None:
        if self.answer is not None and self.answer.status >= 200:  # not a 100 Continue
            self._hand_on(None)

    def _cut(self, why: str) -> None:
        """The connection ended: a request whose answer had not ended is handed on as cut."""
        if self.requests and self.requests[0].record:
            self._hand_on(why)
        self.requests.clear()

    def _hand_on(self, error: str | None) -> None:
        request = self.requests.popleft() if self.requests else None
        answer, self.answer = self.answer or _Answer(), None
        if request is None or not request.record:
            return
        first = answer.first_s
        self.relay.on_exchange(
            Exchange(
                b"".join(request.body),
                b"".join(answer.body),
                answer.status,
                answer.streamed,
                answer.encoding,
                error,
                request.at,
                request.arrived_s,
                None if first is None else first - request.arrived_s,
                time.monotonic() - request.arrived_s,
            )
        )


class _AnswerCallbacks:
    """httptools' response callbacks, passed to the connection's own handlers."""

    def __init__(self, side: ClientSide) -> None:
        self.side = side
        self.on_message_begin = side.answer_begins
        self.on_header = side.answer_header
        self.on_body = side.answer_body
        self.on_message_complete = side.answer_ends

    def on_headers_complete(self) -> None:
        self.side.answer_head(self.side.answer_parser.get_status_code())


class UpstreamSide(asyncio.Protocol):
    def __init__(self, client: ClientSide) -> None:
        self.client = client
        self.transport: asyncio.Transport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=HIGH_WATER_BYTES)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.client.from_upstream(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.upstream_lost()

    def pause_writing(self) -> None:
        if self.client.transport is not None:
            self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.client.transport is not None:
            self.client.transport.resume_reading()


def _failure(exc: BaseException) -> str:
    """What the upstream did, as the end of a sentence starting 'the upstream'."""
    if isinstance(exc, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(exc, TimeoutError):
        return "did not accept the connection in time"
    if isinstance(exc, ssl.SSLError):
        return f"failed the TLS handshake ({exc.reason or exc})"
    return f"could not be reached ({getattr(exc, 'strerror', None) or type(exc).__name__})"
