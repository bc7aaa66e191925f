"""The floor: the least CPU a streaming chat client can spend, for comparing real clients to.

Asyncio (uvloop) protocols on raw sockets, HTTP/1.1 keep-alive, one connection per slot; it
sends a prebuilt request and only counts SSE events (blank-line separators) until the chunked
response ends. No JSON, no timing, no text kept.

    python bench/peers/floor_client.py --url http://127.0.0.1:PORT [--streams 640]
        [--concurrency 64] [--body-bytes 6500]

Prints one JSON line: streams finished and events counted. Exits 1 on any short stream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from urllib.parse import urlsplit

import uvloop

END = b"\r\n0\r\n\r\n"  # the last chunk of a chunked response


class Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.response: asyncio.Future[int] | None = None
        self.events, self.tail, self.first = 0, b"", True
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if self.response is not None and not self.response.done():
            self.response.set_exception(ConnectionError("the server closed the connection"))
        self.closed.set_result(None)

    def request(self, raw: bytes) -> asyncio.Future[int]:
        self.events, self.tail, self.first = 0, b"", True
        self.response = asyncio.get_running_loop().create_future()
        assert self.transport is not None
        self.transport.write(raw)
        return self.response

    def data_received(self, data: bytes) -> None:
        if self.first:
            self.first = False
            if not data.startswith(b"HTTP/1.1 200"):
                assert self.response is not None
                self.response.set_exception(RuntimeError(data[:200].decode(errors="replace")))
                return
        # An event separator split across two reads is counted through the kept tail.
        self.events += data.count(b"\n\n") + (self.tail[-1:] == b"\n" and data[:1] == b"\n")
        self.tail = (self.tail + data)[-len(END) :]
        if self.tail == END and self.response is not None:
            self.response.set_result(self.events)


def request_bytes(host: str, port: int, body_bytes: int) -> bytes:
    """A chat request whose JSON body is `body_bytes` long (the prompt pads it)."""

    def body(prompt: str) -> bytes:
        return json.dumps({"model": "bench", "messages": [{"role": "user", "content": prompt}],
                           "stream": True, "max_tokens": 2048}).encode()  # fmt: skip

    filled = body("x" * max(body_bytes - len(body("")), 0))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(filled)}\r\n\r\n"
    )
    return head.encode() + filled


async def run(url: str, streams: int, concurrency: int, body_bytes: int) -> tuple[int, int]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    raw = request_bytes(host, port, body_bytes)
    loop = asyncio.get_running_loop()
    left, done, events = streams, 0, 0

    async def slot() -> None:
        nonlocal left, done, events
        _, conn = await loop.create_connection(Connection, host, port)
        while left > 0:
            left -= 1
            counted = await conn.request(raw)  # not `events += await`: it reads events first
            events, done = events + counted, done + 1
        assert conn.transport is not None
        conn.transport.close()

    await asyncio.gather(*(slot() for _ in range(min(concurrency, streams))))
    return done, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--streams", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--body-bytes", type=int, default=6500, help="request body size")
    args = parser.parse_args()
    done, events = uvloop.run(run(args.url, args.streams, args.concurrency, args.body_bytes))
    print(json.dumps({"streams": done, "events": events}))
    if done != args.streams:
        sys.exit(1)


if __name__ == "__main__":
    main()
