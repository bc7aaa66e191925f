"""CPU per token of three ways to read the same SSE streams, each decoding every event once.

Against bench/peers/stream_server.py, `concurrency` connections (one per session, kept alive)
stream `streams` responses of `tokens` events, paced or not. Each way decodes every event with
the chunk schema (repro.harness.load.chunk) and counts the tokens; only the reading differs:

- httpx `aiter_lines` (what repro's client did before): a line iterator over httpx's
  decoded text stream;
- httpx `aiter_raw` with the SSE lines split on bytes: httpx's lowest public byte stream;
- repro's client now: an asyncio protocol whose read callback parses HTTP (httptools) and
  the events, the waiting coroutine woken once per response (repro.harness.load.sse_connection).

The figure is this process's CPU (user+system) per token, median over interleaved rounds; the
marginal one (long streams minus short, per extra token) leaves the per-request cost out.

    python bench/stream_read.py [--rounds 3] [--streams 256] [--concurrency 64] [--pace-ms 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.common import control, stream_server

from repro.harness.load.chunk import decode_chunk
from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog

BODY = b'{"model": "bench", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
Session = Callable[[str, int], Awaitable[int]]  # (url, requests) -> tokens read


def _tokens_in(line: bytes | str, count: list[int]) -> None:
    data = line[5:] if isinstance(line, bytes) else line[5:].encode()
    if data.strip() != b"[DONE]":
        event = decode_chunk(data)
        if event.choices and event.choices[0].delta and event.choices[0].delta.content:
            count[0] += 1


async def httpx_lines(url: str, requests: int) -> int:
    count = [0]
    async with httpx.AsyncClient(base_url=url, timeout=None, trust_env=False) as http:
        for _ in range(requests):
            async with http.stream("POST", "/v1/chat/completions", content=BODY) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        _tokens_in(line, count)
    return count[0]


async def httpx_raw(url: str, requests: int) -> int:
    count = [0]
    async with httpx.AsyncClient(base_url=url, timeout=None, trust_env=False) as http:
        for _ in range(requests):
            async with http.stream("POST", "/v1/chat/completions", content=BODY) as response:
                tail = b""
                async for raw in response.aiter_raw():
                    lines = (tail + raw).split(b"\n")
                    tail = lines.pop()
                    for line in lines:
                        if line.startswith(b"data:"):
                            _tokens_in(line, count)
    return count[0]


async def repro_client(url: str, requests: int) -> int:
    tokens = 0
    async with running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, 60)
        for _ in range(requests):
            progress = StreamProgress(scheduled_at_s=0.0)
            await client.stream_chat(BODY, progress, deadline_s=300)
            assert progress.done, progress.error
            tokens += progress.chunks
        await client.aclose()
    return tokens


WAYS: dict[str, Session] = {
    "httpx aiter_lines (repro before)": httpx_lines,
    "httpx aiter_raw, SSE split on bytes": httpx_raw,
    "read-callback protocol + httptools (repro now)": repro_client,
}


async def measure(way: Session, url: str, streams: int, concurrency: int) -> tuple[float, int]:
    tokens = [0]

    async def one(requests: int) -> None:
        read = await way(url, requests)  # not `tokens[0] += await`: it reads tokens[0] first
        tokens[0] += read

    cpu = time.process_time()
    async with anyio.create_task_group() as group:
        for i in range(concurrency):
            group.start_soon(one, streams // concurrency + (i < streams % concurrency))
    return time.process_time() - cpu, tokens[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--long-tokens", type=int, default=512)
    parser.add_argument("--pace-ms", type=float, default=5.0)
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in WAYS}
    load_before = os.getloadavg()[0]
    with stream_server() as (url, _):
        for round_ in range(args.rounds):
            order = list(WAYS.items())
            order = order[round_ % len(order) :] + order[: round_ % len(order)]
            for name, way in order:
                per_length = []
                for tokens in (args.tokens, args.long_tokens):
                    control(url, "/bench/config", {"tokens": tokens, "pace_ms": args.pace_ms})
                    per_length.append(anyio.run(measure, way, url, args.streams,
                                                args.concurrency,
                                                backend_options={"use_uvloop": True}))  # fmt: skip
                (cpu_a, n_a), (cpu_b, n_b) = per_length
                rows[name].append((cpu_b / n_b * 1e6, (cpu_b - cpu_a) / (n_b - n_a) * 1e6))
                print(f"round {round_ + 1} {name}: {rows[name][-1][0]:.2f} µs per token, "
                      f"marginal {rows[name][-1][1]:.2f}", flush=True)  # fmt: skip
    pace = "unpaced" if args.pace_ms == 0 else f"paced {args.pace_ms:g} ms"
    command = f"python bench/stream_read.py {' '.join(sys.argv[1:])}".strip()
    print(f"\n`{command}` — {time.strftime('%Y-%m-%d')}, {pace}, {args.streams} streams, "
          f"{args.concurrency} at once, median of {args.rounds}; load average "
          f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after.\n")  # fmt: skip
    print(f"| way of reading | µs CPU per token ({args.long_tokens}-token streams) | marginal |")
    print("|---|---|---|")
    for name, values in rows.items():
        total = statistics.median(v[0] for v in values)
        marginal = statistics.median(v[1] for v in values)
        print(f"| {name} | {total:.2f} | {marginal:.2f} |")


if __name__ == "__main__":
    main()
