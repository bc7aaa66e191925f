"""The client benches' yardstick: the stream server sends what it says, the floor client counts
it, and repro reads a stream as one clean final answer (one turn per session, as the bench's
comparison with the peers assumes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from repro.checkers import AssistantOutput, check_turn
from repro.harness.client import ChatClient, StreamProgress
from repro.harness.watchdog import running_watchdog
from repro.scenarios import get_scenario

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))
from peers.common import control, stream_server  # noqa: E402
from peers.stream_server import token_texts  # noqa: E402

EVENTS_BESIDES_TOKENS = 4  # the role event, the finish event, the usage event, [DONE]


@pytest.fixture(scope="module")
def server_url():
    with stream_server() as (url, _):
        yield url


@pytest.mark.parametrize("pace_ms", [0, -1, 2])  # a write per stream, per event, paced
def test_the_floor_client_counts_every_event_the_server_sends(server_url, pace_ms):
    control(server_url, "/bench/config", {"tokens": 7, "pace_ms": pace_ms})
    floor = [sys.executable, str(BENCH / "peers" / "floor_client.py"), "--url", server_url,
             "--streams", "6", "--concurrency", "3", "--body-bytes", "500"]  # fmt: skip
    done = subprocess.run(floor, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == {"streams": 6, "events": 6 * (7 + EVENTS_BESIDES_TOKENS)}
    stats = control(server_url, "/bench/stats")
    assert (stats["streams"], stats["tokens"], stats["requests"]) == (6, 42, 6)
    assert stats["request_bytes"] == 6 * 500
    # Only the whole-stream form skips the ticker, whose steps are the events' writes.
    assert (stats["steps"] > 0) == (pace_ms != 0)


@pytest.mark.anyio
async def test_repro_reads_a_paced_stream_whole_with_its_usage(server_url):
    control(server_url, "/bench/config", {"tokens": 20, "pace_ms": 1})
    async with running_watchdog() as watchdog:
        client = ChatClient(server_url, watchdog, 10)
        progress = StreamProgress(scheduled_at_s=0.0)
        await client.stream_chat(b'{"stream": true}', progress, deadline_s=10)
        await client.aclose()
    assert progress.done and progress.chunks == 20 and progress.gap_stats().count == 19
    assert "".join(progress.content) == "".join(token_texts(20))
    assert progress.usage.completion_tokens == 20 and progress.finish_reason == "length"


def test_a_long_stream_is_a_clean_answer_to_repros_checker():
    """A flagged answer would make repro retry and grow the session: turns would outnumber
    the peers' streams and the comparison would no longer be like for like."""
    text = "".join(token_texts(2048))
    output = AssistantOutput(content=text, reasoning="", tool_calls=(), finish_reason="length")
    verdict = check_turn(output, get_scenario("agentic-coding").tools())
    assert not verdict.defects


@pytest.mark.anyio
async def test_the_read_callback_bench_reads_whole_clean_streams() -> None:
    # bench/read_callback.py feeds the stream server's bytes to a connection by hand: every
    # stream must end done with all its tokens, or its per-event figure measures an error path.
    import read_callback

    reads = read_callback.stream_reads(8)
    assert len(reads) == 9  # the head, then one read per token (the last with the tail)
    per_event_s = await read_callback.one_round(reads, streams=3)
    assert 0 < per_event_s < 0.01
