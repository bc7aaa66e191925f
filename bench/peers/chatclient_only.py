"""repro's ChatClient alone: the HTTP and SSE part of `repro run`, without sessions, checking
or the run folder, driven as the load generator drives it (a client per session).

    python bench/peers/chatclient_only.py --url http://127.0.0.1:PORT [--streams 640]
        [--concurrency 64] [--connection-per-stream]

By default each of the `concurrency` tasks keeps one connection for all its streams. With
--connection-per-stream each stream opens and closes its own, as `repro run` does when a
session is a single turn (the peer bench's workload): the difference between the two prices
the connection pattern alone, apart from sessions, checking and the run folder.

Every request is the first turn of an agentic-coding session, built as the load generator
builds it. Prints one JSON line (streams finished, chunks received); exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys

import anyio
import orjson

from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import Watchdog, running_watchdog
from repro.scenarios import get_scenario


def first_turn_body(session_id: int) -> bytes:
    """The body `repro run` sends for a session's first turn (LoadGenerator._request)."""
    scenario = get_scenario("agentic-coding")
    messages = scenario.session(session_id, 0, 80_000).opening()
    return orjson.dumps({"model": "bench", "messages": messages, "tools": scenario.tools(),
                         "stream": True, "stream_options": {"include_usage": True},
                         "temperature": 0, "max_tokens": 2048,
                         "chat_template_kwargs": {"thinking": True},
                         "separate_reasoning": True})  # fmt: skip


async def run(url: str, streams: int, concurrency: int, fresh: bool) -> tuple[int, int]:
    tls = ssl.create_default_context()
    left, done, chunks = streams, 0, 0

    async def session(watchdog: Watchdog) -> None:
        nonlocal left, done, chunks
        client = ChatClient(url, watchdog, 60, tls=tls)
        while left > 0:
            left -= 1
            progress = StreamProgress(scheduled_at_s=watchdog.clock.now())
            await client.stream_chat(first_turn_body(left), progress, deadline_s=120)
            if progress.done:
                done, chunks = done + 1, chunks + progress.chunks
            if fresh:
                await client.aclose()
                client = ChatClient(url, watchdog, 60, tls=tls)
        await client.aclose()

    async with running_watchdog() as watchdog, anyio.create_task_group() as group:
        for _ in range(min(concurrency, streams)):
            group.start_soon(session, watchdog)
    return done, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--streams", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--connection-per-stream", action="store_true",
                        help="open and close a connection for each stream")  # fmt: skip
    args = parser.parse_args()
    done, chunks = anyio.run(run, args.url, args.streams, args.concurrency,
                             args.connection_per_stream,
                             backend_options={"use_uvloop": True})  # fmt: skip
    print(json.dumps({"streams": done, "chunks": chunks}))
    if done != args.streams:
        sys.exit(1)


if __name__ == "__main__":
    main()
