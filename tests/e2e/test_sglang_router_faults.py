"""The real sglang-router cutting a decode stream: repro records an error outcome, never a verdict.

Two stand-in workers on 127.0.0.1 (prefill answers, decode fails the way
research/sglang_router_cpu.md records) behind the real sglang-router 0.3.2, driven by
repro's own streaming client. Only `ok` turns reach the corruption checkers (loadgen's
_judge), so a cut stream must never come back `ok`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import orjson
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog
from repro.ports import free_ports
from repro.records.turn import TurnOutcome

pytestmark = pytest.mark.e2e

PARTIAL = "<｜DSML｜function_calls>\n<｜DSML｜invoke name="


def chunk(text: str) -> bytes:
    event = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}  # fmt: skip
    return b"data: " + orjson.dumps(event) + b"\n\n"


def worker_app(role: str, decode_fault: dict[str, str]) -> Starlette:
    """`/health` and the chat route; decode fails as `decode_fault["mode"]` says."""

    async def health(_: Request) -> Response:
        return Response("OK")

    async def chat(request: Request) -> Response:
        body = await request.json()
        assert "bootstrap_room" in body  # the router's PD fields arrived
        if role == "prefill":
            return JSONResponse({"id": "p", "object": "chat.completion", "choices": []})
        if decode_fault["mode"] == "http_500":
            return JSONResponse(
                {"error": {"message": "decode blew up " + "x" * 300}}, status_code=500
            )

        async def dies_mid_stream() -> AsyncIterator[bytes]:
            # Tokens arrive over time, as from a real decode, so the router has forwarded
            # each one before the connection drops.
            for part in (PARTIAL[:20], PARTIAL[20:]):
                yield chunk(part)
                await anyio.sleep(0.3)
            raise RuntimeError("decode worker died mid-stream")  # uvicorn drops the connection

        return StreamingResponse(dies_mid_stream(), media_type="text/event-stream")

    return Starlette(
        routes=[Route("/health", health), Route("/v1/chat/completions", chat, methods=["POST"])]
    )


class WorkerThread:
    """A uvicorn server on 127.0.0.1 in a thread, stopped by `should_exit`."""

    def __init__(self, app: Starlette, port: int) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="critical", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> WorkerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "stand-in worker did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def router_in_front(sglang_python: Path, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The real router (its own process group) before two stand-ins; yields its URL and the fault switch."""
    prefill_port, decode_port, router_port, metrics_port, bootstrap_port = free_ports(5)
    fault = {"mode": "dies"}
    with (
        WorkerThread(worker_app("prefill", fault), prefill_port),
        WorkerThread(worker_app("decode", fault), decode_port),
    ):
        argv = [str(sglang_python), "-m", "sglang_router.launch_router", "--pd-disaggregation",
                "--prefill", f"http://127.0.0.1:{prefill_port}", str(bootstrap_port),
                "--decode", f"http://127.0.0.1:{decode_port}",
                "--host", "127.0.0.1", "--port", str(router_port),
                "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
                "--disable-retries", "--disable-circuit-breaker", "--worker-startup-check-interval", "1",
                "--log-level", "warn"]  # fmt: skip
        log = (tmp_path / "router.log").open("wb")
        # HF_ENDPOINT keeps its tokenizer lookup on loopback (see repro/profiles/sim.toml).
        env = os.environ | {"HF_ENDPOINT": "http://127.0.0.1:9"}
        router = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            url = f"http://127.0.0.1:{router_port}"
            deadline = time.monotonic() + 60
            while True:
                assert router.poll() is None, (tmp_path / "router.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "router never became ready"
                try:
                    if httpx.get(url + "/readiness", timeout=2, trust_env=False).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            yield url, fault
        finally:
            os.killpg(router.pid, signal.SIGKILL)
            router.wait(timeout=10)
            log.close()


async def one_turn(url: str) -> StreamProgress:
    async with running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, 15)
        try:
            progress = StreamProgress(scheduled_at_s=0.0)
            body = orjson.dumps(
                {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
            )
            await client.stream_chat(body, progress, deadline_s=30)
            return progress
        finally:
            await client.aclose()


@pytest.mark.anyio
async def test_a_decode_that_dies_mid_stream_is_a_transport_error(router_in_front) -> None:
    url, fault = router_in_front
    fault["mode"] = "dies"
    progress = await one_turn(url)
    assert progress.http_status == 200  # the router had already said 200
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR, progress.error
    assert "".join(progress.content) == PARTIAL  # what arrived is kept for the record
    assert not progress.done and progress.finish_reason is None


@pytest.mark.anyio
async def test_a_streamed_decode_500_cut_off_by_the_router_is_a_transport_error(
    router_in_front,
) -> None:
    url, fault = router_in_front
    fault["mode"] = "http_500"
    progress = await one_turn(url)
    # The router's bug: status 500, an SSE content type, and the decode's JSON error wrapped
    # in a Python-repr `data:` line cut at the upstream length. The transport mangled it: a
    # transport error with the evidence kept, and no content for a checker to misread.
    assert progress.http_status == 500
    assert progress.outcome is TurnOutcome.TRANSPORT_ERROR, progress.error
    assert progress.error.startswith("HTTP 500: malformed event stream (cut off): data: {'error': ")
    assert "decode blew up" in progress.error
    assert progress.content == [] and progress.calls == {}
