"""Issue 42: what `repro record` adds to time to first token at 80 sessions, against a direct
connection in the same run, interleaved.

    flock /tmp/repro-bench.lock python bench/record_overhead.py [--sessions 80]
        [--context-max 80000] [--tokens 32] [--pace-ms 10] [--rounds 3]

One upstream, one `repro record` in front of it (a real process, as a user starts it), and
`--sessions` agent sessions in one client process sending the built-in agent's scripted
requests (bodies growing to `--context-max`, about 4 bytes a token) with repro's own
ChatClient, one connection per session and path. Every request goes twice, one after the
other: once straight to the upstream and once through the recorder, the order alternating
turn by turn, so both legs see the same body, the same load and nearly the same moment.

The upstream is a stub in this file (`--serve-stub`, its own process): it writes the
answer's head and first token as soon as a request has arrived, then the rest paced, so a
leg's time to first token is that path's own cost (client, hops, the recorder), not an
engine's batching, which would bury 2 ms in tens of milliseconds of queueing noise.

Prints, per round and pooled: TTFT p50 / p90 / p99 / max of each leg and the recorded leg's
excess at each; the paired per-request differences; the recorder's own CPU; and what its
trace holds (sessions, turns, checked by `repro trace check`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import orjson

REPO = Path(__file__).resolve().parent.parent

# --- the stub upstream -----------------------------------------------------------------


def _sse(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
    event = f"data: {data}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(event), event)


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "stub", "object": "chat.completion.chunk", "model": "stub",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def serve_stub(port: int, tokens: int, pace_ms: float) -> None:
    import httptools
    import uvloop

    head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked"
            b"\r\n\r\n" + _sse(_chunk({"role": "assistant", "content": ""})))  # fmt: skip
    words = [_sse(_chunk({"content": f" word{i % 7}"})) for i in range(tokens)]
    tail = _sse(_chunk({}, "stop")) + _sse({**_chunk({}), "choices": [],
                                            "usage": {"prompt_tokens": 1, "completion_tokens": tokens}})  # fmt: skip
    tail += _sse("[DONE]") + b"0\r\n\r\n"
    ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"

    class Stub(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.parser = httptools.HttpRequestParser(self)
            self.url = b""

        def data_received(self, data: bytes) -> None:
            self.parser.feed_data(data)

        def on_url(self, url: bytes) -> None:
            self.url = url

        def on_message_complete(self) -> None:
            if not self.url.endswith(b"/chat/completions"):
                self.transport.write(ok)  # /health, /v1/models
                return
            self.transport.write(head + words[0])  # the first token at once
            loop = asyncio.get_running_loop()
            for i in range(1, tokens):
                loop.call_later(pace_ms * i / 1000, self.transport.write, words[i])
            loop.call_later(pace_ms * tokens / 1000, self.transport.write, tail)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Stub, "127.0.0.1", port, backlog=4096)
        print("ready", flush=True)
        await server.serve_forever()

    uvloop.run(main())


# --- the client --------------------------------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    sink = log.open("wb")
    return subprocess.Popen(argv, stdout=sink, stderr=sink, start_new_session=True)


def wait_ready(url: str) -> None:
    import httpx

    for _ in range(300):
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    sys.exit(f"{url} did not come up")


async def drive(
    direct: str, recorded: str, sessions: int, context_max: int, seed: int
) -> tuple[list[float], list[float]]:
    """TTFT of every request on each leg (seconds), in request order, paired by index."""
    from repro.harness.load.client import ChatClient
    from repro.harness.load.clock import RunClock
    from repro.harness.load.request_body import chat_body
    from repro.harness.load.stream_progress import StreamProgress
    from repro.harness.load.watchdog import running_watchdog
    from repro.scenarios import get_scenario
    from repro.spec import RunSpec

    spec = RunSpec(max_output_tokens=64)
    scenario = get_scenario("agentic-coding")
    pairs: list[tuple[float, float]] = []
    clock = RunClock()

    async def ask(client: ChatClient, body: bytes) -> float:
        progress = StreamProgress(scheduled_at_s=clock.now())
        await client.stream_chat(body, progress, deadline_s=120)
        if progress.first_token_at_s is None:
            raise RuntimeError(f"no first token: {progress.outcome} {progress.error}")
        return progress.first_token_at_s - progress.sent_at_s

    async def session(i: int, watchdog) -> None:
        plan = scenario.scripted(i, seed, context_max, True)
        clients = {url: ChatClient(url, watchdog, 120.0) for url in (direct, recorded)}
        try:
            await anyio.sleep(i * 0.025)  # started over two seconds, as a run ramps up
            turn = 0
            while True:
                body = orjson.dumps(chat_body(spec, "stub", plan.session.tools, plan.messages))
                order = (direct, recorded) if turn % 2 == 0 else (recorded, direct)
                got = {url: await ask(clients[url], body) for url in order}
                pairs.append((got[direct], got[recorded]))
                turn += 1
                if not plan.advance():
                    return
        finally:
            for client in clients.values():
                await client.aclose()

    async with running_watchdog(clock) as watchdog, anyio.create_task_group() as group:
        for i in range(sessions):
            group.start_soon(session, i, watchdog)
    return [p[0] for p in pairs], [p[1] for p in pairs]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def row(name: str, direct: list[float], recorded: list[float]) -> str:
    ms = 1000
    cells = []
    for q in (0.5, 0.9, 0.99):
        d, r = quantile(direct, q) * ms, quantile(recorded, q) * ms
        cells.append(f"{d:.2f} / {r:.2f} ({r - d:+.2f})")
    d, r = max(direct) * ms, max(recorded) * ms
    cells.append(f"{d:.1f} / {r:.1f}")
    paired = [(b - a) * ms for a, b in zip(direct, recorded, strict=True)]
    cells.append(f"{statistics.median(paired):+.2f} / {quantile(paired, 0.99):+.2f}")
    return f"| {name} | {len(direct)} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=80)
    parser.add_argument("--context-max", type=int, default=80_000)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--pace-ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-stub", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stub is not None:
        serve_stub(args.serve_stub, args.tokens, args.pace_ms)
        return
    folder = Path(tempfile.mkdtemp(prefix="record-overhead-"))
    up, rec = free_port(), free_port()
    trace = folder / "trace.jsonl"
    stub = start([sys.executable, __file__, "--serve-stub", str(up), "--tokens", str(args.tokens),
                  "--pace-ms", str(args.pace_ms)], folder / "stub.log")  # fmt: skip
    recorder = start([sys.executable, "-m", "repro", "record", "--upstream", f"http://127.0.0.1:{up}",
                      "--port", str(rec), "--out", str(trace)], folder / "recorder.log")  # fmt: skip
    direct_url, recorded_url = f"http://127.0.0.1:{up}", f"http://127.0.0.1:{rec}"
    lines = []
    pooled: tuple[list[float], list[float]] = ([], [])
    loads = []
    try:
        wait_ready(direct_url)
        wait_ready(recorded_url)
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            direct, recorded = anyio.run(drive, direct_url, recorded_url, args.sessions,
                                         args.context_max, r)  # fmt: skip
            pooled[0].extend(direct)
            pooled[1].extend(recorded)
            lines.append(row(f"round {r + 1} (load {loads[-1]:.2f})", direct, recorded))
            print(lines[-1], flush=True)
    finally:
        os.killpg(recorder.pid, signal.SIGTERM)
        recorder.wait(timeout=30)
        os.killpg(stub.pid, signal.SIGTERM)
        stub.wait(timeout=10)
    check = subprocess.run([sys.executable, "-m", "repro", "trace", "check", str(trace)],
                           capture_output=True, text=True)  # fmt: skip
    said = (folder / "recorder.log").read_text().strip().splitlines()[-1]
    p99 = (quantile(pooled[1], 0.99) - quantile(pooled[0], 0.99)) * 1000
    print()
    print(f"`flock /tmp/repro-bench.lock python bench/record_overhead.py --sessions {args.sessions} "
          f"--context-max {args.context_max} --tokens {args.tokens} --pace-ms {args.pace_ms} "
          f"--rounds {args.rounds}` — {time.strftime('%Y-%m-%d %H:%M')}; uptime before: "
          f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")  # fmt: skip
    print()
    print(
        "| round | requests per leg | TTFT p50 ms direct / recorded (excess) | p90 | p99 | max | paired difference p50 / p99 ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)
    print(row("pooled", *pooled))
    print()
    print(
        f"recorded leg's p99 excess, pooled: {p99:+.2f} ms ({'under' if p99 < 2 else 'NOT under'} 2 ms)"
    )
    print(f"recorder: {said}")
    print(f"trace check: {check.stdout.strip() or check.stderr.strip()}")


if __name__ == "__main__":
    main()
