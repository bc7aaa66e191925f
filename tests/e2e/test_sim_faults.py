"""Issue 5's mechanisms through real processes, at CI scale: direction and bounds, not counts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from repro.scenarios.agentic_coding import TOOLS, AgenticCoding
from repro.sim.model import encode_turn, plan_turn
from tests.e2e import sim_server
from tests.e2e.sim_client import chat_body, stream_chat

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
RACE = ("--enable-hierarchical-cache", "--index-k-dtype", "bf16", "--time-scale", "0.05")


def _opening(session: int) -> list[dict]:
    return AgenticCoding().session(session, 0, 80_000).opening()


def _is_corrupted(client: httpx.Client, url: str, session: int) -> bool:
    """A first turn whose raw output differs from what the scripted agent means."""
    messages = _opening(session)
    result = stream_chat(client, url, chat_body(stream=True, messages=messages, tools=TOOLS))
    assert result.status == 200 and result.done
    expected = encode_turn(plan_turn(messages, TOOLS), thinking=True).removesuffix(
        "<｜end▁of▁sentence｜>"
    )
    return result.text("content") != expected


def _first_turns(url: str, sessions: range, concurrency: int) -> int:
    limits = httpx.Limits(max_connections=concurrency + 4)
    with httpx.Client(timeout=60, limits=limits) as client, ThreadPoolExecutor(concurrency) as pool:
        return sum(pool.map(lambda s: _is_corrupted(client, url, s), sessions))


@pytest.fixture(scope="module")
def racy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sim_server.PdDeployment]:
    with sim_server.pd(tmp_path_factory.mktemp("race"), *RACE) as dep:
        yield dep


def test_index_k_race_corrupts_concurrent_sessions_in_pd(racy: sim_server.PdDeployment) -> None:
    # 48 sessions start at once; each first turn loads the shared prefix back from host.
    corrupted = _first_turns(racy.url, range(48), concurrency=48)
    assert 1 <= corrupted <= 20  # about 13 % expected, never most of them


def test_no_concurrency_no_corruption(racy: sim_server.PdDeployment) -> None:
    # One session at a time: stale reads still happen, but nothing is in flight to splice in.
    assert _first_turns(racy.url, range(100, 130), concurrency=1) == 0


def test_gate_fix_removes_the_race(tmp_path: Path) -> None:
    with sim_server.pd(tmp_path, *RACE, "--index-k-gate", "fixed") as dep:
        assert _first_turns(dep.url, range(48), concurrency=48) == 0


def _abort_streams(url: str, count: int) -> None:
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            with client.stream(
                "POST", url + "/v1/chat/completions", json=chat_body(stream=True)
            ) as response:
                next(response.iter_lines())  # first token arrived: close mid-stream


def _worker_alive(client: httpx.Client, prefill: sim_server.SimProcess) -> bool:
    return client.get(prefill.url + "/server_info").json()["internal_states"][0][
        "bootstrap_worker_alive"
    ]


@pytest.mark.parametrize("abort_fix", [False, True])
def test_abort_storm_wedges_nixl_unless_fixed(tmp_path: Path, abort_fix: bool) -> None:
    flags = [
        "--disaggregation-transfer-backend",
        "nixl",
        "--disaggregation-bootstrap-timeout",
        "3",
        "--time-scale",
        "3",
    ]
    if abort_fix:
        flags.append("--abort-fix")
    with sim_server.pd(tmp_path, *flags) as dep, httpx.Client(timeout=30) as client:
        _abort_streams(dep.url, 4)
        deadline = time.monotonic() + 10
        while _worker_alive(client, dep.prefill) and time.monotonic() < deadline and not abort_fix:
            time.sleep(0.1)
        result = stream_chat(client, dep.url, chat_body(stream=True))
        if abort_fix:
            assert (
                _worker_alive(client, dep.prefill)
                and result.done
                and result.finish_reason() == "stop"
            )
        else:
            assert not _worker_alive(client, dep.prefill)
            assert (
                result.status == 500 and result.chunks == []
            )  # no token, an error after the timeout
