"""repro's own PD router: one body to prefill and decode at once, decode's bytes back.

It does what sglang-router's PD mode does on the wire (research/sglang_router_cpu.md):
add `bootstrap_host`, `bootstrap_port` and a fresh random `bootstrap_room` to the body,
send it to both workers at the same time, read the prefill response to its end, and only
then return the decode response byte for byte (JSON, or SSE through `data: [DONE]`).
Unlike the real router it never parses or rebuilds the body: the three fields are
spliced in before the closing brace, so a 320 KB request costs one copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import anyio
import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from repro.sim.config import RouterConfig

log = logging.getLogger("repro.sim.router")
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
    rooms = random.Random()
    state: dict[str, httpx.AsyncClient] = {}

    def client() -> httpx.AsyncClient:
        return state["client"]

    def headers_of(request: Request) -> dict[str, str]:
        forwarded = {k: v for k, v in request.headers.items() if k in FORWARDED_HEADERS}
        return {**forwarded, "content-type": "application/json", "accept": "*/*"}

    async def generate(request: Request) -> Response:
        body = await request.body()
        room = rooms.getrandbits(63)
        try:
            routed = inject_bootstrap(body, prefill_host, config.bootstrap_port, room)
        except ValueError as exc:
            return _error(str(exc), 400, "bad_request")
        headers = headers_of(request)
        path = request.url.path
        decode_req = client().build_request(
            "POST", config.decode_url + path, content=routed, headers=headers
        )
        prefill_task = asyncio.create_task(
            client().post(config.prefill_url + path, content=routed, headers=headers)
        )
        decode_task = asyncio.create_task(client().send(decode_req, stream=True))
        try:
            prefill = await prefill_task
        except httpx.HTTPError as exc:
            await _discard(decode_task)
            return _error(f"Prefill server error: {exc!r}", 502, "prefill_server_error")
        if prefill.status_code != 200:
            await _discard(decode_task)
            kind = "prefill_bad_request" if prefill.status_code < 500 else "prefill_internal_error"
            return _error(
                f"Prefill server error ({prefill.status_code}): {prefill.text}",
                prefill.status_code,
                kind,
            )
        try:
            decode = await decode_task
        except httpx.HTTPError as exc:
            return _error(f"Decode server error: {exc!r}", 502, "decode_server_error")
        media_type = decode.headers.get("content-type", "application/json")
        return StreamingResponse(
            _passthrough(decode),
            status_code=decode.status_code,
            media_type=media_type,
        )

    async def forward_get(request: Request) -> Response:
        response = await client().get(config.decode_url + request.url.path)
        return Response(
            response.content, response.status_code, media_type=response.headers.get("content-type")
        )

    async def broadcast(request: Request) -> Response:
        body = await request.body()
        results = await asyncio.gather(
            *(
                client().request(request.method, url + request.url.path, content=body)
                for url in (config.prefill_url, config.decode_url)
            ),
            return_exceptions=True,
        )
        ok = all(isinstance(r, httpx.Response) and r.status_code == 200 for r in results)
        return Response(status_code=200 if ok else 500)

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
        state["client"] = httpx.AsyncClient(
            timeout=httpx.Timeout(config.request_timeout_s, connect=10.0),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=512),
            trust_env=False,
        )
        try:
            yield
        finally:
            await state["client"].aclose()

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


async def _passthrough(response: httpx.Response) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    finally:
        # Also on a client disconnect (a cancel): closing upstream is how decode learns of it.
        with anyio.CancelScope(shield=True):
            await response.aclose()


async def _discard(task: asyncio.Task[httpx.Response]) -> None:
    """Drop the decode half of a request whose prefill failed."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
        response = await task
        await response.aclose()
