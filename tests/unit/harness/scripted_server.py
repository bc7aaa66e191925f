"""A chat server on 127.0.0.1 that answers each request with the next scripted response.

A response is (status, body): the body is bytes, sent as one HTTP chunk, or an async iterator
of bytes, each piece sent as a chunk when it is yielded (so a test controls the timing).
Every request's path and body are kept in `requests` for the test to look at, and the
connection it came on (numbered from 1) in `request_connections`. A GET (an endpoint probe
such as /v1/models) gets an empty JSON list and is not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

Body = bytes | AsyncIterator[bytes]


@dataclass
class Scripted:
    responses: Sequence[tuple[int, Body]]
    requests: list[tuple[str, bytes]] = field(default_factory=list)
    content_type: str = "text/event-stream"

    handlers: set[asyncio.Task] = field(default_factory=set)
    connections: int = 0
    request_connections: list[int] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.connections += 1
        try:
            await self._answer(reader, writer, self.connections)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self.handlers.discard(task)

    async def _answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: int
    ) -> None:
        while True:  # keep-alive: one request after another on this connection
            head = await reader.readuntil(b"\r\n\r\n")
            line, *fields = head.decode("latin-1").split("\r\n")
            if line.startswith("GET "):
                listing = b'{"object": "list", "data": []}'
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(listing), listing)
                )
                continue
            length = next(
                int(f.split(":", 1)[1]) for f in fields if f.lower().startswith("content-length")
            )
            self.requests.append((line.split(" ")[1], await reader.readexactly(length)))
            self.request_connections.append(connection)
            status, body = self.responses[(len(self.requests) - 1) % len(self.responses)]
            writer.write(
                f"HTTP/1.1 {status} X\r\ncontent-type: {self.content_type}\r\n"
                "transfer-encoding: chunked\r\n\r\n".encode()
            )
            if isinstance(body, bytes):
                writer.write(b"%x\r\n%s\r\n" % (len(body), body))
            else:
                async for piece in body:
                    writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()


@contextlib.asynccontextmanager
async def scripted_server(
    responses: Sequence[tuple[int, Body]], scripted: Scripted | None = None
) -> AsyncIterator[str]:
    """Serve `responses` in turn (cycling); yields the base URL."""
    scripted = scripted or Scripted(responses)
    server = await asyncio.start_server(scripted.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for task in list(scripted.handlers):
            task.cancel()
        await asyncio.sleep(0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1)
