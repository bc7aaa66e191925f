"""One repro worker holding `sessions` sessions against --url, with an event-loop lag probe.

`repro run --url` in-process (repro.harness.drive: sessions, checking, run folder) on
uvloop as `repro run` does, plus a probe task that sleeps 10 ms at a time and records how
late it wakes: the lag every coroutine of the run suffers, hence how much TTFT and the
inter-token gaps repro measures are its own backlog.

    python bench/peers/scale_worker.py --url URL --sessions N --out DIR [--ramp-up 2]
        [--workers 1]

Prints one JSON line: loop lag percentiles over the whole run and over the steady window (all
sessions started, none finished), the process's CPU share of one core, and repro's figures,
among them its own loop lag and CPU (with --workers above 1, the probe here watches only the
parent process, which runs no session: repro's own figures are the workers').
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import anyio
import pyarrow.parquet as pq

from repro.harness import Endpoint, drive
from repro.spec import RunSpec

PROBE_INTERVAL_S = 0.01


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank); 0 for no values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else 0.0


async def measure(url: str, sessions: int, out: Path, ramp_up_s: float, workers: int) -> dict:
    spec = RunSpec.build(
        url=url, model="bench", sessions=sessions, ramp_up_s=ramp_up_s, workers=workers
    )
    endpoint = Endpoint(url, {}, "external")
    lags: list[tuple[float, float]] = []  # (when, how late) since the start
    started, cpu_started = time.perf_counter(), time.process_time()

    async def probe() -> None:
        while True:
            before = time.perf_counter()
            await anyio.sleep(PROBE_INTERVAL_S)
            now = time.perf_counter()
            lags.append((now - started, now - before - PROBE_INTERVAL_S))

    async with anyio.create_task_group() as group:
        group.start_soon(probe)
        summary = await drive(spec, endpoint, out)
        group.cancel_scope.cancel()
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    # The run clock starts a moment after ours: close enough for a window of seconds.
    ended = pq.read_table(out / "turns.parquet", columns=["ended_at_s"]).column(0).to_pylist()
    first_end_s = min(ended, default=wall_s)
    steady = [lag for at, lag in lags if ramp_up_s + 0.5 <= at <= first_end_s]
    every = [lag for _, lag in lags]
    latency = summary.latency_s
    return {
        "sessions": sessions,
        "turns_ok": summary.turns,
        "errors": summary.errors,
        "wall_s": wall_s,
        "cpu_share": cpu_s / wall_s,
        "lag_p50_ms": percentile(steady, 50) * 1000,
        "lag_p99_ms": percentile(steady, 99) * 1000,
        "lag_p99_whole_ms": percentile(every, 99) * 1000,
        "lag_max_ms": max(every, default=0.0) * 1000,
        "steady_s": max(first_end_s - ramp_up_s - 0.5, 0.0),
        "workers": summary.client_workers,
        # repro's own probe (in every worker, pooled): the whole load, ramp-up included.
        "repro_lag_p99_ms": summary.client_loop_lag_s.get("p99", 0.0) * 1000,
        "repro_lag_max_ms": summary.client_loop_lag_s.get("max", 0.0) * 1000,
        "repro_cpu_share": summary.client_cpu_share,
        "send_lag_p99_ms": summary.send_lag_p99_s * 1000,
        "client_was_slow": summary.client_was_slow,
        "ttft_p99_ms": latency.get("ttft", {}).get("p99", 0.0) * 1000,
        "itl_p50_ms": latency.get("itl", {}).get("p50", 0.0) * 1000,
        "itl_p99_ms": latency.get("itl", {}).get("p99", 0.0) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the run folder (new)")
    parser.add_argument("--ramp-up", type=float, default=2.0, help="seconds to start them all")
    parser.add_argument("--workers", type=int, default=1, help="repro's --workers")
    args = parser.parse_args()
    figures = anyio.run(measure, args.url, args.sessions, args.out, args.ramp_up, args.workers,
                        backend_options={"use_uvloop": True})  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
