"""The streaming chat client: httpx, one kept-alive connection per session, SSE parsed as it arrives.

`stream_chat` fills a `StreamProgress` in place, so whatever way a request ends (done,
error, deadline, abort, cancellation) the caller still holds every byte that arrived. Every
event is validated against the chunk schema (harness.chunk) before it is used. Deadlines
and idle limits are the Watchdog's (harness.watchdog), so a paused repro never trips them.
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
import orjson

from repro.checkers.verdict import ToolCall
from repro.harness.chunk import ProtocolViolation, Usage, decode_event
from repro.harness.turn import TurnOutcome

if TYPE_CHECKING:
    from repro.harness.watchdog import Watchdog

CHAT_PATH = "/v1/chat/completions"
ERROR_BODY_BYTES = 2000
BAD_EVENT_CHARS = 4096  # how much of an event that breaks the protocol is kept as evidence


class RunClock:
    """Monotonic seconds since the run started (one clock for every timestamp)."""

    def __init__(self) -> None:
        self._t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self._t0


@dataclass(slots=True)
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamProgress:
    """Everything one request has produced so far; mutable while it streams."""

    scheduled_at_s: float
    sent_at_s: float = 0.0
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
    first_token_at_s: float | None = None
    last_event_at_s: float = 0.0  # any line from the server: what the idle limit watches
    last_token_at_s: float | None = None
    ended_at_s: float = 0.0
    gaps_s: list[float] = field(default_factory=list)
    chunks: int = 0
    done: bool = False
    # `logprobs.content` items in arrival order, when the request asked for them: every
    # generated token with its scores, whichever field its text went to.
    logprobs: list[dict] = field(default_factory=list)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.name, "".join(c.arguments)) for _, c in sorted(self.calls.items()))

    def call_ids(self) -> tuple[str, ...]:
        return tuple(c.id for _, c in sorted(self.calls.items()))

    def fail(self, outcome: TurnOutcome, error: str) -> None:
        if self.outcome is TurnOutcome.OK:
            self.outcome, self.error = outcome, error


def _is_broken_event_stream(response: httpx.Response, body: bytes) -> bool:
    """An error answered as SSE whose events are not JSON (e.g. cut at a stale length)."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return False
    for line in body.splitlines():
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            try:
                orjson.loads(line[5:])
            except orjson.JSONDecodeError:
                return True
    return False


class ChatClient:
    """One agent session's HTTP client: a kept-alive connection, its turns one after another.

    Each session owns its client rather than sharing one pool: httpcore scans every pooled
    connection on each request and response event, which at 80 sessions cost a third more
    CPU per streamed chunk than a client per session (bench/client_cost.py). Clients share one
    TLS context, so creating one costs nothing worth measuring.
    """

    def __init__(
        self,
        base_url: str,
        watchdog: Watchdog,
        idle_timeout_s: float,
        *,
        tls: ssl.SSLContext | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.watchdog = watchdog
        self.clock = watchdog.clock
        self.idle_timeout_s = idle_timeout_s
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            verify=tls or True,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            # No read timeout: httpx's is a timer per read, and after a pause of repro it
            # would fire before anyone could tell; the watchdog enforces the idle limit.
            timeout=httpx.Timeout(connect=10.0, read=None, write=60.0, pool=60.0),
            trust_env=False,  # never route a loopback engine through an HTTP proxy
        )

    async def aclose(self) -> None:
        await self._http.aclose()

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
                await self._stream(body, progress, abort_after_chunks)
            except httpx.TimeoutException as exc:
                progress.fail(
                    TurnOutcome.TIMEOUT, f"{type(exc).__name__} before the response started"
                )
            except (httpx.TransportError, httpx.StreamError) as exc:
                progress.fail(
                    TurnOutcome.TRANSPORT_ERROR, f"{type(exc).__name__}: {exc}".rstrip(": ")
                )
            finally:
                progress.ended_at_s = self.clock.now()

    async def _stream(
        self, body: bytes, progress: StreamProgress, abort_after_chunks: int | None
    ) -> None:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        progress.sent_at_s = self.clock.now()
        async with self._http.stream("POST", CHAT_PATH, content=body, headers=headers) as response:
            progress.http_status = response.status_code
            if response.status_code != 200:
                body = await response.aread()
                text = body[:ERROR_BODY_BYTES].decode("utf-8", "replace").strip()
                outcome = TurnOutcome.HTTP_ERROR
                if _is_broken_event_stream(response, body):
                    # sglang-router 0.3.2 sends a streamed decode 500 as a cut-off, non-JSON
                    # event: the transport mangled it; the engine's words never arrived.
                    outcome = TurnOutcome.TRANSPORT_ERROR
                    text = f"malformed event stream (cut off): {text}"
                progress.fail(outcome, f"HTTP {response.status_code}: {text}")
                return
            # An event is whole at the blank line after it (or at the next `data:` line, for
            # servers that skip the blank line); one still pending at the end was cut off.
            pending: str | None = None
            async for line in response.aiter_lines():
                if not line:
                    if pending is None:
                        continue
                    data, pending = pending, None
                elif line.startswith("data:"):
                    progress.last_event_at_s = self.clock.now()
                    data, pending = pending, line[5:].strip()
                    if data is None:
                        continue
                else:
                    progress.last_event_at_s = self.clock.now()  # a comment or keep-alive
                    continue
                if progress.done:
                    continue  # read to the end after [DONE], so the connection is reused
                if not self._dispatch(data, progress, abort_after_chunks):
                    return
            if pending == "[DONE]":
                progress.done = True
            elif pending is not None and not progress.done:
                progress.fail(
                    TurnOutcome.TRANSPORT_ERROR, "the stream ended inside an event (cut off)"
                )
        if not progress.done:
            progress.fail(TurnOutcome.TRANSPORT_ERROR, "the stream ended without [DONE] (cut off)")

    def _dispatch(self, data: str, progress: StreamProgress, abort_after: int | None) -> bool:
        """Use one whole event; False when the request must end here."""
        if data == "[DONE]":
            progress.done = True
            return True
        self._absorb(data, progress)
        if progress.outcome is not TurnOutcome.OK:
            return False
        if abort_after is not None and progress.chunks >= abort_after:
            # Leaving the `async with` closes the connection, as a client that gives up does.
            progress.fail(TurnOutcome.ABORTED, f"aborted by repro after {progress.chunks} chunks")
            return False
        return True

    def _absorb(self, data: str, progress: StreamProgress) -> None:
        try:
            event = decode_event(data)
        except ProtocolViolation as exc:
            progress.fail(TurnOutcome.PROTOCOL_ERROR, str(exc))
            progress.bad_event, progress.bad_event_chars = data[:BAD_EVENT_CHARS], len(data)
            return
        if event.is_error:
            progress.fail(
                TurnOutcome.HTTP_ERROR, f"error event from the server: {event.error_text()}"
            )
            return
        if event.usage is not None:
            progress.usage = event.usage
        if not event.choices:
            return
        choice = event.choices[0]
        delta = choice.delta
        logprobs = choice.logprobs  # asked for by the divergence oracle; kept as sent
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            progress.logprobs += logprobs["content"]
        got_text = False
        if delta is not None:
            if delta.reasoning_content:
                progress.reasoning.append(delta.reasoning_content)
                got_text = True
            if delta.content:
                progress.content.append(delta.content)
                got_text = True
            for call in delta.tool_calls or ():
                index = len(progress.calls) if call.index is None else call.index
                parts = progress.calls.setdefault(index, _CallParts())
                parts.id = call.id or parts.id
                if call.function is not None:
                    parts.name = call.function.name or parts.name
                    if call.function.arguments:
                        parts.arguments.append(call.function.arguments)
                got_text = True
        if choice.finish_reason:
            progress.finish_reason = choice.finish_reason
        if got_text:
            now = progress.last_event_at_s
            if progress.first_token_at_s is None:
                progress.first_token_at_s = now
            else:
                progress.gaps_s.append(now - (progress.last_token_at_s or now))
            progress.last_token_at_s = now
            progress.chunks += 1
