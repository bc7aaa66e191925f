"""The streaming chat client: one kept-alive connection, SSE parsed as it arrives.

`stream_chat` fills a `StreamProgress` (harness.load.stream_progress) in place, so whatever way a request ends (done,
error, deadline, abort, cancellation) the caller still holds every byte that arrived. Every
event is validated against the chunk schema (harness.load.chunk) before it is used, and folded in
by `StreamProgress.apply`, the one place an event becomes progress. The bytes are read and
parsed in the connection's read callback (harness.load.sse_connection). Deadlines and idle limits
are the Watchdog's (harness.load.watchdog), so a paused repro never trips them.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio

from repro import __version__
from repro.harness.load.sse_connection import SseConnection
from repro.harness.load.stream_progress import StreamProgress
from repro.records.turn import TurnOutcome

if TYPE_CHECKING:
    from repro.harness.load.watchdog import Watchdog

CHAT_PATH = "/v1/chat/completions"
CONNECT_TIMEOUT_S = 10.0
TURN_BYTES_PER_TOKEN = 8 * 1024  # what one generated token may cost on the wire, at most
MIN_TURN_BYTES = 16 * 1024 * 1024


def max_turn_bytes(max_output_tokens: int) -> int:
    """The most bytes one response may bring before it is cut as a protocol error: far above
    what `max_output_tokens` tokens take (even with logprobs), far below what exhausts memory."""
    return max(MIN_TURN_BYTES, max_output_tokens * TURN_BYTES_PER_TOKEN)


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
        head = (
            f"POST {path} HTTP/1.1\r\nhost: {host}\r\nuser-agent: repro/{__version__}\r\n"
            "content-type: application/json\r\n"
        )
        self._head = (head + "accept: text/event-stream\r\n").encode()
        self._whole_head = (head + "accept: application/json\r\n").encode()
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

    async def complete_chat(
        self, body: bytes, progress: StreamProgress, *, deadline_s: float
    ) -> None:
        """Send one `stream: false` chat request; its whole answer lands in `progress`.

        Nothing arrives before the answer is done, so the idle limit is the deadline, and the
        request is no evidence for or against a wedge (Watchdog.watching, `streaming`)."""
        progress.streamed = False
        with self.watchdog.watching(progress, deadline_s, deadline_s, streaming=False):
            try:
                await self._exchange(body, progress, None, whole=True)
            finally:
                if progress.ended_at_s == 0.0:
                    progress.ended_at_s = self.clock.now()

    async def _exchange(
        self, body: bytes, progress: StreamProgress, abort_after: int | None, whole: bool = False
    ) -> None:
        head = self._whole_head if whole else self._head
        request = [head, b"content-length: %d\r\n\r\n" % len(body), body]
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
                request,
                progress,
                abort_after=abort_after,
                max_bytes=self.max_response_bytes,
                whole=whole,
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
