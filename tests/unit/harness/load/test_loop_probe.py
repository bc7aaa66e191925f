"""The loop-lag probe: it sees a blocked event loop, and pools several processes' figures."""

from __future__ import annotations

import time

import anyio
import pytest

from repro.errors import StoreError
from repro.harness.load.clock import RunClock
from repro.harness.load.loop_probe import LoopProbe, pooled


def spin(seconds: float) -> None:
    """Burn CPU in the event loop's thread, as a hog does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


pytestmark = pytest.mark.anyio


async def test_a_blocked_loop_shows_as_lag_and_cpu() -> None:
    windows: list[dict] = []
    cpu_before_s = time.process_time()
    probe = LoopProbe(RunClock(), every_s=0.01, window_s=0.3, on_window=windows.append)
    async with anyio.create_task_group() as group:
        group.start_soon(probe.run)
        await anyio.sleep(0.1)
        for _ in range(4):
            spin(0.12)  # the loop is held: the probe wakes at least this late
            await anyio.sleep(0.05)
        group.cancel_scope.cancel()
    figures = probe.figures()
    cpu_s = time.process_time() - cpu_before_s
    assert figures.lag_max_s >= 0.1 and figures.lag_p99_s >= 0.09 and figures.samples >= 8
    # The spinning is the process's CPU (how much a loaded machine grants it varies).
    assert 0.9 * cpu_s <= figures.cpu_s <= cpu_s and figures.cpu_s > 0.05
    assert windows and max(w["lag_max_ms"] for w in windows) >= 100


async def test_a_window_that_cannot_be_written_fails_the_probe_task() -> None:
    def full_disk(_window: dict) -> None:
        raise StoreError("Cannot write client_load.jsonl: No space left on device")

    probe = LoopProbe(RunClock(), every_s=0.01, window_s=0.05, on_window=full_disk)
    with pytest.raises(StoreError, match="No space left"):
        with anyio.fail_after(5):
            await probe.run()


async def test_figures_of_several_workers_pool_their_lags() -> None:
    quiet, busy = LoopProbe(RunClock()), LoopProbe(RunClock())
    for _ in range(99):
        quiet.lags.add(0.001)
    busy.lags.add(0.2)
    merged = pooled([quiet.figures(), busy.figures()])
    assert merged.samples == 100 and merged.lag_max_s == pytest.approx(0.2)
    assert merged.lag_p50_s == pytest.approx(0.001, rel=0.03)
    assert merged.lag_p99_s == pytest.approx(0.001, rel=0.03)  # 99 of 100 are quiet
