"""The modelled clock: step durations while busy, wall time only while idle, and the pace."""

from __future__ import annotations

import time

import pytest

from repro.sim.clock import ModelledClock

pytestmark = pytest.mark.anyio


async def test_a_slow_host_does_not_become_modelled_time_while_busy() -> None:
    clock = ModelledClock(time_scale=0.01)
    clock.busy()
    start_s = clock.now_s()
    time.sleep(0.05)  # the host's own work between steps: 5 modelled s were it counted
    await clock.sleep(0.2)
    time.sleep(0.05)
    await clock.sleep(0.3)
    assert clock.now_s() - start_s == pytest.approx(0.5)
    wall_s, modelled_s = clock.busy_seconds()
    assert modelled_s == pytest.approx(0.5) and wall_s >= 0.1
    # 0.5 modelled s took at least 0.105 wall s at a scale of 0.01: under 5 % of its pace
    assert clock.pace() < 0.05


async def test_wall_time_counts_while_idle_and_arrivals_see_it() -> None:
    clock = ModelledClock(time_scale=0.01)
    clock.busy()
    await clock.sleep(1.0)
    clock.idle()
    time.sleep(0.03)
    arrival_s = clock.now_s()  # a request arriving while the scheduler waits
    assert arrival_s >= 1.0 + 3.0
    clock.busy()
    assert clock.now_s() >= arrival_s
    # idle time is not busy time: the pace only judges the stretches with work
    assert clock.busy_seconds()[1] == pytest.approx(1.0)


async def test_a_host_that_keeps_up_runs_at_full_pace() -> None:
    clock = ModelledClock(time_scale=1.0)
    clock.busy()
    for _ in range(5):
        await clock.sleep(0.02)
    clock.idle()
    assert clock.pace() > 0.8
    assert ModelledClock(0.25).pace() == 1.0  # never busy: nothing to judge
