"""The streaming chat client: one kept-alive connection, SSE parsed as it arrives.

`stream_chat` fills a `StreamProgress` in place, so whatever way a request ends (done,
error, deadline, abort, cancellation) the caller still holds every byte that arrived. Every
event is validated against the chunk schema (harness.chunk) before it is used, and folded in
by `StreamProgress.apply`, the one place an event becomes progress. The bytes are read and
parsed in the connection's read callback (harness.sse_connection). Deadlines and idle limits
are the Watchdog's (harness.watchdog), so a paused repro never trips them.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio

from repro import __version__
from repro.checkers.verdict import ToolCall
from repro.harness.chunk import Chunk, Usage
from repro.harness.gap_stats import GapStats
from repro.harness.sse_connection import SseConnection
from repro.harness.turn import TurnOutcome

if TYPE_CHECKING:
    from repro.harness.watchdog import Watchdog

CHAT_PATH = "/v1/chat/completions"
CONNECT_TIMEOUT_S = 10.0
TURN_BYTES_PER_TOKEN = 8 * 1024  # what one generated token may cost on the wire, at most
MIN_TURN_BYTES = 16 * 1024 * 1024


def max_turn_bytes(max_output_tokens: int) -> int:
    """The most bytes one response may bring before it is cut as a protocol error: far above
    what `max_output_tokens` tokens take (even with logprobs), far below what exhausts memory."""
    return max(MIN_TURN_BYTES, max_output_tokens * TURN_BYTES_PER_TOKEN)


class RunClock:
    """Monotonic seconds since the run started (one clock for every timestamp).

    `t0` is a time.perf_counter() value; on Linux that clock is system-wide, so worker
    processes given the same t0 stamp on one time line."""

    def __init__(self, t0: float | None = None) -> None:
        self.t0 = time.perf_counter() if t0 is None else t0

    def now(self) -> float:
        return time.perf_counter() - self.t0


@dataclass(slots=True)
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamProgress:
    """Everything one request has produced so far; mutable while it streams."""

    scheduled_at_s: float  # when the turn was due (the client's delay runs from here)
    sent_at_s: float = 0.0  # when its bytes were handed to the connection
    outcome: TurnOutcome = TurnOutcome.OK
    http_status: int | None = None
    error: str = ""
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _CallParts] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    bad_event: str = ""  # the event that broke the protocol (truncated), for protocol_errors.jsonl
    bad_event_chars: int = 0
    protocol_kind: str = ""  # what kind of protocol break (sse_connection), for the same file
    last_event_at_s: float = 0.0  # the answer's head or a data event: what idle limits watch
    ended_at_s: float = 0.0
    # When each read that brought tokens arrived (a read only appends a float): the first
    # and last token's times and, at the turn's end, the gap figures (`gap_stats`).
    read_stamps: array = field(default_factory=lambda: array("d"))
    chunks: int = 0
    done: bool = False
    # `logprobs.content` items in arrival order, when the request asked for them: every
    # generated token with its scores, whichever field its text went to.
    logprobs: list[dict] = field(default_factory=list)

    def content_text(self) -> str:
        """The content so far as one string. The pieces are merged in place, so the turn's
        several readers (checker, record, next message) join its text once, not each time;
        `tool_calls` does the same with each call's arguments."""
        return _merged(self.content)

    def reasoning_text(self) -> str:
        """The reasoning so far as one string, merged in place as `content_text`."""
        return _merged(self.reasoning)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.name, _merged(c.arguments)) for _, c in sorted(self.calls.items()))

    def call_ids(self) -> tuple[str, ...]:
        return tuple(c.id for _, c in sorted(self.calls.items()))

    def fail(self, outcome: TurnOutcome, error: str) -> None:
        if self.outcome is TurnOutcome.OK:
            self.outcome, self.error = outcome, error

    def apply(self, event: Chunk) -> int:
        """Fold one decoded event in; 1 when it carried generated text (a token), else 0.

        Timing is not done here but once per read, by the connection
        (SseConnection.data_received): the events of one read arrived together."""
        if event.error is not None or event.object == "error":  # Chunk.is_error, inlined
            self.fail(TurnOutcome.HTTP_ERROR, f"error event from the server: {event.error_text()}")
            return 0
        if event.usage is not None:
            self.usage = event.usage
        if not event.choices:
            return 0
        choice = event.choices[0]
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        if choice.logprobs is not None:  # asked for by the divergence oracle; kept as sent
            content = choice.logprobs.get("content") if isinstance(choice.logprobs, dict) else None
            if isinstance(content, list):
                self.logprobs += content
        delta = choice.delta
        if delta is None:
            return 0
        token = 0
        if delta.reasoning_content:
            self.reasoning.append(delta.reasoning_content)
            token = 1
        if delta.content:
            self.content.append(delta.content)
            token = 1
        if delta.tool_calls:
            for call in delta.tool_calls:
                index = len(self.calls) if call.index is None else call.index
                parts = self.calls.get(index)
                if parts is None:
                    parts = self.calls[index] = _CallParts()
                parts.id = call.id or parts.id
                if call.function is not None:
                    parts.name = call.function.name or parts.name
                    if call.function.arguments:
                        parts.arguments.append(call.function.arguments)
            token = 1
        return token

    @property
    def first_token_at_s(self) -> float | None:
        return self.read_stamps[0] if self.read_stamps else None

    @property
    def last_token_at_s(self) -> float | None:
        return self.read_stamps[-1] if self.read_stamps else None

    def gap_stats(self) -> GapStats:
        """The inter-token gaps so far: one between reads, zero within a read."""
        return GapStats.from_read_stamps(self.read_stamps, self.chunks)


def _merged(pieces: list[str]) -> str:
    if len(pieces) > 1:
        pieces[:] = ["".join(pieces)]
    return pieces[0] if pieces else ""


class ChatClient:
    """One agent session's HTTP client: a kept-alive connection, its turns one after another.

    Each session owns its connection: nothing is shared between sessions, so no pool is
    scanned per event (httpcore's was a third of the CPU per chunk at 80 sessions,
    bench/client_cost.py). Clients share one TLS context, so creating one costs nothing
    worth measuring. Needs an asyncio event loop (uvloop or the standard one).
    """

    def __init__(
        self,
        base_url: str,
        watchdog: Watchdog,
        idle_timeout_s: float,
        *,
        tls: ssl.SSLContext | None = None,
        max_response_bytes: int = MIN_TURN_BYTES,
    ) -> None:
        self.watchdog = watchdog
        self.clock = watchdog.clock
        self.idle_timeout_s = idle_timeout_s
        self.max_response_bytes = max_response_bytes
        url = urlsplit(base_url)
        self._host = url.hostname or "127.0.0.1"
        self._https = url.scheme == "https"
        self._port = url.port or (443 if self._https else 80)
        self._tls = (tls or ssl.create_default_context()) if self._https else None
        default_port = url.port is None or url.port == (443 if self._https else 80)
        host = self._host if default_port else f"{self._host}:{self._port}"
        path = url.path.rstrip("/") + CHAT_PATH
        self._head = (
            f"POST {path} HTTP/1.1\r\nhost: {host}\r\nuser-agent: repro/{__version__}\r\n"
            "content-type: application/json\r\naccept: text/event-stream\r\n"
        ).encode()
        self._connection: SseConnection | None = None

    async def aclose(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def stream_chat(
        self,
        body: bytes,
        progress: StreamProgress,
        *,
        deadline_s: float,
        abort_after_chunks: int | None = None,
    ) -> None:
        """Send one streaming chat request; the outcome lands in `progress.outcome`."""
        with self.watchdog.watching(progress, deadline_s, self.idle_timeout_s):
            try:
                await self._exchange(body, progress, abort_after_chunks)
            finally:
                if progress.ended_at_s == 0.0:
                    progress.ended_at_s = self.clock.now()

    async def _exchange(
        self, body: bytes, progress: StreamProgress, abort_after: int | None
    ) -> None:
        request = [self._head, b"content-length: %d\r\n\r\n" % len(body), body]
        # A kept-alive connection the server has just closed fails before any answer: that
        # request never reached it, so it goes once more on a fresh connection.
        for attempt in (0, 1):
            # Sent from the client's side: what follows (connecting, the answer) is the
            # network's and the server's time, part of TTFT, never of repro's own send lag.
            progress.sent_at_s = self.clock.now()
            reused = self._connection is not None and not self._connection.closed
            connection = self._connection if reused else await self._connect(progress)
            if connection is None:
                return
            self._connection = connection
            done = connection.send(
                request, progress, abort_after=abort_after, max_bytes=self.max_response_bytes
            )
            try:
                await done
            finally:
                if not done.done() or not connection.reusable:
                    connection.close()  # cancelled mid-answer, or a line not worth keeping
                    self._connection = None
            if not (reused and attempt == 0 and not connection.answered):
                break
            progress.outcome, progress.error, progress.http_status = TurnOutcome.OK, "", None
            progress.ended_at_s = 0.0

    async def _connect(self, progress: StreamProgress) -> SseConnection | None:
        loop = asyncio.get_running_loop()
        t0 = self.clock.t0
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                _, connection = await loop.create_connection(
                    lambda: SseConnection(t0),
                    self._host,
                    self._port,
                    ssl=self._tls,
                    server_hostname=self._host if self._tls else None,
                )
        except TimeoutError:
            progress.fail(
                TurnOutcome.TIMEOUT,
                f"ConnectTimeout: no connection to {self._host}:{self._port} "
                f"within {CONNECT_TIMEOUT_S:g} s",
            )
            return None
        except (OSError, ssl.SSLError) as exc:
            progress.fail(TurnOutcome.TRANSPORT_ERROR, f"ConnectError: {exc}")
            return None
        return connection


def client_factory(
    base_url: str, watchdog: Watchdog, *, idle_timeout_s: float, max_output_tokens: int
) -> Callable[[], ChatClient]:
    """New session clients for one run: one TLS context for all, the response byte cap from
    max_tokens (`max_turn_bytes`)."""
    tls = ssl.create_default_context()  # built once: each session's client reuses it
    cap = max_turn_bytes(max_output_tokens)

    def new_client() -> ChatClient:
        return ChatClient(base_url, watchdog, idle_timeout_s, tls=tls, max_response_bytes=cap)

    return new_client
