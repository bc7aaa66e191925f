"""Client cost per streamed chunk: repro's ChatClient against a minimal peer, same engine, same run.

A quick check only: the peer here is this project's imitation of SGLang's bench_serving loop.
The real comparison, against the real peers (SGLang bench_serving, vllm bench serve,
GuideLLM) and a bare floor client, is bench/peer_cost.py.

The peer is what SGLang's bench_serving does per request (stream, split SSE lines, json-decode
each event, keep the text) on one shared httpx pool; repro's client also records timings,
gaps, reasoning, tool-call deltas and usage, with one client per session as the load generator
does. Both run `concurrency` sessions of turns one after another against one embedded engine
streaming one token per SSE chunk (the worst case for a client); the client's own CPU time
(this process only; the engine is another process) is divided by the chunks received.

    python bench/client_cost.py [--requests 1200] [--concurrency 80] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
import orjson

from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import Watchdog, running_watchdog
from repro.scenarios import get_scenario

# The engine is started, health-checked and stopped as the end-to-end tests do it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e import sim_server

MODEL = "bench"
ENGINE_FLAGS = ("--time-scale", "0.02", "--stream-interval", "1", "--reasoning-parser",
                "deepseek-v3", "--tool-call-parser", "deepseekv32", "--served-model-name", MODEL,
                "--log-level", "warning")  # fmt: skip


def request_bodies(count: int) -> list[bytes]:
    scenario = get_scenario("agentic-coding")
    bodies = []
    for i in range(count):
        messages = scenario.session(i, 0, 80_000).opening()
        bodies.append(orjson.dumps({"model": MODEL, "messages": messages, "tools": scenario.tools(),
                                    "stream": True, "stream_options": {"include_usage": True},
                                    "chat_template_kwargs": {"thinking": True}}))  # fmt: skip
    return bodies


async def ours(url: str, bodies: list[bytes], concurrency: int) -> int:
    """As the load generator does: `concurrency` sessions, each with its own client."""
    tls, queue, chunks = ssl.create_default_context(), list(bodies), 0

    async def session(watchdog: Watchdog) -> None:
        nonlocal chunks
        client = ChatClient(url, watchdog, 60, tls=tls)
        while queue:
            progress = StreamProgress(scheduled_at_s=0.0)
            await client.stream_chat(queue.pop(), progress, deadline_s=60)
            assert progress.done, progress.error
            chunks += progress.chunks
        await client.aclose()

    async with running_watchdog() as watchdog, anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(session, watchdog)
    return chunks


async def peer(url: str, bodies: list[bytes], concurrency: int) -> int:
    """bench_serving's loop on one shared httpx pool: stream, split lines, decode, keep text."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    http = httpx.AsyncClient(base_url=url, limits=limits, timeout=60, trust_env=False)
    queue, chunks = list(bodies), 0

    async def session() -> None:
        nonlocal chunks
        while queue:
            text = []
            async with http.stream("POST", "/v1/chat/completions", content=queue.pop()) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip() != "[DONE]":
                        event = orjson.loads(line[5:])
                        for choice in event.get("choices") or ():
                            delta = choice.get("delta") or {}
                            piece = delta.get("content") or delta.get("reasoning_content")
                            if piece or delta.get("tool_calls"):
                                text.append(piece or "")
                                chunks += 1

    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(session)
    await http.aclose()
    return chunks


def measure(run, url: str, bodies: list[bytes], concurrency: int) -> tuple[float, int, float]:
    cpu, wall = time.process_time(), time.monotonic()
    chunks = anyio.run(run, url, bodies, concurrency)
    return time.process_time() - cpu, chunks, time.monotonic() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--concurrency", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bodies = request_bodies(args.requests)
    best: dict[str, tuple[float, int, float]] = {}
    with (
        tempfile.TemporaryDirectory() as logs,
        sim_server.single(Path(logs), *ENGINE_FLAGS) as engine,
    ):
        for _ in range(args.rounds):  # alternate, keep each side's best
            for name, run in (("repro", ours), ("peer", peer)):
                cpu, chunks, wall = measure(run, engine.url, bodies, args.concurrency)
                if name not in best or cpu / chunks < best[name][0] / best[name][1]:
                    best[name] = (cpu, chunks, wall)
    load = os.getloadavg()[0]
    print(f"`python bench/client_cost.py --requests {args.requests} --concurrency {args.concurrency} "
          f"--rounds {args.rounds}`, load average {load:.2f}")  # fmt: skip
    print()
    print("| client | chunks | client CPU s | µs CPU per chunk | wall s |")
    print("|---|---|---|---|---|")
    for name, (cpu, chunks, wall) in best.items():
        print(f"| {name} | {chunks:,} | {cpu:.2f} | {cpu / chunks * 1e6:.1f} | {wall:.1f} |")
    ours_us = best["repro"][0] / best["repro"][1]
    peer_us = best["peer"][0] / best["peer"][1]
    print(f"\nratio repro / peer (CPU per chunk): {ours_us / peer_us:.2f}")


if __name__ == "__main__":
    main()
