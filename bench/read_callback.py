"""CPU per event of repro's read callback alone: no socket, no event loop wake-ups.

A paced stream reaches the client one event per read; what repro adds to the floor client per
token is the Python that runs in `SseConnection.data_received` for that read (HTTP framing,
the SSE line, decoding the event, folding it into the request's progress, the read's time).
This bench feeds a connection the exact bytes bench/peers/stream_server.py sends, one HTTP
chunk per call, and times the calls with the process's CPU clock; the figure is then the
turn's own end work (the gap figures) included, per event. Without the kernel's and the
loop's share, which swing by half between runs on a shared VM (bench/RESULTS.md, peer_cost),
it is steadier, though on this machine's VM the CPU clock itself still swung by up to 2x
between identical runs (2026-12-02). `--instructions` counts instead: the run goes twice
under valgrind's callgrind, at two stream counts, and the difference of the instructions
executed, per event, is repro's work alone (start-up and imports cancel), the same on every
run. Compare two commits by pointing PYTHONPATH at each.

`--part` isolates one share of the callback: `decode` runs only repro's chunk decoder over
the same events' JSON, `decode-minimal` a decoder whose schema holds nothing but
`choices[].delta.content`, the least any typed decode of these events costs (each with its
loop, about a hundred instructions).

    python bench/read_callback.py [--tokens 512] [--streams 2000] [--rounds 7]
    python bench/read_callback.py --instructions [--tokens 512] [--part decode]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import orjson
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.stream_server import HEAD, _tail, _sse, _chunk, token_texts  # noqa: I001

from repro.harness.load.chunk import decode_chunk
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.sse_connection import SseConnection


class _Transport(asyncio.Transport):
    """Takes the request and drops it: the response is fed by hand."""

    def writelines(self, data: object) -> None:
        pass

    def abort(self) -> None:
        pass


def stream_reads(tokens: int) -> list[bytes]:
    """One stream's reads as a paced server sends them: the head, one event each, the tail."""
    events = [_sse(_chunk({"content": text})) for text in token_texts(tokens)]
    return [HEAD, *events[:-1], events[-1] + _tail(1000, tokens)]


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None


class _Choice(msgspec.Struct, gc=False):
    delta: _Delta | None = None


class _ContentOnly(msgspec.Struct, gc=False):
    """The least a typed decode can ask of an event: its text and nothing else."""

    choices: list[_Choice] | None = None


DECODERS = {"decode": decode_chunk, "decode-minimal": msgspec.json.Decoder(_ContentOnly).decode}
PARTS = ("callback", *DECODERS)


def event_payloads(tokens: int) -> list[bytes]:
    """The JSON of one stream's text events, as the decoder is handed it."""
    return [orjson.dumps(_chunk({"content": text})) for text in token_texts(tokens)]


def decode_round(part: str, payloads: list[bytes], streams: int) -> float:
    """CPU seconds per event for decoding `streams` streams' events alone."""
    decode = DECODERS[part]
    started = time.process_time()
    for _ in range(streams):
        for payload in payloads:
            decode(payload)
    return (time.process_time() - started) / (streams * len(payloads))


def gap_figures(progress: StreamProgress) -> object:
    """What the load generator asks of a finished turn's timing (loadgen's record)."""
    stats = getattr(progress, "gap_stats", None)  # older commits kept running figures
    return stats() if callable(stats) else progress.gaps


async def one_round(reads: list[bytes], streams: int) -> float:
    """CPU seconds per event for `streams` streams read through one connection (inside a
    running loop, as repro's are, though nothing here awaits)."""
    connection = SseConnection(t0=time.perf_counter())
    connection.connection_made(_Transport())
    started = time.process_time()
    for _ in range(streams):
        progress = StreamProgress(scheduled_at_s=0.0)
        done = connection.send([b""], progress, abort_after=None, max_bytes=1 << 30)
        for data in reads:
            connection.data_received(data)
        assert done.done() and progress.done, progress.error
        gap_figures(progress)
    spent = time.process_time() - started
    return spent / (streams * (len(reads) - 1))


async def measure(reads: list[bytes], streams: int, rounds: int) -> list[float]:
    await one_round(reads, max(streams // 10, 1))  # warm-up: caches, numpy's first call
    return [await one_round(reads, streams) for _ in range(rounds)]


def instructions_per_event(tokens: int, part: str, few: int = 20, more: int = 60) -> float:
    """Instructions executed per event, from two callgrind runs of `once` (few, more streams)."""
    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (apt install valgrind)")
    counts = []
    for streams in (few, more):
        # The interpreter's own binary: valgrind would otherwise trace a launcher (pyenv).
        argv = [
            sys.executable,
            __file__,
            "--once",
            "--tokens",
            str(tokens),
            "--streams",
            str(streams),
            "--part",
            part,
        ]
        # One BLAS thread: numpy's idle pool threads would add their spinning to the count.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                              capture_output=True, text=True, env=env)  # fmt: skip
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            sys.exit(f"valgrind failed (exit {done.returncode}): {done.stderr[-800:]}")
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / ((more - few) * tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=512, help="events with text per stream")
    parser.add_argument("--streams", type=int, default=2000, help="per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--part", choices=PARTS, default="callback",
                        help="the whole read callback, or only the decoding of its events")  # fmt: skip
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per event under valgrind instead of timing")  # fmt: skip
    parser.add_argument(
        "--once", action="store_true", help=argparse.SUPPRESS
    )  # one pass, no output
    args = parser.parse_args()
    what = "read callback" if args.part == "callback" else f"{args.part} alone"
    if args.once:
        if args.part == "callback":
            uvloop.run(one_round(stream_reads(args.tokens), args.streams))
        else:
            decode_round(args.part, event_payloads(args.tokens), args.streams)
        return
    if args.instructions:
        count = instructions_per_event(args.tokens, args.part)
        print(f"{what}: {count:,.0f} instructions per event, {args.tokens}-token streams")
        return
    if args.part == "callback":
        per_event = uvloop.run(measure(stream_reads(args.tokens), args.streams, args.rounds))
    else:
        payloads = event_payloads(args.tokens)
        per_event = [decode_round(args.part, payloads, args.streams) for _ in range(args.rounds)]
    print(
        f"{what}: {statistics.median(per_event) * 1e6:.3f} us CPU per event "
        f"(median of {args.rounds}; rounds {min(per_event) * 1e6:.3f}–"
        f"{max(per_event) * 1e6:.3f}), {args.tokens}-token streams"
    )


if __name__ == "__main__":
    main()
