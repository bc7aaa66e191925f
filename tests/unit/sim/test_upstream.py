"""The lean HTTP/1.1 client: chunked and sized bodies, keep-alive reuse, stale connections."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from repro.sim.upstream import Upstream, UpstreamError

pytestmark = pytest.mark.anyio
CHUNKED = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
SIZED = b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno"


@dataclass
class Scripted:
    """A loopback server that answers each request with the next reply, counting the
    connections it accepts and the ones it has closed."""

    replies: list[bytes]
    close_after_first: bool = False
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while self.replies:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = int(
                next(
                    line.split(b":")[1]
                    for line in head.split(b"\r\n")
                    if line.startswith(b"content-length")
                )
            )
            self.requests.append(head + await reader.readexactly(length))
            writer.write(self.replies.pop(0))
            await writer.drain()
            if self.close_after_first:
                break
        writer.close()
        await writer.wait_closed()
        self.closed.set()


async def _server(scripted: Scripted) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(scripted.handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_bodies_and_keep_alive() -> None:
    scripted = Scripted([CHUNKED, SIZED])
    server, port = await _server(scripted)
    async with server:
        upstream = Upstream(f"http://127.0.0.1:{port}")
        response = await upstream.request(
            "POST", "/v1/chat/completions", b'{"a":1}', {"x-request-id": "r"}
        )
        assert response.status == 200 and response.content_type == "text/event-stream"
        assert [chunk async for chunk in response.iter_body()] == [b"hello", b" world"]
        response = await upstream.request("GET", "/missing")
        assert (response.status, await response.read()) == (404, b"no")
        upstream.close()
    assert (len(scripted.requests), scripted.connections) == (2, 1)  # one kept-alive connection
    first = scripted.requests[0]
    assert first.endswith(b'\r\n\r\n{"a":1}') and b"x-request-id: r" in first


async def test_a_stale_pooled_connection_is_retried_on_a_fresh_one() -> None:
    scripted = Scripted([SIZED, SIZED], close_after_first=True)
    server, port = await _server(scripted)
    async with server:
        upstream = Upstream(f"http://127.0.0.1:{port}")
        assert (await (await upstream.request("GET", "/a")).read()) == b"no"
        await scripted.closed.wait()  # the server has closed the pooled connection
        assert (await (await upstream.request("GET", "/b")).read()) == b"no"
        upstream.close()
    # The second request went out on the pooled (closed) connection first, then on a new one.
    assert (len(scripted.requests), scripted.connections) == (2, 2)


async def test_refused_is_an_upstream_error() -> None:
    server, port = await _server(Scripted([]))
    server.close()
    await server.wait_closed()
    with pytest.raises(UpstreamError):
        await Upstream(f"http://127.0.0.1:{port}").request("GET", "/")
