"""An OpenAI chat-completions server that streams canned tokens and does almost nothing else.

The yardstick for client cost (bench/peer_cost.py, bench/client_scale.py): every request gets
`tokens` content events, then a finish event, a usage event and [DONE], as SSE over HTTP/1.1
keep-alive with chunked encoding. Paced, one ticker writes the next event to every open stream
each `pace_ms` (as a batched decode step does), so the server costs one timer and one write
per stream per step. Two unpaced forms:

- pace -1, one write per event: the ticker runs as fast as the loop lets it, each step as
  soon as the last one's writes are done. This is how an engine streams when nothing holds
  it back (each token its own write), and the client reads whatever has piled up since its
  last read.
- pace 0, one write per stream: the whole stream as one write of prebuilt bytes. No engine
  streams like this. A client then receives a stream in a few reads, so this form prices
  the parsing alone.

    python bench/peers/stream_server.py [--port 0] [--tokens 256] [--pace-ms 0]

It prints `listening on http://127.0.0.1:PORT` once ready. Besides /v1/chat/completions,
/v1/models and /health it answers the bench's own control requests:
POST /bench/config {"tokens": N, "pace_ms": X} (also resets the counters) and
GET /bench/stats (streams and tokens sent, request bytes, the server's own CPU seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass

import httptools
import orjson
import uvloop

MODEL = "bench"
# Seeded words, so a stream reads as prose: a repeating unit would be flagged by repro's
# checker as runaway repetition, and a corrupted turn makes repro continue the session.
WORDS = ("the", "model", "reads", "a", "file", "and", "then", "writes", "patch", "to", "check",
         "tests", "for", "each", "change", "in", "module", "with", "care", "before", "it",
         "runs", "build", "again", "so", "that", "errors", "show", "early", "on", "disk", "now")  # fmt: skip


def _sse(event: dict | str) -> bytes:
    """One SSE event as one HTTP chunk."""
    data = event if isinstance(event, str) else orjson.dumps(event).decode()
    payload = f"data: {data}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _chunk(delta: dict, finish_reason: str | None = None) -> dict:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def token_texts(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" " + rng.choice(WORDS) for _ in range(count)]


HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n" + _sse(_chunk({"role": "assistant", "content": ""}))
)


def _tail(prompt_tokens: int, tokens: int) -> bytes:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
             "total_tokens": prompt_tokens + tokens}  # fmt: skip
    usage_event = {**_chunk({}), "choices": [], "usage": usage}
    return _sse(_chunk({}, "length")) + _sse(usage_event) + _sse("[DONE]") + b"0\r\n\r\n"


def _json_response(body: object, status: str = "200 OK") -> bytes:
    data = orjson.dumps(body)
    return b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status.encode(),
        len(data),
        data,
    )


@dataclass
class Stats:
    streams: int = 0
    tokens: int = 0
    requests: int = 0
    request_bytes: int = 0
    connections: int = 0  # opened since the last reset, this stats request's own included
    steps: int = 0  # paced: intervals between decode steps, and their sum (the real pace)
    steps_s: float = 0.0


class Server:
    """The configuration, the counters and the ticker shared by every connection."""

    def __init__(self, tokens: int, pace_ms: float) -> None:
        self.stats = Stats()
        self.open_streams: dict[Connection, int] = {}  # connection -> tokens sent so far
        self._ticking = False
        self._last_step_at: float | None = None
        self.configure(tokens, pace_ms)

    def configure(self, tokens: int, pace_ms: float) -> None:
        self.tokens, self.pace_s, self.stats = tokens, pace_ms / 1000, Stats()
        self.step_s = max(self.pace_s, 0.0)  # between the ticker's steps; 0 per event
        self.texts = token_texts(tokens)
        self.events = [_sse(_chunk({"content": text})) for text in self.texts]
        self.whole_body = HEAD + b"".join(self.events)  # the unpaced stream, built once

    def start_stream(self, conn: Connection, prompt_tokens: int) -> None:
        if self.pace_s == 0:  # the whole stream at once: the socket sets the pace
            conn.write(self.whole_body + _tail(prompt_tokens, self.tokens))
            self._finished(self.tokens)
            return
        conn.write(HEAD)
        conn.prompt_tokens = prompt_tokens
        self.open_streams[conn] = 0
        if not self._ticking:
            self._ticking = True
            loop = asyncio.get_running_loop()
            due = loop.time() + self.step_s
            loop.call_at(due, self._tick, due)

    def _tick(self, due: float) -> None:
        """One decode step: the next token to every open stream, the end to those done."""
        loop = asyncio.get_running_loop()
        if self._last_step_at is not None:  # an interval between two steps of one busy spell
            self.stats.steps += 1
            self.stats.steps_s += loop.time() - self._last_step_at
        self._last_step_at = loop.time()
        for conn, sent in list(self.open_streams.items()):
            if sent + 1 >= self.tokens:
                del self.open_streams[conn]
                conn.write(self.events[sent] + _tail(conn.prompt_tokens, self.tokens))
                self._finished(self.tokens)
            else:
                self.open_streams[conn] = sent + 1
                conn.write(self.events[sent])
        if not self.open_streams:
            self._ticking, self._last_step_at = False, None
            return
        # Keep to the schedule, but never fire a backlog of steps in a burst. Unpaced per
        # event, the next step is due at once: the loop's next turn.
        due = max(due + self.step_s, loop.time())
        loop.call_at(due, self._tick, due)

    def _finished(self, tokens: int) -> None:
        self.stats.streams += 1
        self.stats.tokens += tokens

    def drop(self, conn: Connection) -> None:
        self.open_streams.pop(conn, None)


class Connection(asyncio.Protocol):
    """One client connection: httptools parses requests, each answered as it completes."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.body: list[bytes] = []
        self.prompt_tokens = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.stats.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.drop(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.write(_json_response({"error": "bad request"}, "400 Bad Request"))
            if self.transport is not None:
                self.transport.close()

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url, self.body = b"", []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        method, path = self.parser.get_method(), self.url.split(b"?", 1)[0]
        body = b"".join(self.body)
        server = self.server
        if method == b"POST" and path == b"/v1/chat/completions":
            server.stats.requests += 1
            server.stats.request_bytes += len(body)
            self._chat(body)
        elif path == b"/v1/models":
            model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "bench"}
            self.write(_json_response({"object": "list", "data": [model]}))
        elif path in (b"/health", b"/v1/health"):
            self.write(_json_response({"status": "ok"}))
        elif method == b"POST" and path == b"/bench/config":
            config = orjson.loads(body)
            server.configure(int(config["tokens"]), float(config.get("pace_ms", 0)))
            self.write(_json_response({"tokens": server.tokens, "pace_ms": server.pace_s * 1000}))
        elif path == b"/bench/stats":
            stats = server.stats
            self.write(_json_response({**stats.__dict__, "cpu_s": time.process_time()}))
        else:
            self.write(_json_response({"error": f"no route {path.decode()}"}, "404 Not Found"))

    def _chat(self, body: bytes) -> None:
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            self.write(_json_response({"error": "body is not JSON"}, "400 Bad Request"))
            return
        prompt_tokens = len(body) // 4  # a rough figure; no client here checks it
        if request.get("stream"):
            self.server.start_stream(self, prompt_tokens)
            return
        tokens = self.server.tokens
        message = {"role": "assistant", "content": "".join(self.server.texts)}
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                 "total_tokens": prompt_tokens + tokens}  # fmt: skip
        choice = {"index": 0, "message": message, "finish_reason": "length"}
        self.write(_json_response({"id": "chatcmpl-bench", "object": "chat.completion",
                                   "created": 1_700_000_000, "model": MODEL,
                                   "choices": [choice], "usage": usage}))  # fmt: skip
        self.server._finished(tokens)


async def serve(port: int, tokens: int, pace_ms: float) -> None:
    server = Server(tokens, pace_ms)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(
        lambda: Connection(server), "127.0.0.1", port, backlog=4096, reuse_address=True
    )
    bound = listener.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{bound}", flush=True)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 = a free port")
    parser.add_argument("--tokens", type=int, default=256, help="content events per stream")
    parser.add_argument(
        "--pace-ms",
        type=float,
        default=0.0,
        help="between tokens; 0 = the whole stream in one write, -1 = one write per event, unpaced",
    )
    args = parser.parse_args()
    if args.pace_ms < 0 and args.pace_ms != -1:
        parser.error(f"--pace-ms {args.pace_ms:g} is negative; -1 is the unpaced write per event")
    uvloop.run(serve(args.port, args.tokens, args.pace_ms))


if __name__ == "__main__":
    main()
