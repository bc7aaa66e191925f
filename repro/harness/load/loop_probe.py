"""How far behind repro itself runs: the event loop's lag and the process's CPU share.

A probe asks the event loop to call it every `every_s` and records how late the call came.
That lateness is what every coroutine of the run suffers at that moment: a request sent late, a token read
late, a gap measured long. Together with the CPU the process used, it says whether the
client, not the engine, set the pace. Lags are kept as a histogram (records.gap_stats), and
every `window_s` one line of figures goes to the run folder (client_load.jsonl).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from repro.harness.load.clock import RunClock
from repro.records.gap_stats import GapStats, percentiles_of

# Each probe that finds the loop asleep wakes the process, and a wake-up costs 120-140 µs of
# CPU on the 2-core dev VM (kernel and loop; bench/loop_wakeup_cost.py): every 10 ms that was
# 1.2-1.4% of a core spent on measuring. A lag sample every 50 ms still
# estimates the share of time the loop is late without bias, 100 samples per window.
PROBE_EVERY_S = 0.05
WINDOW_S = 5.0


@dataclass(frozen=True, slots=True)
class ClientLoad:
    """Loop lag and CPU of one repro process (a worker, or the whole run when it is one)."""

    lag_p50_s: float
    lag_p99_s: float
    lag_max_s: float
    cpu_s: float
    wall_s: float
    samples: int
    lag_buckets: tuple[int, ...] = ()  # the histogram, so several workers' can be pooled
    lag_bucket_counts: tuple[int, ...] = ()

    @property
    def cpu_share(self) -> float:
        """CPU seconds per wall second: 1.0 is a whole core, all an event loop can use."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "lag_p50_s": self.lag_p50_s,
            "lag_p99_s": self.lag_p99_s,
            "lag_max_s": self.lag_max_s,
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "samples": self.samples,
            "lag_buckets": list(self.lag_buckets),
            "lag_bucket_counts": list(self.lag_bucket_counts),
        }

    @classmethod
    def from_dict(cls, data: dict) -> ClientLoad:
        return cls(
            **{k: data[k] for k in ("lag_p50_s", "lag_p99_s", "lag_max_s", "cpu_s", "wall_s")},
            samples=int(data["samples"]),
            lag_buckets=tuple(data.get("lag_buckets", ())),
            lag_bucket_counts=tuple(data.get("lag_bucket_counts", ())),
        )


def pooled(loads: list[ClientLoad]) -> ClientLoad:
    """Several processes' figures as one: lags pooled, CPU summed, wall the longest."""
    if len(loads) == 1:
        return loads[0]
    buckets = [b for load in loads for b in load.lag_buckets]
    counts = [c for load in loads for c in load.lag_bucket_counts]
    max_s = max((load.lag_max_s for load in loads), default=0.0)
    figures = percentiles_of(buckets, counts, max_s, (0.5, 0.99))
    totals: dict[int, int] = {}
    for b, c in zip(buckets, counts, strict=True):
        totals[b] = totals.get(b, 0) + c
    return ClientLoad(
        lag_p50_s=figures.get("p50", 0.0),
        lag_p99_s=figures.get("p99", 0.0),
        lag_max_s=max_s,
        cpu_s=sum(load.cpu_s for load in loads),
        wall_s=max((load.wall_s for load in loads), default=0.0),
        samples=sum(load.samples for load in loads),
        lag_buckets=tuple(sorted(totals)),
        lag_bucket_counts=tuple(totals[b] for b in sorted(totals)),
    )


class LoopProbe:
    """Run `run()` as a task for the load's duration; `figures()` at any time after."""

    def __init__(
        self,
        clock: RunClock,
        *,
        every_s: float = PROBE_EVERY_S,
        window_s: float = WINDOW_S,
        on_window: Callable[[dict], None] | None = None,
    ) -> None:
        self.clock = clock
        self.every_s = every_s
        self.window_s = window_s
        self.on_window = on_window
        self.lags = GapStats()
        self._started_s = clock.now()
        self._cpu_started_s = time.process_time()
        self._new_window(self._started_s)

    async def run(self) -> None:
        """Probe until cancelled. A timer callback, not a sleeping task: the lag is the same,
        and a task's wake-up costs several times a callback's."""
        loop = asyncio.get_running_loop()
        self._new_window(self.clock.now())
        self._last_s = self.clock.now()
        # A window that cannot be written (a full disk) fails the probe's task, like any
        # other write of the run, rather than a traceback from the loop's callback handler.
        self._failed: asyncio.Future[None] = loop.create_future()
        self._timer = loop.call_later(self.every_s, self._tick, loop)
        try:
            await self._failed
        finally:
            self._timer.cancel()

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = self.clock.now()
        lag_s = max(now - self._last_s - self.every_s, 0.0)
        self._last_s = now
        self.lags.add(lag_s)
        self._window.add(lag_s)
        if now - self._window_started_s >= self.window_s:
            try:
                self.end_window()
            except Exception as exc:  # the run's error path words it (StoreError)
                self._failed.set_exception(exc)
                return
        self._timer = loop.call_later(self.every_s, self._tick, loop)

    def end_window(self) -> None:
        """Report the current window's figures (also the last, shorter one at the end)."""
        now, cpu_s = self.clock.now(), time.process_time()
        window, span_s = self._window, now - self._window_started_s
        if window.count and self.on_window is not None:
            self.on_window(_window_line(window, now, span_s, cpu_s - self._window_cpu_s))
        self._new_window(now)

    def _new_window(self, now: float) -> None:
        self._window, self._window_started_s = GapStats(), now
        self._window_cpu_s = time.process_time()

    def figures(self) -> ClientLoad:
        buckets, counts = self.lags.bucket_columns()
        figures = percentiles_of(buckets, counts, self.lags.max_s, (0.5, 0.99))
        return ClientLoad(
            lag_p50_s=figures.get("p50", 0.0),
            lag_p99_s=figures.get("p99", 0.0),
            lag_max_s=self.lags.max_s,
            cpu_s=time.process_time() - self._cpu_started_s,
            wall_s=self.clock.now() - self._started_s,
            samples=self.lags.count,
            lag_buckets=tuple(buckets),
            lag_bucket_counts=tuple(counts),
        )


def _window_line(window: GapStats, at_s: float, span_s: float, cpu_s: float) -> dict:
    buckets, counts = window.bucket_columns()
    figures = percentiles_of(buckets, counts, window.max_s, (0.5, 0.99))
    return {
        "at_s": round(at_s, 3),
        "lag_p50_ms": round(figures.get("p50", 0.0) * 1000, 2),
        "lag_p99_ms": round(figures.get("p99", 0.0) * 1000, 2),
        "lag_max_ms": round(window.max_s * 1000, 2),
        "cpu_share": round(cpu_s / span_s, 3) if span_s > 0 else 0.0,
    }
