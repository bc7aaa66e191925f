"""What an idle client pays for waking up: CPU per second of a bare `call_later` loop at a
few periods, and of repro's loop-lag probe (harness.load.loop_probe) alone, under uvloop.

    python bench/loop_wakeup_cost.py [--seconds 5]

Why the probe runs every PROBE_EVERY_S and as a timer callback (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import anyio
import uvloop

from repro.harness.load.clock import RunClock
from repro.harness.load.loop_probe import PROBE_EVERY_S, LoopProbe


async def bare_timer(every_s: float, seconds: float) -> tuple[float, int]:
    loop, ticks = asyncio.get_running_loop(), [0]

    def tick() -> None:
        ticks[0] += 1
        loop.call_later(every_s, tick)

    loop.call_later(every_s, tick)
    cpu = time.process_time()
    await asyncio.sleep(seconds)
    return (time.process_time() - cpu) / seconds * 1000, ticks[0]


async def probe_alone(seconds: float) -> tuple[float, int]:
    probe = LoopProbe(RunClock())
    async with anyio.create_task_group() as group:
        group.start_soon(probe.run)
        cpu = time.process_time()
        await anyio.sleep(seconds)
        used = time.process_time() - cpu
        group.cancel_scope.cancel()
    return used / seconds * 1000, probe.lags.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    print("| what | CPU ms per second | wake-ups |\n|---|---|---|")
    for every_s in (0.01, 0.05, 0.1):
        ms, n = uvloop.run(bare_timer(every_s, args.seconds))
        print(f"| bare call_later every {every_s * 1000:.0f} ms | {ms:.1f} | {n} |")
    ms, n = anyio.run(probe_alone, args.seconds, backend_options={"use_uvloop": True})
    print(f"| repro's LoopProbe (every {PROBE_EVERY_S * 1000:.0f} ms) | {ms:.1f} | {n} |")


if __name__ == "__main__":
    main()
