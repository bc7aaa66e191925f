"""The run's one clock: monotonic seconds since the run started, shared by every timestamp."""

from __future__ import annotations

import time


class RunClock:
    """Monotonic seconds since the run started (one clock for every timestamp).

    `t0` is a time.perf_counter() value; on Linux that clock is system-wide, so worker
    processes given the same t0 stamp on one time line."""

    def __init__(self, t0: float | None = None) -> None:
        self.t0 = time.perf_counter() if t0 is None else t0

    def now(self) -> float:
        return time.perf_counter() - self.t0
