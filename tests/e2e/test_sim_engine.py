"""The embedded engine as real processes: SGLang's shapes, endpoints, abort, teardown, PD."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.e2e import sim_server
from tests.e2e.sim_client import chat_body, stream_chat

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
PARSERS = ("--tool-call-parser", "deepseekv32", "--reasoning-parser", "deepseek-v3")
EXPECTED_CALL = ("read_file", '{"path": "example", "limit": 1}')  # the generic script's call


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_server.SimProcess]:
    log_dir = tmp_path_factory.mktemp("single")
    with sim_server.single(
        log_dir, *PARSERS, "--enable-metrics", "--context-length", "20000", "--time-scale", "0.05"
    ) as proc:
        yield proc


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(30.0)) as c:
        yield c


def test_streaming_has_sglangs_shape(server: sim_server.SimProcess, client: httpx.Client) -> None:
    result = stream_chat(client, server.url, chat_body(stream=True))
    assert result.status == 200 and result.done
    assert result.deltas()[0] == {"role": "assistant", "content": ""}
    assert result.text("reasoning_content") == "I will call the tool."
    assert result.text("content") == ""  # the DSML became tool_calls, not content
    assert result.calls() == [EXPECTED_CALL]
    first_call_delta = next(d for d in result.deltas() if d.get("tool_calls"))["tool_calls"][0]
    assert first_call_delta["id"].startswith("call_") and first_call_delta["type"] == "function"
    assert result.finish_reason() == "tool_calls"
    usage = result.usage()
    assert usage is not None and result.chunks[-1]["choices"] == []
    assert usage["prompt_tokens"] > 50 and usage["completion_tokens"] > 20
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_non_streaming_agrees_with_streaming(
    server: sim_server.SimProcess, client: httpx.Client
) -> None:
    body = client.post(
        server.url + "/v1/chat/completions", content=orjson.dumps(chat_body(stream=False))
    ).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert choice["message"]["reasoning_content"] == "I will call the tool."
    call = choice["message"]["tool_calls"][0]["function"]
    assert (call["name"], call["arguments"]) == EXPECTED_CALL
    streamed = stream_chat(client, server.url, chat_body(stream=True)).usage()
    assert body["usage"]["prompt_tokens"] == streamed["prompt_tokens"]  # deterministic


def test_max_tokens_and_context_length(server: sim_server.SimProcess, client: httpx.Client) -> None:
    result = stream_chat(client, server.url, chat_body(stream=True, max_tokens=5))
    assert result.finish_reason() == "length" and result.usage()["completion_tokens"] == 5
    huge = chat_body(stream=False, messages=[{"role": "user", "content": "x" * 100_000}])
    response = client.post(server.url + "/v1/chat/completions", content=orjson.dumps(huge))
    assert (
        response.status_code == 400
        and "context length (20000 tokens)" in response.json()["message"]
    )


def test_info_endpoints_and_metrics(server: sim_server.SimProcess, client: httpx.Client) -> None:
    assert client.get(server.url + "/health").status_code == 200
    assert (
        client.get(server.url + "/v1/models").json()["data"][0]["id"] == "deepseek-ai/DeepSeek-V3.2"
    )
    for path in ("/server_info", "/get_server_info"):
        info = client.get(server.url + path).json()
        assert info["simulator"] is True and info["disaggregation_mode"] == "null"
    assert client.get(server.url + "/get_model_info").json()["architectures"] == [
        "DeepseekV32ForCausalLM"
    ]
    metrics = client.get(server.url + "/metrics").text
    assert "sglang:generation_tokens_total{" in metrics and "sglang:num_running_reqs{" in metrics


def test_abort_request_ends_the_stream_with_abort(tmp_path: Path, client: httpx.Client) -> None:
    with sim_server.single(
        tmp_path, *PARSERS, "--time-scale", "20"
    ) as slow:  # ~20x slower than modelled
        got: dict[str, object] = {}

        def consume() -> None:
            got["result"] = stream_chat(client, slow.url, chat_body(stream=True, rid="victim"))

        thread = threading.Thread(target=consume)
        thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if client.post(slow.url + "/abort_request", json={"rid": "victim"}).json()["aborted"]:
                break
            time.sleep(0.05)
        thread.join(timeout=10)
        result = got["result"]
        assert result.finish_reason() == "abort" and result.done  # type: ignore[attr-defined]


def test_raw_dsml_without_parsers(tmp_path: Path, client: httpx.Client) -> None:
    with sim_server.single(tmp_path) as raw:
        result = stream_chat(client, raw.url, chat_body(stream=True))
    content = result.text("content")
    assert content.startswith("I will call the tool.</think>\n\n<｜DSML｜function_calls>")
    assert result.calls() == [] and result.finish_reason() == "stop"


def test_sigterm_exits_promptly_mid_stream_and_port_in_use_fails(tmp_path: Path) -> None:
    with sim_server.single(tmp_path, "--time-scale", "20") as proc:
        port = proc.url.rsplit(":", 1)[1]
        taken = subprocess.run(
            [sys.executable, "-m", "repro.sim", "serve", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (
            taken.returncode != 0 and f"port {port} on 127.0.0.1 is already in use" in taken.stderr
        )
        with (
            httpx.Client(timeout=10) as c,
            c.stream("POST", proc.url + "/v1/chat/completions", json=chat_body(stream=True)) as r,
        ):
            next(r.iter_lines())  # a stream is in flight
            proc.process.send_signal(signal.SIGTERM)
            proc.process.wait(timeout=5)  # promptly: not after the stream's end


# --- PD ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_server.PdDeployment]:
    log_dir = tmp_path_factory.mktemp("pd")
    with sim_server.pd(
        log_dir, "--time-scale", "0.05", "--enable-metrics", decode_flags=PARSERS
    ) as dep:
        yield dep


def test_pd_through_repros_router(
    deployment: sim_server.PdDeployment, client: httpx.Client
) -> None:
    result = stream_chat(client, deployment.url, chat_body(stream=True))
    assert (
        result.done and result.calls() == [EXPECTED_CALL] and result.finish_reason() == "tool_calls"
    )
    body = client.post(deployment.url + "/v1/chat/completions", json=chat_body(stream=False)).json()
    assert body["usage"]["prompt_tokens"] == result.usage()["prompt_tokens"]
    prefill = client.get(deployment.prefill.url + "/metrics").text
    assert (
        'sglang:num_requests_total{model_name="deepseek-ai/DeepSeek-V3.2",engine_type="prefill"'
        in prefill
    )


def test_pd_decode_without_its_prefill_times_out(tmp_path: Path, client: httpx.Client) -> None:
    with sim_server.pd(tmp_path, "--disaggregation-bootstrap-timeout", "1") as dep:
        body = chat_body(
            stream=True,
            bootstrap_host="127.0.0.1",
            bootstrap_port=dep.bootstrap_port,
            bootstrap_room=42,
        )
        response = client.post(dep.decode.url + "/v1/chat/completions", content=json.dumps(body))
        assert response.status_code == 500 and "room 42" in response.json()["message"]


def test_a_request_larger_than_the_pool_is_refused_not_left_waiting(tmp_path: Path) -> None:
    # 0.01 GB holds 116 tokens of bf16 KV: the request could never get its pages.
    with sim_server.single(tmp_path, "--kv-pool-gb", "0.01", "--index-k-dtype", "bf16") as engine:
        response = httpx.post(
            engine.url + "/v1/chat/completions", json=chat_body(stream=False), timeout=30
        )
    assert response.status_code == 400
    assert "the pool holds 116 (--kv-pool-gb 0.01)" in response.json()["message"]
