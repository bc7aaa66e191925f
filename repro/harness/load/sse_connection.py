"""One kept-alive HTTP/1.1 connection that streams a chat response's server-sent events, parsed
from raw bytes in the read callback.

Everything a read brings is handled where it arrives, in `data_received`: one clock read,
the HTTP framing by httptools (llhttp, in C), SSE lines split on bytes, each event's JSON
decoded and validated once (harness.load.chunk) and folded into the request's StreamProgress
(StreamProgress.apply, harness.load.client). The waiting coroutine wakes once per response, not once per
read: a wake-up and a stack of async iterators per read is what made the client, not the
engine, set the pace at a few hundred paced streams (bench/RESULTS.md, peer_cost and
client_scale). Bytes are capped per event and per response, so a hostile server cannot make
repro hold an endless line or gigabytes inside the turn deadline.

Whatever a server answers is used or named: interim 1xx answers are skipped as HTTP says;
lines may end in CR LF, LF or CR alone (the SSE grammar allows all three); a 200 answer that
is not an event stream (a whole JSON completion, an HTML page, a compressed body nobody asked
for) is a protocol error that says what it was, its start kept in protocol_errors.jsonl with
its kind. Liveness is tokens: `progress.last_event_at_s` moves on the answer's head and on
each read that brought generated text, never on keep-alive comments, blank lines or empty
events, so a server that only sends those is stalled after the idle limit, as the docs say.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import httptools
import msgspec
import orjson

from repro.harness.load.chunk import DECODE_ERRORS, decode_chunk, decode_completion, violation
from repro.records.turn import TurnOutcome

if TYPE_CHECKING:
    from repro.harness.load.stream_progress import StreamProgress

MAX_HEAD_BYTES = 64 * 1024  # status line and headers
MAX_EVENT_BYTES = 1024 * 1024  # one SSE line; far above any real chunk (a whole tool call fits)
ERROR_BODY_BYTES = 2000  # of an error answer, kept as the turn's error text
BAD_EVENT_CHARS = 4096  # of an event that breaks the protocol, kept as evidence
_KEEP_ERROR_BYTES = 64 * 1024  # of an error body, read to judge whether it is a broken stream
OK = TurnOutcome.OK
_perf_counter = time.perf_counter  # read once per read of every stream: no attribute lookup


class SseConnection(asyncio.Protocol):
    """A connection for one request at a time; `send` starts one and returns a future that is
    done when the response has ended, one way or another (the outcome is in the progress)."""

    # Slots: every read touches a dozen of these, on as many connections as sessions.
    __slots__ = (
        "_abort_after", "_content_encoding", "_content_type", "_done",
        "_error_body", "_error_bytes", "_head_done", "_interim", "_live", "_max_bytes",
        "_not_a_stream", "_parser", "_progress", "_received", "_status", "_t0", "_tail",
        "_tokens", "_whole", "closed", "reusable", "transport",
    )  # fmt: skip

    def __init__(self, t0: float) -> None:
        self._t0 = t0  # the run clock's origin: times are perf_counter() - t0
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = False  # the last response ended cleanly and the server keeps the line
        self._live = False  # a request is waiting for its response
        self._progress: StreamProgress | None = None
        self._done: asyncio.Future[None] | None = None
        self._received = 0
        self._whole = False

    # --- one request -------------------------------------------------------------------
    def send(
        self,
        request: list[bytes],
        progress: StreamProgress,
        *,
        abort_after: int | None,
        max_bytes: int,
        whole: bool = False,
    ) -> asyncio.Future[None]:
        """`whole`: the request said `stream: false`; its answer is one JSON completion."""
        self._progress, self._abort_after, self._max_bytes = progress, abort_after, max_bytes
        self._whole = whole
        self._parser = httptools.HttpResponseParser(self)
        self._status = 0
        self._content_type = b""
        self._content_encoding = b""
        self._head_done = False
        self._interim = False  # a 1xx answer's head: skipped, the final answer follows
        self._not_a_stream = False  # a 200 whose body is not an event stream: kept as evidence
        self._received = 0
        self._tokens = 0  # events with text in the current read
        self._tail = b""  # the start of an SSE line whose end has not arrived yet
        self._error_body: list[bytes] = []
        self._error_bytes = 0
        self.reusable = False
        self._done = done = asyncio.get_running_loop().create_future()
        self._live = True
        assert self.transport is not None
        self.transport.writelines(request)
        return done

    @property
    def answered(self) -> bool:
        """Whether any byte of the current response arrived (else a retry is safe)."""
        return self._received > 0

    def _finish(self) -> None:
        """The response is over: stamp its end and wake the request's coroutine."""
        if not self._live:
            return
        self._live = False
        if self._progress is not None:
            self._progress.ended_at_s = time.perf_counter() - self._t0
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _stop(self, outcome: TurnOutcome, error: str, kind: str = "") -> None:
        """End the request here: the outcome, then the connection (its rest is never read)."""
        if self._progress is not None:
            self._progress.fail(outcome, error)
            if kind and self._progress.outcome is outcome:
                self._progress.protocol_kind = kind
        self.close()
        self._finish()

    def _protocol_error(self, kind: str, error: str, evidence: bytes) -> None:
        """The answer broke the protocol: say how, keep its start, and stop reading it."""
        progress = self._progress
        assert progress is not None
        if progress.outcome is OK:
            text = evidence.decode("utf-8", "replace")
            progress.bad_event, progress.bad_event_chars = text[:BAD_EVENT_CHARS], len(text)
        self._stop(TurnOutcome.PROTOCOL_ERROR, error, kind)

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()

    # --- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.reusable = True, False
        progress = self._progress
        if not self._live or progress is None:
            return
        if not self._head_done:
            why = f": {exc}" if exc else ""
            progress.fail(
                TurnOutcome.TRANSPORT_ERROR,
                f"the server closed the connection before answering{why}",
            )
        elif self._status != 200:
            self._error_answer()
        elif self._not_a_stream:  # a body that ends with the connection (no length given)
            self._not_a_stream_answer()
        else:
            self._stream_ended(exc)
        self._finish()

    def data_received(self, data: bytes) -> None:
        if not self._live:
            self.close()  # bytes nobody asked for: the server broke HTTP framing
            return
        progress = self._progress
        assert progress is not None
        now = _perf_counter() - self._t0  # the one clock read of this read
        self._received += len(data)
        if self._received > self._max_bytes:
            self._stop(
                TurnOutcome.PROTOCOL_ERROR,
                f"the response passed {self._max_bytes:,} bytes; repro stopped reading it",
                "response_too_large",
            )
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if self._live:
                self._stop(TurnOutcome.TRANSPORT_ERROR, f"malformed HTTP response: {exc}")
        if not self._head_done and self._received > MAX_HEAD_BYTES and self._live:
            self._stop(
                TurnOutcome.PROTOCOL_ERROR,
                f"the response headers passed {MAX_HEAD_BYTES:,} bytes without ending",
                "headers_too_large",
            )
        tokens = self._tokens
        if tokens:  # timing once per read: the events of one read arrived together
            progress.last_event_at_s = now  # liveness is tokens (module doc)
            progress.chunks += tokens
            progress.read_stamps.append(now)
            self._tokens = 0

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost judges what arrived

    # --- httptools callbacks -------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-type":
            self._content_type = value.strip().lower()
        elif name == b"content-encoding":
            self._content_encoding = value.strip().lower()

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        progress = self._progress
        assert progress is not None
        if 100 <= status < 200 and status != 101:  # interim (100 Continue, 103 Early Hints)
            self._interim = True
            self._content_type = self._content_encoding = b""
            return
        self._head_done = True
        self._status = status
        progress.http_status = status
        progress.last_event_at_s = _perf_counter() - self._t0  # the server answered
        if status == 101:
            self._protocol_error(
                "switched_protocols", "the server switched protocols (HTTP 101)", b""
            )
        elif status == 200 and self._content_encoding not in (b"", b"identity"):
            encoding = self._content_encoding.decode("latin-1")
            self._protocol_error(
                "compressed",
                f"the server compressed its answer (content-encoding: {encoding}), "
                "which repro did not ask for",
                b"",
            )
        elif status == 200 and self._whole:
            if self._content_type.startswith(b"text/event-stream"):
                self._protocol_error(
                    "streamed_whole",
                    "the server streamed its answer to a request with stream: false",
                    b"",
                )
            else:
                self._not_a_stream = True  # the whole completion: read below, judged at its end
        elif (
            status == 200
            and self._content_type
            and not self._content_type.startswith(b"text/event-stream")
        ):
            self._not_a_stream = True  # its body is read as evidence (below), not as events

    def on_body(self, body: bytes) -> None:
        if self._status != 200 or self._not_a_stream:
            if self._error_bytes < _KEEP_ERROR_BYTES or self._whole:  # capped by max_bytes
                self._error_body.append(body)
            self._error_bytes += len(body)
            return
        if not self._live:
            return
        # Slices, not startswith/endswith: those parse their arguments on every call, the
        # larger share of this test's cost (bench/read_callback.py --instructions).
        if self._tail or body[:5] != b"data:" or body[-1] != 10:  # 10 is "\n"
            self._events(self._tail + body)
            return
        # The common body of a real server's stream: one whole event. The decoder refuses
        # more than one JSON value, so a body of several events takes the long way below.
        progress = self._progress
        assert progress is not None
        if progress.done:
            progress.note("after_done", "an event after [DONE]")
            return
        try:
            event = decode_chunk(body[5:])
        except DECODE_ERRORS:
            self._events(body)  # [DONE], several events, or a bad one: the long way
            return
        except RecursionError:  # nesting deeper than the decoder goes: the long way names it
            self._events(body)
            return
        if progress.apply(event):
            self._tokens += 1
            if self._abort_after is not None:
                self._check_abort()
        if progress.outcome is not OK:
            self._stop(progress.outcome, progress.error)

    def on_message_complete(self) -> None:
        if self._interim:  # the end of a 1xx answer: the final one follows on this line
            self._interim = False
            return
        if not self._live:
            return
        if self._status != 200:
            self._error_answer()
        elif self._not_a_stream:
            self._not_a_stream_answer()
        else:
            self._stream_ended(None)
        assert self._progress is not None
        # Reused only when the whole answer was read: a clean stream, or an error body.
        whole = self._status != 200 or self._progress.done
        self.reusable = whole and self._parser.should_keep_alive()
        if not self.reusable:
            self.close()
        self._finish()

    # --- the event stream ----------------------------------------------------------------
    def _events(self, buffer: bytes) -> None:
        """Every whole `data:` line of this body, in order; an unfinished last one waits."""
        progress = self._progress
        assert progress is not None
        if b"\r" in buffer:  # CR LF or CR alone end a line too (SSE); a CR that ends this
            # read and the LF that starts the next make one extra blank line, which is harmless
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        tail = lines.pop()
        if len(tail) > MAX_EVENT_BYTES:
            self._protocol_error(
                "event_too_large",
                f"an event passed {MAX_EVENT_BYTES:,} bytes without ending",
                tail[:BAD_EVENT_CHARS],
            )
            return
        self._tail = tail
        for line in lines:
            # Blank separators, comments (keep-alives) and other SSE fields carry no data.
            if not line.startswith(b"data:"):
                continue
            if progress.done:  # read to the end after [DONE], so the connection is reused
                progress.note("after_done", "an event after [DONE]")
                continue
            payload = line[5:]
            try:
                event = decode_chunk(payload)
            except DECODE_ERRORS as exc:
                if payload.strip() == b"[DONE]":  # the end, once per stream: not worth a test
                    progress.done = True
                    continue
                kind = "schema" if isinstance(exc, msgspec.ValidationError) else "bad_json"
                self._protocol_error(kind, violation(exc), payload.strip())
                return
            except RecursionError:
                self._protocol_error(
                    "too_deep", "event nests deeper than repro reads", payload.strip()
                )
                return
            if progress.apply(event):
                self._tokens += 1
                if self._check_abort():
                    return
            if progress.outcome is not OK:  # an error event: apply() said what it was
                self._stop(progress.outcome, progress.error)
                return

    def _check_abort(self) -> bool:
        """--abort-rate: give up after this many chunks, closing the connection as a client
        that gives up does."""
        abort_after = self._abort_after
        if abort_after is None:
            return False
        assert self._progress is not None
        chunks = self._progress.chunks + self._tokens
        if chunks < abort_after:
            return False
        self._stop(TurnOutcome.ABORTED, f"aborted by repro after {chunks} chunks")
        return True

    def _stream_ended(self, exc: Exception | None) -> None:
        """The response is over (its last chunk, or the connection went): was it whole?"""
        progress = self._progress
        assert progress is not None
        if progress.outcome is not OK or progress.done:
            return
        if self._tail.strip():
            if self._tail.startswith(b"data:") and self._tail[5:].strip() == b"[DONE]":
                progress.done = True  # the last line lacked its newline: still the end
                return
            if not progress.chunks and not self._tail.startswith((b"data:", b":")):
                # No event ever came, and what did is no event either: not a stream at all.
                self._protocol_error(
                    "not_event_stream",
                    "the 200 answer is not an event stream (no `data:` line in it)",
                    self._tail,
                )
                return
            progress.fail(TurnOutcome.TRANSPORT_ERROR, "the stream ended inside an event (cut off)")
            return
        why = f" ({type(exc).__name__}: {exc})" if exc else ""
        progress.fail(
            TurnOutcome.TRANSPORT_ERROR, f"the stream ended without [DONE] (cut off){why}"
        )

    def _not_a_stream_answer(self) -> None:
        """A 200 whose content type is not an event stream: name what it was instead (or, for
        a `stream: false` request, read it as the whole completion it should be)."""
        body = b"".join(self._error_body)
        if self._whole:
            self._whole_answer(body)
            return
        kind = self._content_type.split(b";")[0].decode("latin-1") or "no content type"
        what = f"a {kind} body"
        if kind == "application/json" and b'"choices"' in body[:_KEEP_ERROR_BYTES]:
            what = "a whole JSON completion (the server ignored `stream: true`)"
        elif kind == "text/html":
            what = "an HTML page"
        self._protocol_error(
            "not_event_stream", f"the 200 answer is {what}, not an event stream", body
        )

    def _whole_answer(self, body: bytes) -> None:
        """A `stream: false` answer, whole: decoded and validated once, then folded in."""
        progress = self._progress
        assert progress is not None
        if not self._content_type.startswith(b"application/json") and self._content_type:
            kind = self._content_type.split(b";")[0].decode("latin-1")
            self._protocol_error(
                "not_json", f"the 200 answer to stream: false is a {kind} body, not JSON", body
            )
            return
        try:
            answer = decode_completion(body)
        except DECODE_ERRORS as exc:
            kind = "schema" if isinstance(exc, msgspec.ValidationError) else "bad_json"
            text = str(exc)
            if kind == "schema":
                text = f"the answer breaks the chat-completion schema: {exc}"
            self._protocol_error(kind, text, body)
            return
        except RecursionError:
            self._protocol_error("too_deep", "the answer nests deeper than repro reads", body)
            return
        progress.last_event_at_s = _perf_counter() - self._t0
        progress.apply_whole(answer)
        progress.done = True

    def _error_answer(self) -> None:
        """A status other than 200: the server's words, or a broken stream it came as."""
        progress = self._progress
        assert progress is not None
        body = b"".join(self._error_body)
        text = body[:ERROR_BODY_BYTES].decode("utf-8", "replace").strip()
        if self._content_type.startswith(b"text/event-stream") and _has_broken_event(body):
            # sglang-router 0.3.2 sends a streamed decode 500 as a cut-off, non-JSON event:
            # the transport mangled it; the engine's words never arrived.
            progress.fail(
                TurnOutcome.TRANSPORT_ERROR,
                f"HTTP {self._status}: malformed event stream (cut off): {text}",
            )
            return
        progress.fail(TurnOutcome.HTTP_ERROR, f"HTTP {self._status}: {text}")


def _has_broken_event(body: bytes) -> bool:
    for line in body.splitlines():
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            try:
                orjson.loads(line[5:])
            except orjson.JSONDecodeError:
                return True
    return False
