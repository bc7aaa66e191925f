"""The engine's modelled clock: moved by each step's modelled duration while the scheduler
works, and by the wall clock (over the time scale) only while it is idle.

It used to be the wall clock over the time scale whenever that was ahead. Then the wall time
the simulator spends beyond a step's sleep (its own Python, the HTTP hops, the other
processes sharing these cores) became modelled time, more of it the smaller the time scale,
and the figures moved with the scale and the host (docs/sim.md, "The time scale").

What the host could not keep up with now shows as the pace instead: modelled seconds per
scaled wall second while busy. 1.0 means every step took its sleep and no more; at 0.5 the
engine ran in slow motion, so what happens in wall time (the client's pacing, the hand-overs'
HTTP hops) looks twice as fast to it. The run reports the pace, and warns when it is low.
"""

from __future__ import annotations

import asyncio
import time


class ModelledClock:
    def __init__(self, time_scale: float) -> None:
        self.time_scale = max(time_scale, 1e-9)
        self._now_s = 0.0
        self._idle_since_wall_s: float | None = time.monotonic()
        self._busy_since_wall_s = 0.0
        self._busy_since_s = 0.0
        self._busy_wall_s = 0.0
        self._busy_modelled_s = 0.0

    def now_s(self) -> float:
        """Modelled seconds since start; while idle the wall clock moves it (for arrivals)."""
        if self._idle_since_wall_s is None:
            return self._now_s
        return self._now_s + (time.monotonic() - self._idle_since_wall_s) / self.time_scale

    def busy(self) -> None:
        """The scheduler has work: the idle stretch joins the modelled clock, which from now
        on moves only by the steps' durations."""
        if self._idle_since_wall_s is None:
            return
        self._now_s = self.now_s()
        self._idle_since_wall_s = None
        self._busy_since_wall_s = time.monotonic()
        self._busy_since_s = self._now_s

    def idle(self) -> None:
        """The scheduler waits for work (or for pages): wall time counts again."""
        if self._idle_since_wall_s is not None:
            return
        wall_s = time.monotonic()
        self._busy_wall_s += wall_s - self._busy_since_wall_s
        self._busy_modelled_s += self._now_s - self._busy_since_s
        self._idle_since_wall_s = wall_s

    async def sleep(self, duration_s: float) -> None:
        """One step: the clock moves by its modelled duration; the wall by that, scaled."""
        self._now_s += duration_s
        await asyncio.sleep(duration_s * self.time_scale)

    def busy_seconds(self) -> tuple[float, float]:
        """(wall, modelled) seconds spent working so far, the stretch under way included."""
        wall_s, modelled_s = self._busy_wall_s, self._busy_modelled_s
        if self._idle_since_wall_s is None:
            wall_s += time.monotonic() - self._busy_since_wall_s
            modelled_s += self._now_s - self._busy_since_s
        return wall_s, modelled_s

    def pace(self) -> float:
        """Modelled seconds per scaled wall second while busy (1.0 when it never was)."""
        wall_s, modelled_s = self.busy_seconds()
        return 1.0 if wall_s <= 0 else min(1.0, modelled_s * self.time_scale / wall_s)
