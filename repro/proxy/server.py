"""The proxy itself: every request forwarded to the upstream engine, SSE answers through the Injector.

A request body is read whole and forwarded; the answer streams back chunk by chunk as it
arrives, so a stream no rule touches costs one extra hop and nothing else. The request asks the upstream for no
compression, so the bytes a victim's events are read from are plain text.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from repro.errors import UsageError
from repro.proxy.injection_log import InjectionLog
from repro.proxy.injector import InjectionRule, Injector
from repro.proxy.spec import ProxySpec

# The embedded engine's way to run an ASGI app: bind first (a taken port is one clear line),
# then uvicorn with a prompt, quiet shutdown on SIGTERM.
from repro.sim.serving import serve as asgi

# Hop-by-hop headers, and the ones the proxy sets itself.
REQUEST_HEADERS_DROPPED = {"host", "content-length", "connection", "keep-alive", "accept-encoding"}
RESPONSE_HEADERS_DROPPED = {"content-length", "transfer-encoding", "connection", "keep-alive"}
CONNECT_TIMEOUT_S = 10.0
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def build_app(spec: ProxySpec) -> Starlette:
    log = InjectionLog(spec.log)
    rule = InjectionRule(
        spec.rule, spec.min_streams, spec.rate, spec.seed, spec.span_bytes, spec.target
    )
    injector = Injector(rule, log.injection)
    upstream = UpstreamClients(spec.upstream)

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = [
            (k, v)
            for k, v in request.headers.raw
            if k.decode().lower() not in REQUEST_HEADERS_DROPPED
        ]
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        client = upstream.take()
        outgoing = client.build_request(request.method, target, headers=headers, content=body)
        try:
            answer = await client.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            upstream.give(client)  # it connects again on its next request
            return PlainTextResponse(
                f"repro proxy: upstream {spec.upstream} failed: {type(exc).__name__}", 502
            )
        chunks: AsyncIterator[bytes] = answer.aiter_raw()
        is_stream = answer.headers.get("content-type", "").startswith("text/event-stream")
        if is_stream and answer.status_code == 200:
            chunks = injector.tap(chunks, body)
        return StreamingResponse(
            _closing(chunks, answer, lambda: upstream.give(client)),
            status_code=answer.status_code,
            headers={
                k: v for k, v in answer.headers.items() if k.lower() not in RESPONSE_HEADERS_DROPPED
            },
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        log.start(rule, spec.upstream)
        try:
            yield
        finally:
            await upstream.aclose()
            log.close(injector.counts())

    return Starlette(routes=[Route("/{path:path}", forward, methods=METHODS)], lifespan=lifespan)


class UpstreamClients:
    """One httpx client (one connection) per request in flight, reused after it ends.

    One shared pool would be simpler, but httpcore scans every pooled connection on each
    request and response event, which at 80 streams costs more than the streaming itself
    (bench/RESULTS.md, client cost).
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.idle: list[httpx.AsyncClient] = []
        self.all: set[httpx.AsyncClient] = set()

    def take(self) -> httpx.AsyncClient:
        if self.idle:
            return self.idle.pop()
        client = httpx.AsyncClient(
            base_url=self.base_url,
            # No read deadline: a long answer may take minutes; the client judges that.
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            trust_env=False,
        )
        self.all.add(client)
        return client

    def give(self, client: httpx.AsyncClient) -> None:
        self.idle.append(client)

    async def aclose(self) -> None:
        for client in self.all:
            await client.aclose()


async def _closing(
    chunks: AsyncIterator[bytes], answer: httpx.Response, done: Callable[[], None]
) -> AsyncIterator[bytes]:
    """Close the upstream answer however the client's side ends: a client that hangs up
    must make the engine stop generating, as it would without the proxy."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
        await answer.aclose()
        done()


def serve(spec: ProxySpec) -> int:
    """Listen until SIGTERM or Ctrl-C; the process exit code."""
    try:
        sockets = [asgi.bind(spec.host, spec.port)]
    except asgi.PortInUse as exc:
        raise UsageError(f"repro proxy cannot listen: {exc}.") from None
    app = build_app(spec)
    print(
        f"repro proxy: http://{spec.host}:{spec.port} -> {spec.upstream}, rule {spec.rule.value}"
        f" (rate {spec.rate:g} from {spec.min_streams} streams in flight, target "
        f"{spec.target.value}); injections to {'standard output' if spec.log == '-' else spec.log};"
        " Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    return asgi.run(app, sockets, "warning")
