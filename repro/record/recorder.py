"""Each exchange the relay saw, written as a turn line: grouped into its session, its answer
reassembled, one line appended to the trace.

The relay hands an exchange on once its answer has ended (relay.py); this writes it later,
on a queue of its own, one at a time in the order answers ended. So none of the work sits
between an upstream byte and the client, and a session's turn is grouped before its next
request can come (an agent sends it only after the answer's last byte).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import orjson

from repro.record.answer import ReadAnswer, read_stream, read_whole
from repro.record.relay import Exchange
from repro.traces import Answer, TraceWriter, TurnLines, request_of

DECODERS = {
    b"gzip": 16 + zlib.MAX_WBITS,
    b"x-gzip": 16 + zlib.MAX_WBITS,
    b"deflate": zlib.MAX_WBITS,
}


class TraceRecorder:
    """Writes each exchange as a turn line; a write error stops the recording, not the relay."""

    def __init__(self, lines: TurnLines, writer: TraceWriter, note: Callable[[str], None]) -> None:
        self.lines = lines
        self.writer = writer
        self.note = note
        self.failed = False
        self.skipped = 0  # bodies that were not chat requests (not JSON, no messages)

    def record(self, exchange: Exchange) -> None:
        if self.failed:
            return
        try:
            body = orjson.loads(exchange.body)
        except orjson.JSONDecodeError:
            body = None
        request = request_of(body) if isinstance(body, dict) else None
        if request is None:
            self.skipped += 1
            return
        data = _decoded(exchange.answer, exchange.encoding)
        read = _read(data, exchange)
        where = self.lines.start(request, exchange.arrived_s)
        error = exchange.error
        if error is None and exchange.status != 200:
            error = _http_error(data)
        answer = Answer(
            read.message,
            read.finish_reason,
            read.usage,
            exchange.status or None,
            error,
            round(exchange.at, 3),
            None if exchange.ttft_s is None else round(exchange.ttft_s, 4),
            round(exchange.duration_s, 4),
        )
        try:
            ended_s = exchange.arrived_s + exchange.duration_s
            self.writer.write(self.lines.line(request, where, answer, ended_s))
        except OSError as exc:
            self.failed = True
            self.note(
                f"cannot write the trace {self.writer.path} ({exc.strerror}); recording stopped,"
                " forwarding goes on."
            )


def _decoded(data: bytes, encoding: bytes) -> bytes:
    """The answer as the engine wrote it, if it was compressed the way HTTP compresses."""
    wbits = DECODERS.get(encoding)
    if wbits is None:
        return data
    try:
        return zlib.decompressobj(wbits).decompress(data)
    except zlib.error:
        return b""


def _read(data: bytes, exchange: Exchange) -> ReadAnswer:
    if exchange.status != 200:
        return ReadAnswer(None, None, None)
    return read_stream(data) if exchange.streamed else read_whole(data)


def _http_error(data: bytes) -> str:
    """An error answer's message (OpenAI's shape), else its first bytes."""
    try:
        body = orjson.loads(data)
        message = body["error"]["message"] if isinstance(body.get("error"), dict) else body
        return str(message)[:500]
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        return data[:200].decode("utf-8", "replace")
