"""The lean HTTP/1.1 client: chunked and sized bodies, keep-alive reuse, stale connections."""

from __future__ import annotations

import asyncio

import pytest

from repro.sim.upstream import Upstream, UpstreamError

pytestmark = pytest.mark.anyio
CHUNKED = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
SIZED = b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno"


async def _server(
    replies: list[bytes], close_after_first: bool = False
) -> tuple[asyncio.Server, list[bytes], int]:
    requests: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while replies:
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
            requests.append(head + await reader.readexactly(length))
            writer.write(replies.pop(0))
            await writer.drain()
            if close_after_first:
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, requests, server.sockets[0].getsockname()[1]


async def test_bodies_and_keep_alive() -> None:
    server, requests, port = await _server([CHUNKED, SIZED])
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
    assert len(requests) == 2  # both over one kept-alive connection
    assert requests[0].endswith(b'\r\n\r\n{"a":1}') and b"x-request-id: r" in requests[0]


async def test_a_stale_pooled_connection_is_retried_on_a_fresh_one() -> None:
    server, requests, port = await _server([SIZED, SIZED], close_after_first=True)
    async with server:
        upstream = Upstream(f"http://127.0.0.1:{port}")
        assert (await (await upstream.request("GET", "/a")).read()) == b"no"
        await asyncio.sleep(0.05)  # the server has closed the pooled connection
        assert (await (await upstream.request("GET", "/b")).read()) == b"no"
        upstream.close()
    assert len(requests) == 2


async def test_refused_is_an_upstream_error() -> None:
    server, _, port = await _server([])
    server.close()
    await server.wait_closed()
    with pytest.raises(UpstreamError):
        await Upstream(f"http://127.0.0.1:{port}").request("GET", "/")
