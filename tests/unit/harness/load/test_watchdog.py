"""The watchdog counts only time repro ran: a blocked or stopped repro is no wedge, no stall."""

from __future__ import annotations

import re
import time

import anyio
import pytest

from repro.harness.load.clock import RunClock
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import Watchdog
from repro.records.turn import TurnOutcome

pytestmark = pytest.mark.anyio

TICK_S = 0.05


async def watch_one_request(
    watchdog: Watchdog, *, deadline_s: float, idle_s: float, during: object
) -> tuple[StreamProgress, bool]:
    """One open request for the duration of `during()`; its progress and whether it was cut."""
    progress = StreamProgress(scheduled_at_s=0.0)
    async with anyio.create_task_group() as group:
        group.start_soon(watchdog.run)
        with watchdog.watching(progress, deadline_s, idle_s) as scope:
            await during(progress)  # type: ignore[operator]
        group.cancel_scope.cancel()
    return progress, scope.cancelled_caught


async def test_a_blocked_repro_is_set_aside_not_a_stall_nor_a_wedge() -> None:
    watchdog = Watchdog(RunClock(), stall_after_s=0.5, tick_s=TICK_S)

    async def blocked(progress: StreamProgress) -> None:
        await anyio.sleep(0.1)
        time.sleep(1.5)  # the event loop does not run: as under SIGSTOP or a starved CPU
        await anyio.sleep(0.3)  # the engine goes on streaming after the pause
        progress.last_event_at_s = watchdog.clock.now()
        await anyio.sleep(0.2)

    progress, cut = await watch_one_request(watchdog, deadline_s=1.0, idle_s=0.8, during=blocked)
    assert not cut and progress.outcome is TurnOutcome.OK
    # A loaded machine may add short pauses of its own; the 1.5 s one is always among them.
    assert watchdog.wedge is None and watchdog.pauses >= 1 and watchdog.paused_s > 1.3


async def test_an_engine_that_goes_quiet_is_a_stall() -> None:
    watchdog = Watchdog(RunClock(), stall_after_s=60, tick_s=TICK_S)

    async def quiet(progress: StreamProgress) -> None:
        await anyio.sleep(5)

    progress, cut = await watch_one_request(watchdog, deadline_s=30, idle_s=0.3, during=quiet)
    assert cut and progress.outcome is TurnOutcome.STALLED  # cut before `quiet` ended
    assert "no data from the server for 0.3 s" in progress.error


async def test_a_turn_past_its_deadline_is_a_timeout_even_while_data_flows() -> None:
    watchdog = Watchdog(RunClock(), stall_after_s=60, tick_s=TICK_S)

    async def dripping(progress: StreamProgress) -> None:
        while True:
            progress.last_event_at_s = watchdog.clock.now()
            await anyio.sleep(0.02)

    progress, cut = await watch_one_request(watchdog, deadline_s=0.4, idle_s=5, during=dripping)
    assert cut and progress.outcome is TurnOutcome.TIMEOUT
    assert progress.error == "the turn took longer than 0.4 s"


async def test_no_event_anywhere_for_stall_after_is_a_wedge() -> None:
    watchdog = Watchdog(RunClock(), stall_after_s=0.3, tick_s=TICK_S)
    progress = StreamProgress(scheduled_at_s=0.0)
    with anyio.fail_after(5), watchdog.watching(progress, 30, 30):
        await watchdog.run()  # returns when it calls the wedge
    assert watchdog.wedge is not None  # said as measured, not rounded to "0 s"
    assert re.search(r"no token for 0\.[3-9]\d* s with 1 requests open", watchdog.wedge)
    assert progress.outcome is TurnOutcome.OK  # the run decides what its open turns become


async def test_a_pause_longer_than_stall_after_is_no_wedge() -> None:
    watchdog = Watchdog(RunClock(), stall_after_s=0.4, tick_s=TICK_S)
    progress = StreamProgress(scheduled_at_s=0.0)

    async def engine_streams() -> None:
        for _ in range(30):
            progress.last_event_at_s = watchdog.clock.now()
            await anyio.sleep(0.02)
            if _ == 5:
                time.sleep(1.0)  # repro stops for 2.5x stall_after while a request is open

    with watchdog.watching(progress, 30, 30):
        async with anyio.create_task_group() as group:
            group.start_soon(watchdog.run)
            await engine_streams()
            group.cancel_scope.cancel()
    assert watchdog.wedge is None and watchdog.pauses >= 1
