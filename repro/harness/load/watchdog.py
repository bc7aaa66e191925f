"""The stall watcher: it measures the engine in repro's awake time, so a paused repro is not a
wedged engine.

One task ticks every `tick_s`. A tick that comes much later than asked means repro itself did
not run (SIGSTOP, a VM pause, CPU starvation, a blocked event loop): that stretch is set aside
before any limit is checked: every open request's idle clock restarts and its deadline moves
by the pause. Per-request limits (the gap between events, the whole-turn deadline) are enforced
here, not by per-request timers, because on resume those timers fire before anything could
tell them the time was repro's own and not the engine's.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import anyio

from repro.harness.load.clock import RunClock
from repro.harness.load.stream_progress import StreamProgress
from repro.records.turn import TurnOutcome

TICK_S = 0.25
PAUSE_SLACK_S = 1.0  # a tick this much later than asked: repro was paused, not the engine


@dataclass(slots=True, eq=False)
class _Watched:
    progress: StreamProgress
    scope: anyio.CancelScope
    deadline_s: float
    idle_timeout_s: float
    deadline_at_s: float  # moved later by every pause
    idle_since_s: float  # restarted by every pause
    streaming: bool = True  # False: a whole answer, silent until done (no wedge evidence)


class Watchdog:
    """Enforces each open request's limits and notices a wedge (no event anywhere for
    `stall_after_s` while requests are open), all in time during which repro was running."""

    def __init__(
        self, clock: RunClock, stall_after_s: float = math.inf, tick_s: float = TICK_S
    ) -> None:
        self.clock = clock
        self.stall_after_s = stall_after_s
        self.tick_s = tick_s
        # A slack far below the stall limit, so a short test limit still tells a pause apart.
        self.pause_slack_s = min(PAUSE_SLACK_S, stall_after_s / 4)
        self.wedge: str | None = None
        self.pauses = 0
        self.paused_s = 0.0
        self._open: dict[int, _Watched] = {}
        self._last_progress_s = clock.now()

    @property
    def open_requests(self) -> int:
        """Open requests that stream: only they can show the engine moving, or not."""
        return sum(1 for w in self._open.values() if w.streaming)

    @contextlib.contextmanager
    def watching(
        self,
        progress: StreamProgress,
        deadline_s: float,
        idle_timeout_s: float,
        *,
        streaming: bool = True,
    ) -> Iterator[anyio.CancelScope]:
        """A scope the watchdog cancels, with `progress.outcome` set first, when the request
        passes its deadline or goes `idle_timeout_s` without an event. A request that is not
        `streaming` (a whole answer) sends nothing until it is done: it neither counts as an
        open request that waits for tokens nor as evidence the engine moves, until it ends."""
        now = self.clock.now()
        scope = anyio.CancelScope()
        watched = _Watched(
            progress, scope, deadline_s, idle_timeout_s, now + deadline_s, now, streaming
        )
        self._open[id(watched)] = watched
        try:
            with scope:
                yield scope
        finally:
            del self._open[id(watched)]
            self._last_progress_s = self.clock.now()  # a request ending is the engine moving

    async def run(self) -> None:
        """Tick until a wedge is seen (then `self.wedge` says what); cancel to stop."""
        last_tick_s = self.clock.now()
        while True:
            await anyio.sleep(self.tick_s)
            now = self.clock.now()
            late_s = now - last_tick_s - self.tick_s
            last_tick_s = now
            if late_s > self.pause_slack_s:
                self._set_aside(late_s, now)
            self._enforce(now)
            idle_s = now - self.latest_event_s()
            if self.open_requests and idle_s > self.stall_after_s:
                self.wedge = (
                    f"the engine stopped making progress: no token for {idle_s:.3g} s "
                    f"with {self.open_requests} requests open"
                )
                return

    def _set_aside(self, pause_s: float, now: float) -> None:
        self.pauses += 1
        self.paused_s += pause_s
        self._last_progress_s = now
        for watched in self._open.values():
            watched.idle_since_s = now
            watched.deadline_at_s += pause_s

    def _enforce(self, now: float) -> None:
        for watched in list(self._open.values()):
            progress = watched.progress
            if now > watched.deadline_at_s:
                progress.fail(
                    TurnOutcome.TIMEOUT, f"the turn took longer than {watched.deadline_s:g} s"
                )
            elif now - max(watched.idle_since_s, progress.last_event_at_s) > watched.idle_timeout_s:
                progress.fail(
                    TurnOutcome.STALLED,
                    f"no data from the server for {watched.idle_timeout_s:g} s",
                )
            else:
                continue
            watched.scope.cancel()

    def latest_event_s(self) -> float:
        """When the engine last moved for this watchdog (pauses of repro count as moves)."""
        latest = self._last_progress_s
        for watched in self._open.values():
            latest = max(latest, watched.progress.last_event_at_s)
        return latest


@contextlib.asynccontextmanager
async def running_watchdog(clock: RunClock | None = None) -> AsyncIterator[Watchdog]:
    """A watchdog ticking for the block's duration, with no wedge limit (one-off requests)."""
    watchdog = Watchdog(clock or RunClock())
    async with anyio.create_task_group() as group:
        group.start_soon(watchdog.run)
        yield watchdog
        group.cancel_scope.cancel()
