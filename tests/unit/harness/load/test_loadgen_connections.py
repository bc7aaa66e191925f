"""`repro run`'s sessions share connections as a client's pool would: a session that ends
hands its open connection to the next, so a run opens as many as it has sessions in flight."""

from __future__ import annotations

import sys

import anyio
import pytest

from tests.unit.harness.load.test_client import chunk, sse
from tests.unit.harness.scripted_server import Scripted, scripted_server

pytestmark = pytest.mark.anyio

FINAL_ANSWER = sse(  # a clean reply without tool calls ends a session after one turn
    chunk(role="assistant", content="The patch is in and the tests pass."),
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 9, "total_tokens": 1209}},
    "[DONE]",
)


async def test_a_session_goes_on_with_the_connection_a_finished_one_left_open(tmp_path):
    scripted = Scripted([(200, FINAL_ANSWER)])
    async with scripted_server([], scripted) as url:
        run = await anyio.run_process(
            [sys.executable, "-m", "repro", "run", "--url", url, "--model", "m",
             "--sessions", "12", "--concurrency", "3", "--ramp-up", "0",
             "--out", str(tmp_path / "run")],
            check=False,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert len(scripted.requests) == 12
    assert len(set(scripted.request_connections)) == 3  # one per session in flight
