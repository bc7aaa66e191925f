"""A lean HTTP/1.1 client for loopback hops between repro.sim processes.

The router forwards every turn twice (prefill, decode) and the decode side long-polls the
prefill's bootstrap server once per turn. httpx's connection pool does bookkeeping that
grows with the number of pooled connections on every request (profiled: most of the
router's CPU at 80 sessions), so these hops use asyncio streams directly: keep-alive
connections in a LIFO free list, one request per connection at a time, bodies read by
Content-Length or chunked encoding. Only what uvicorn answers is supported.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

READ_LIMIT_BYTES = 1 << 20


class UpstreamError(ConnectionError):
    """The upstream closed, refused, or sent something that is not HTTP/1.1."""


class _StaleConnection(UpstreamError):
    """A pooled connection the server had already closed: nothing was sent back."""


@dataclass(eq=False)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def close(self) -> None:
        self.writer.close()


@dataclass(eq=False)
class UpstreamResponse:
    status: int
    headers: dict[str, str]
    _connection: _Connection | None
    _pool: Upstream
    _done: bool = field(default=False)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json")

    async def iter_body(self) -> AsyncIterator[bytes]:
        """The body as it arrives (de-chunked); the connection is reused after the end."""
        assert self._connection is not None, "the body was already read"
        reader = self._connection.reader
        try:
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                    if size == 0:
                        await reader.readuntil(b"\r\n")  # no trailers from uvicorn
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif "content-length" in self.headers:
                length = int(self.headers["content-length"])
                if length:
                    yield await reader.readexactly(length)
            else:
                while data := await reader.read(65536):
                    yield data
                self.headers["connection"] = "close"
            self._done = True
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            raise UpstreamError(f"upstream body broke off: {exc!r}") from None
        finally:
            self.release()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.iter_body()])

    def release(self) -> None:
        """Back to the pool when the body was read to its end; closed otherwise."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._done and self.headers.get("connection", "").lower() != "close":
            self._pool.give_back(connection)
        else:
            connection.close()


class Upstream:
    """Requests to one `http://host:port` base URL over pooled keep-alive connections."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self._idle: list[_Connection] = []

    async def _connect(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, limit=READ_LIMIT_BYTES
            )
        except OSError as exc:
            raise UpstreamError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        return _Connection(reader, writer)

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> UpstreamResponse:
        """Send a request and read the response head; the body is read by the caller."""
        lines = [
            f"{method} {path} HTTP/1.1",
            f"host: {self.host}:{self.port}",
            f"content-length: {len(body)}",
        ]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        while self._idle:
            # A pooled connection may have been closed by the server meanwhile: try the next.
            with contextlib.suppress(_StaleConnection):
                return await self._exchange(self._idle.pop(), head, body)
        return await self._exchange(await self._connect(), head, body)

    def give_back(self, connection: _Connection) -> None:
        self._idle.append(connection)

    async def _exchange(
        self, connection: _Connection, head: bytes, body: bytes
    ) -> UpstreamResponse:
        try:
            connection.writer.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                connection.writer.write(body)
            await connection.writer.drain()
            raw = await connection.reader.readuntil(b"\r\n\r\n")
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            connection.close()
            nothing_back = isinstance(exc, OSError) or (
                isinstance(exc, asyncio.IncompleteReadError) and not exc.partial
            )
            kind = _StaleConnection if nothing_back else UpstreamError
            raise kind(f"upstream {self.host}:{self.port} failed: {exc!r}") from None
        except BaseException:
            connection.close()  # cancelled mid-exchange: the connection is in an unknown state
            raise
        status_line, *header_lines = raw[:-4].decode("latin-1").split("\r\n")
        try:
            status = int(status_line.split(" ", 2)[1])
        except (IndexError, ValueError):
            connection.close()
            raise UpstreamError(f"not an HTTP response: {status_line!r}") from None
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return UpstreamResponse(status, headers, connection, self)

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()
