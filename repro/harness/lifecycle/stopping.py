"""Ctrl-C, SIGTERM and SIGHUP during a run: what each one does depends on how far the run got."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from repro.errors import EXIT_INTERRUPTED
from repro.harness.launch.local_role import hurry_all
from repro.harness.lifecycle.progress import Progress
from repro.interrupts import REPEAT_WINDOW_S, detach_from_terminal, settle, stop_signals


@dataclass
class Stopping:
    """What a stop signal does, by phase: it interrupts the start-up or the load; once the
    load is done it leaves the run complete and only the teardown is hurried.

    The words are a run's; a bisect campaign (bisect.campaign) names its waves and engines."""

    work: anyio.CancelScope
    progress: Progress | None
    load_done: bool = False
    signals: list[float] = field(default_factory=list)
    stopping_what: str = "the load and the engine"
    complete: str = "the run is complete; stopping the engine (again to kill it at once)"
    killing: str = "killing the engine now"
    say: Callable[[str], None] | None = None  # where the words go when there is no Progress

    def on_signal(self) -> None:
        now = time.monotonic()
        if self.signals and now - self.signals[-1] <= REPEAT_WINDOW_S:
            return  # the same stop delivered twice
        self.signals.append(now)
        if len(self.signals) == 1:
            if self.load_done:
                self._say(self.complete)
            else:
                self._say(f"interrupted: stopping {self.stopping_what} (again to stop at once)")
                self.work.cancel()
        elif len(self.signals) == 2:
            self._say(self.killing)
            hurry_all()
        else:  # something does not let go: the supervisors clean up once we are gone
            os._exit(EXIT_INTERRUPTED)

    def _say(self, text: str) -> None:
        if self.say is not None:
            self.say(text)
        elif self.progress is not None:
            self.progress.status(text)


async def listen_for_stops(
    stopping: Stopping, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Ctrl-C, SIGTERM and SIGHUP while the run lasts; see Stopping for what each does."""
    try:
        with anyio.open_signal_receiver(*stop_signals()) as received:
            task_status.started()
            async for signum in received:
                if signum == signal.SIGHUP:
                    detach_from_terminal()  # the terminal is gone: nothing can be shown there
                stopping.on_signal()
    finally:
        # The receiver put the default handlers back; the run's outcome is settled now.
        settle()
