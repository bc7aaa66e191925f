"""repro's own PD router: one body to prefill and decode at once, decode's bytes back.

It does what sglang-router's PD mode does on the wire (research/sglang_router_cpu.md):
add `bootstrap_host`, `bootstrap_port` and a fresh random `bootstrap_room` to the body,
send it to both workers at the same time, read the prefill response to its end, and only
then return the decode response byte for byte (JSON, or SSE through `data: [DONE]`).
Unlike the real router it never parses or rebuilds the body: the three fields are
spliced in before the closing brace, so a 320 KB request costs one copy; the hops use
upstream.Upstream (lean keep-alive HTTP/1.1) rather than httpx.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from repro.sim.config import RouterConfig
from repro.sim.upstream import Upstream, UpstreamError, UpstreamResponse

log = logging.getLogger("repro.sim.serving.router")
FORWARDED_HEADERS = (
    "authorization",
    "x-request-id",
    "x-correlation-id",
    "traceparent",
    "tracestate",
)


def inject_bootstrap(body: bytes, host: str, port: int | None, room: int) -> bytes:
    """The body with bootstrap fields added before its final `}` (last key wins on parse)."""
    end = body.rstrip().rfind(b"}")
    if end == -1:
        raise ValueError("request body is not a JSON object")
    head = body[:end].rstrip()
    port_json = b"null" if port is None else str(port).encode()
    fields = b'"bootstrap_host":' + orjson.dumps(host) + b',"bootstrap_port":' + port_json
    fields += b',"bootstrap_room":' + str(room).encode()
    separator = b"" if head.endswith(b"{") else b","
    return head + separator + fields + b"}"


def _error(message: str, status: int, code: str) -> Response:
    body = orjson.dumps(
        {
            "error": {
                "type": "Bad Gateway" if status == 502 else "Error",
                "code": code,
                "message": message,
            }
        }
    )
    return Response(body, status_code=status, media_type="application/json")


def build_router_app(config: RouterConfig) -> Starlette:
    prefill_host = urlsplit(config.prefill_url).hostname or "127.0.0.1"
    prefill = Upstream(config.prefill_url)
    decode = Upstream(config.decode_url)
    rooms = random.Random()

    def headers_of(request: Request) -> dict[str, str]:
        forwarded = {k: v for k, v in request.headers.items() if k in FORWARDED_HEADERS}
        return {**forwarded, "content-type": "application/json", "accept": "*/*"}

    async def read_prefill(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        response = await prefill.request("POST", path, body, headers)
        return response.status, await response.read()

    async def generate(request: Request) -> Response:
        body = await request.body()
        try:
            routed = inject_bootstrap(
                body, prefill_host, config.bootstrap_port, rooms.getrandbits(63)
            )
        except ValueError as exc:
            return _error(str(exc), 400, "bad_request")
        headers = headers_of(request)
        path = request.url.path
        # Same body to both at once; nothing reaches the client before prefill has finished.
        decode_task = asyncio.create_task(decode.request("POST", path, routed, headers))
        try:
            status, prefill_body = await asyncio.wait_for(
                read_prefill(path, routed, headers), config.request_timeout_s
            )
        except (UpstreamError, TimeoutError) as exc:
            await _discard(decode_task)
            return _error(f"Prefill server error: {exc!r}", 502, "prefill_server_error")
        if status != 200:
            await _discard(decode_task)
            kind = "prefill_bad_request" if status < 500 else "prefill_internal_error"
            text = prefill_body.decode(errors="replace")
            return _error(f"Prefill server error ({status}): {text}", status, kind)
        try:
            response = await decode_task
        except UpstreamError as exc:
            return _error(f"Decode server error: {exc!r}", 502, "decode_server_error")
        return StreamingResponse(
            _passthrough(response), status_code=response.status, media_type=response.content_type
        )

    async def forward_get(request: Request) -> Response:
        try:
            response = await decode.request("GET", request.url.path)
            content = await response.read()
        except UpstreamError as exc:
            return _error(f"Decode server error: {exc!r}", 502, "decode_server_error")
        return Response(content, response.status, media_type=response.content_type)

    async def broadcast(request: Request) -> Response:
        body = await request.body()

        async def one(upstream: Upstream) -> int:
            response = await upstream.request(
                request.method, request.url.path, body, {"content-type": "application/json"}
            )
            await response.read()
            return response.status

        results = await asyncio.gather(one(prefill), one(decode), return_exceptions=True)
        return Response(status_code=200 if all(r == 200 for r in results) else 500)

    async def health(_: Request) -> Response:
        return Response(status_code=200)

    async def info(_: Request) -> Response:
        payload = {
            "simulator": True,
            "role": "router",
            "notice": "repro.sim PD router in front of simulated SGLang workers.",
            "prefill": [[config.prefill_url, config.bootstrap_port]],
            "decode": [config.decode_url],
        }
        return Response(orjson.dumps(payload), media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            prefill.close()
            decode.close()

    routes = [
        Route("/v1/chat/completions", generate, methods=["POST"]),
        Route("/v1/completions", generate, methods=["POST"]),
        Route("/generate", generate, methods=["POST"]),
        Route("/v1/models", forward_get, methods=["GET"]),
        Route("/model_info", forward_get, methods=["GET"]),
        Route("/get_model_info", forward_get, methods=["GET"]),
        Route("/flush_cache", broadcast, methods=["GET", "POST"]),
        Route("/abort_request", broadcast, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/readiness", health, methods=["GET"]),
        Route("/server_info", info, methods=["GET"]),
        Route("/get_server_info", info, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


async def _passthrough(response: UpstreamResponse) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.iter_body():
            yield chunk
    finally:
        # Also on a client disconnect (a cancel): closing upstream is how decode learns of it.
        response.release()


async def _discard(task: asyncio.Task[UpstreamResponse]) -> None:
    """Drop the decode half of a request whose prefill failed (decode sees a disconnect)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, UpstreamError):
        (await task).release()
