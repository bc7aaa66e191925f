"""One request through the proxy: forwarded to the upstream, its answer streamed back.

Whatever the upstream does (refuse, time out, reset, break HTTP, end a body early) and
whatever the client does (hang up at any point), the proxy writes at most one line about it
and never a traceback. Before the answer's head arrives, an upstream failure is a 502 with a
JSON error body. After it, the client's stream is closed where the upstream's ended, with no
byte the upstream did not send: an unfinished chunked body tells the client it was cut, as
the upstream's unfinished body told the proxy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import httpx
import orjson
from starlette.types import Message, Receive, Scope, Send

from repro.proxy.injector import Injector
from repro.proxy.upstream import UpstreamClients

# Hop-by-hop headers, and the ones the proxy sets itself.
REQUEST_HEADERS_DROPPED = {b"host", b"content-length", b"connection", b"keep-alive",
                           b"accept-encoding"}  # fmt: skip
RESPONSE_HEADERS_DROPPED = {b"content-length", b"transfer-encoding", b"connection", b"keep-alive"}
# Plain bytes, so a victim's events can be read (httpx would ask for gzip by default).
IDENTITY = (b"accept-encoding", b"identity")


class Forwarder:
    """The proxy's ASGI endpoint for every path; `note` receives its one-line notes."""

    def __init__(
        self, upstream: UpstreamClients, injector: Injector, note: Callable[[str], None]
    ) -> None:
        self.upstream = upstream
        self.injector = injector
        self.note = note
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["raw_path"].decode("latin-1") or "/"
        query = scope["query_string"].decode("latin-1")
        target = path + (f"?{query}" if query else "")
        name = f"request {self.requests} ({scope['method']} {path})"
        self.requests += 1
        body = await _read_body(receive)
        if body is None:
            return  # the client hung up before its request was whole: nothing to forward
        async with anyio.create_task_group() as watching:
            # A client that hangs up cancels the exchange, so the upstream stops generating
            # as it would without the proxy, even while its answer has not started.
            watching.start_soon(_cancel_on_hang_up, receive, watching.cancel_scope)
            await self._exchange(scope, target, body, send, name)
            watching.cancel_scope.cancel()

    async def _exchange(
        self, scope: Scope, target: str, body: bytes, send: Send, name: str
    ) -> None:
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in REQUEST_HEADERS_DROPPED]
        client = self.upstream.take()
        try:
            try:
                outgoing = client.build_request(
                    scope["method"], target, headers=[*headers, IDENTITY], content=body
                )
            except httpx.InvalidURL as exc:
                self.note(f"{name}: cannot be forwarded ({exc}); answered 400.")
                await _send_error(
                    send,
                    400,
                    "invalid_request_error",
                    f"repro proxy: cannot forward this request: {exc}.",
                )
                return
            try:
                answer = await client.send(outgoing, stream=True)
            except httpx.HTTPError as exc:
                what = failure(exc)
                self.note(f"{name}: the upstream {what}; answered 502.")
                await _send_error(
                    send,
                    502,
                    "upstream_error",
                    f"repro proxy: the upstream {self.upstream.base_url} {what}.",
                )
                return
            try:
                await self._relay(answer, body, send, name)
            finally:
                with anyio.CancelScope(shield=True):  # even when the client hung up
                    await answer.aclose()
        finally:
            self.upstream.give(client)  # it connects again if its connection was lost

    async def _relay(self, answer: httpx.Response, body: bytes, send: Send, name: str) -> None:
        headers = [
            (k, v) for k, v in answer.headers.raw if k.lower() not in RESPONSE_HEADERS_DROPPED
        ]
        await send(
            {"type": "http.response.start", "status": answer.status_code, "headers": headers}
        )
        chunks: AsyncIterator[bytes] = answer.aiter_raw()
        is_stream = answer.headers.get("content-type", "").startswith("text/event-stream")
        # An upstream that compressed anyway sends bytes the injector cannot read.
        plain = answer.headers.get("content-encoding", "identity") == "identity"
        if is_stream and plain and answer.status_code == 200:
            chunks = self.injector.tap(chunks, body, name)
        sent_bytes = 0
        try:
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                sent_bytes += len(chunk)
        except httpx.HTTPError as exc:
            self.note(
                f"{name}: the upstream {failure(exc)} after {sent_bytes:,} bytes of its answer;"
                " the client's stream was closed there."
            )
            return  # unfinished on purpose: the server closes the connection (notes.py)
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:  # the injector's bookkeeping of streams in flight
                with anyio.CancelScope(shield=True):
                    await close()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def failure(exc: httpx.HTTPError) -> str:
    """What the upstream did, as the end of a sentence starting 'the upstream'."""
    cause = _os_error(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        return "did not accept the connection in time"
    if isinstance(cause, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(cause, ConnectionResetError):
        return "reset the connection"
    detail = str(exc).strip().rstrip(".")
    if not detail and cause is not None:
        detail = cause.strerror or type(cause).__name__
    detail = detail or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({detail})"
    if isinstance(exc, httpx.ConnectError):
        return f"could not be reached ({detail})"
    if "without sending a response" in detail:
        return "closed the connection without answering"
    if "complete message body" in detail:  # "... body (received 5 bytes, expected 9)"
        how = detail.partition("complete message body")[2].strip(" :()")
        return f"ended its answer early ({how or 'before its end'})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"broke the HTTP protocol ({detail})"
    return f"failed ({type(exc).__name__}: {detail})"


def _os_error(exc: BaseException) -> OSError | None:
    """The operating system's error under httpx's, httpcore's and anyio's wrappers (anyio's
    'All connection attempts failed' holds one error per address tried), if any."""
    found: OSError | None = None
    pending: list[BaseException] = [exc]
    while pending:
        seen = pending.pop(0)
        if isinstance(seen, OSError):
            if seen.errno is not None:
                return seen
            found = found or seen
        if isinstance(seen, BaseExceptionGroup):
            pending.extend(seen.exceptions)
        if (under := seen.__cause__ or seen.__context__) is not None:
            pending.append(under)
    return found


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body; None if the client hung up first."""
    parts = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _cancel_on_hang_up(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _send_error(send: Send, status: int, kind: str, message: str) -> None:
    """An OpenAI-style error answer, so any client reads it as it reads the engine's own."""
    content = orjson.dumps({"error": {"message": message, "type": kind, "code": status}})
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"),
                    (b"content-length", str(len(content)).encode())],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": content, "more_body": False})
