"""The engine's HTTP surface: SGLang's endpoints, plus the bootstrap port on a prefill server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from repro import __version__
from repro.sim.engine import Engine, json_response
from repro.sim.response import error_body

SIMULATOR_NOTICE = "repro.sim: a simulator of an SGLang DeepSeek-V3.2 server; no model runs here."


def server_info(engine: Engine) -> dict[str, Any]:
    c = engine.config
    return {
        "simulator": True,
        "notice": SIMULATOR_NOTICE,
        "version": f"repro.sim-{__version__}",
        "model_path": c.model_path,
        "served_model_name": c.served_model_name,
        "disaggregation_mode": "null" if c.role == "single" else c.role,
        "disaggregation_bootstrap_port": c.bootstrap_port,
        "disaggregation_transfer_backend": c.transfer_backend,
        "tool_call_parser": c.tool_call_parser,
        "reasoning_parser": c.reasoning_parser,
        "model_format": c.model_format,
        "tool_parser_bug": c.tool_parser_bug,
        "enable_hierarchical_cache": c.hicache,
        "index_k_dtype": c.index_k_dtype,
        "index_k_gate": c.index_k_gate,
        "abort_fix": c.abort_fix,
        "drift_fix": c.drift_fix,
        "near_tie_flip": c.near_tie_flip,
        "disable_cuda_graph": not c.cuda_graph,
        "enable_custom_kernels": c.custom_kernels,
        "topk_v2": c.topk_v2,
        "enable_metrics": c.enable_metrics,
        "context_length": c.context_length_tokens,
        "seed": c.seed,
        "time_scale": c.time_scale,
        "stream_interval": c.stream_interval_tokens,
        "tp_size": 1,
        "dp_size": 1,
        "startup_time": engine.started_at,
        "internal_states": [
            {
                "num_running_reqs": engine.scheduler.num_running,
                "num_queue_reqs": engine.scheduler.num_waiting,
                "bootstrap_worker_alive": not engine.bootstrap_worker.dead,
                "index_k_stale_reads": engine.metrics.index_k_stale_reads_total,
            }
        ],
    }


def model_info(engine: Engine) -> dict[str, Any]:
    c = engine.config
    return {
        "model_path": c.model_path,
        "tokenizer_path": c.model_path,
        "served_model_name": c.served_model_name,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "simulated",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "deepseek_v32",
        "architectures": ["DeepseekV32ForCausalLM"],
        "tool_call_parser": c.tool_call_parser,
        "reasoning_parser": c.reasoning_parser,
        "model_format": c.model_format,
        "disaggregation_mode": "null" if c.role == "single" else c.role,
        "simulator": True,
    }


def build_app(engine: Engine) -> Starlette:
    async def health(_: Request) -> Response:
        return Response(status_code=200 if engine.ready else 503)

    async def models(_: Request) -> Response:
        c = engine.config
        card = {
            "id": c.served_model_name,
            "object": "model",
            "created": int(engine.started_at),
            "owned_by": "sglang",
            "root": c.model_path,
            "max_model_len": c.context_length_tokens,
        }
        return json_response(orjson.dumps({"object": "list", "data": [card]}))

    async def info(_: Request) -> Response:
        return json_response(orjson.dumps(server_info(engine)))

    async def minfo(_: Request) -> Response:
        return json_response(orjson.dumps(model_info(engine)))

    async def chat(request: Request) -> Response:
        return await engine.chat(await request.body())

    async def abort(request: Request) -> Response:
        try:
            data = orjson.loads(await request.body() or b"{}")
        except orjson.JSONDecodeError:
            return json_response(error_body("Request body is not valid JSON.", 400), 400)
        count = engine.abort_request(data.get("rid"), bool(data.get("abort_all", False)))
        return json_response(orjson.dumps({"aborted": count}))

    async def flush(_: Request) -> Response:
        if engine.flush_cache():
            return PlainTextResponse("Cache flushed.\n")
        return PlainTextResponse(
            "Cache not flushed: requests are running or waiting.\n", status_code=400
        )

    async def metrics(_: Request) -> Response:
        engine.scheduler.refresh_metrics()
        if engine.cache is not None:
            engine.metrics.hicache_host_used_tokens = engine.cache.host_tokens
        text = engine.metrics.render(engine.config.served_model_name, engine.config.role)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/health_generate", health, methods=["GET"]),
        Route("/ready", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/server_info", info, methods=["GET"]),
        Route("/get_server_info", info, methods=["GET"]),
        Route("/model_info", minfo, methods=["GET"]),
        Route("/get_model_info", minfo, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/abort_request", abort, methods=["POST"]),
        Route("/flush_cache", flush, methods=["GET", "POST"]),
    ]
    if engine.config.enable_metrics:
        routes.append(Route("/metrics", metrics, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await engine.start()
        try:
            yield
        finally:
            await engine.stop()

    return Starlette(routes=routes, lifespan=lifespan)


def build_bootstrap_app(engine: Engine) -> Starlette:
    async def kv(request: Request) -> Response:
        room = int(request.path_params["room"])
        timeout_s = float(request.query_params.get("timeout_s", engine.config.bootstrap_timeout_s))
        return await engine.serve_kv(room, timeout_s)

    async def abort(request: Request) -> Response:
        engine.room_aborted(int(request.path_params["room"]))
        return Response(status_code=200)

    async def health(_: Request) -> Response:
        return Response(status_code=200)

    return Starlette(
        routes=[
            Route("/kv/{room:int}", kv, methods=["GET"]),
            Route("/abort/{room:int}", abort, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


class PortDispatch:
    """One uvicorn server, two listening sockets: route each connection by its local port."""

    def __init__(self, main: ASGIApp, by_port: dict[int, ASGIApp]) -> None:
        self._main = main
        self._by_port = by_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        app = self._by_port.get(server[1]) if server else None
        await (app or self._main)(scope, receive, send)
