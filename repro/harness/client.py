"""The streaming chat client: httpx, one kept-alive connection per session, SSE parsed as it arrives.

`stream_chat` fills a `StreamProgress` in place, so whatever way a request ends (done,
error, deadline, abort, cancellation) the caller still holds every byte that arrived.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import httpx
import orjson

from repro.checkers.verdict import ToolCall
from repro.harness.turn import TurnOutcome

CHAT_PATH = "/v1/chat/completions"
ERROR_BODY_BYTES = 2000


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
    usage: dict = field(default_factory=dict)
    first_token_at_s: float | None = None
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
        clock: RunClock,
        read_timeout_s: float,
        *,
        tls: ssl.SSLContext | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.clock = clock
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            verify=tls or True,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=httpx.Timeout(connect=10.0, read=read_timeout_s, write=60.0, pool=60.0),
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
        on_chunk: Callable[[], None] | None = None,
    ) -> None:
        """Send one streaming chat request; the outcome lands in `progress.outcome`."""
        with anyio.move_on_after(deadline_s) as scope:
            try:
                await self._stream(body, progress, abort_after_chunks, on_chunk)
            except httpx.ReadTimeout:
                progress.fail(
                    TurnOutcome.STALLED, "no data from the server within the read timeout"
                )
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
        if scope.cancelled_caught:
            progress.fail(TurnOutcome.TIMEOUT, f"the turn took longer than {deadline_s:g} s")

    async def _stream(
        self,
        body: bytes,
        progress: StreamProgress,
        abort_after_chunks: int | None,
        on_chunk: Callable[[], None] | None,
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
            async for line in response.aiter_lines():
                if progress.done or not line.startswith("data:"):
                    continue  # read to the end after [DONE], so the connection is reused
                data = line[5:].strip()
                if data == "[DONE]":
                    progress.done = True
                    continue
                self._absorb(data, progress)
                if progress.outcome is not TurnOutcome.OK:
                    return
                if on_chunk is not None:
                    on_chunk()
                if abort_after_chunks is not None and progress.chunks >= abort_after_chunks:
                    # Leaving the `async with` closes the connection, as a client that gives up does.
                    progress.fail(
                        TurnOutcome.ABORTED, f"aborted by repro after {progress.chunks} chunks"
                    )
                    return
        if not progress.done:
            progress.fail(TurnOutcome.TRANSPORT_ERROR, "the stream ended without [DONE] (cut off)")

    def _absorb(self, data: str, progress: StreamProgress) -> None:
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            progress.fail(TurnOutcome.TRANSPORT_ERROR, f"malformed SSE event: {data[:200]!r}")
            return
        if not isinstance(event, dict):
            progress.fail(
                TurnOutcome.TRANSPORT_ERROR, f"SSE event is not an object: {data[:200]!r}"
            )
            return
        if "error" in event or event.get("object") == "error":
            error = event.get("error", event)
            message = error.get("message", error) if isinstance(error, dict) else error
            progress.fail(TurnOutcome.HTTP_ERROR, f"error event from the server: {message}")
            return
        if event.get("usage"):
            progress.usage = event["usage"]
        choices = event.get("choices") or ()
        if not choices:
            return
        choice = choices[0]
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            progress.logprobs += logprobs["content"]
        delta = choice.get("delta") or {}
        got_text = False
        if delta.get("reasoning_content"):
            progress.reasoning.append(delta["reasoning_content"])
            got_text = True
        if delta.get("content"):
            progress.content.append(delta["content"])
            got_text = True
        for call in delta.get("tool_calls") or ():
            parts = progress.calls.setdefault(call.get("index", len(progress.calls)), _CallParts())
            function = call.get("function") or {}
            parts.id = call.get("id") or parts.id
            parts.name = function.get("name") or parts.name
            if function.get("arguments"):
                parts.arguments.append(function["arguments"])
            got_text = True
        if choice.get("finish_reason"):
            progress.finish_reason = choice["finish_reason"]
        if got_text:
            now = self.clock.now()
            if progress.first_token_at_s is None:
                progress.first_token_at_s = now
            else:
                progress.gaps_s.append(now - (progress.last_token_at_s or now))
            progress.last_token_at_s = now
            progress.chunks += 1
