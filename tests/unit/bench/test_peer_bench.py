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
from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog
from repro.scenarios import get_scenario

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))
from peers.common import control, stream_server  # noqa: E402
from peers.stream_server import token_texts  # noqa: E402

EVENTS_BESIDES_TOKENS = 4  # the role event, the finish event, the usage event, [DONE]


@pytest.fixture(scope="module")
def server():
    with stream_server() as (url, process):
        yield url, process


@pytest.fixture
def server_url(server):
    return server[0]


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


@pytest.mark.parametrize("fresh, connections", [(False, 3), (True, 6)])
def test_the_chatclient_alone_keeps_or_renews_its_connections_as_told(
    server_url, fresh, connections
):
    control(server_url, "/bench/config", {"tokens": 5, "pace_ms": 1})
    chat = [sys.executable, str(BENCH / "peers" / "chatclient_only.py"), "--url", server_url,
            "--streams", "6", "--concurrency", "3"] + ["--connection-per-stream"] * fresh  # fmt: skip
    done = subprocess.run(chat, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == {"streams": 6, "chunks": 6 * 5}
    stats = control(server_url, "/bench/stats")
    assert (stats["streams"], stats["connections"] - 1) == (6, connections)  # less the stats call


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
    assert per_event_s > 0


@pytest.mark.parametrize("part", ["decode", "decode-minimal"])
def test_the_read_callback_bench_decodes_every_events_text(part: str) -> None:
    # --part decode(-minimal) must price a real decode of the stream server's events: each
    # decoder gives back the event's text, so its count is not that of a failing call.
    import read_callback

    payloads = read_callback.event_payloads(8)
    decode = read_callback.DECODERS[part]
    texts = [decode(payload).choices[0].delta.content for payload in payloads]
    assert texts == token_texts(8)
    assert read_callback.decode_round(part, payloads, streams=3) > 0


def test_a_client_run_keeps_the_user_space_part_of_its_cpu(server, tmp_path: Path) -> None:
    from peers.common import run_client

    url, process = server
    floor = [sys.executable, str(BENCH / "peers" / "floor_client.py"), "--url", url,
             "--streams", "16", "--concurrency", "4"]  # fmt: skip
    control(url, "/bench/config", {"tokens": 64, "pace_ms": 0})
    # The server is the test process's child too: kept, so orphans are not awaited for it.
    run = run_client(floor, tmp_path / "floor.log", cwd=tmp_path, env={}, keep={process.pid},
                     timeout_s=60)  # fmt: skip
    assert run.returncode == 0, run.log.read_text()
    assert 0 < run.user_s < run.cpu_s  # a socket client always spends some time in the kernel


def test_peer_cost_splits_each_marginal_into_user_and_system() -> None:
    import peer_cost

    def row(client: str, tokens_per_stream: int, user_s: float, system_s: float):
        return peer_cost.Measurement(client, 0, 5.0, tokens_per_stream, user_s + system_s, 1.0,
                                     tokens_per_stream * 1000, 1000, 0, 0.0, 0.0, user_s)  # fmt: skip

    rows = [row("floor", 256, 1.0, 2.0), row("floor", 512, 2.0, 4.0),
            row("repro", 256, 2.0, 2.0), row("repro", 512, 4.5, 4.0)]  # fmt: skip
    clients = [c for c in peer_cost.CLIENTS if c.name in ("floor", "repro")]
    lines = peer_cost.user_and_system(rows, clients, [5.0], 256, 512)
    # 256,000 more tokens: the floor 1 s more user and 2 s more system, repro 2.5 and 2.
    assert lines[-1] == "- paced 5 ms: floor 3.9 / 7.8; repro 9.8 / 7.8"
    old_rows = [peer_cost.Measurement(**{**r.__dict__, "user_s": None}) for r in rows]
    assert peer_cost.user_and_system(old_rows, clients, [5.0], 256, 512) == []
