"""Live progress of a run: a rich panel on a terminal, a plain line every few seconds elsewhere."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from types import TracebackType

import anyio
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from repro.harness.load.counts import LiveCounts, ReplayCounts, describe_counts

LIVE_EVERY_S = 0.25
PLAIN_EVERY_S = 10.0


class Progress(AbstractContextManager["Progress"]):
    """Shows LiveCounts while the load runs; `watch()` is a task that refreshes it."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.counts: LiveCounts | None = None
        self.replay: ReplayCounts | None = None  # set once the divergence oracle's replay starts
        self._started = time.monotonic()
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if self.console.is_terminal:
            # Refreshed by watch() alone: Live's own refresh thread would wake the process
            # as often again, and every wake-up costs the client CPU (harness.load.loop_probe).
            self._live = Live(
                self._render(), console=self.console, auto_refresh=False, transient=True
            )
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def status(self, text: str) -> None:
        """A phase change (starting engines, running load), shown once."""
        self.console.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {escape(text)}")

    async def watch(self, counts: LiveCounts) -> None:
        self.counts = counts
        while True:
            if self._live is not None:
                self._live.update(self._render(), refresh=True)
                await anyio.sleep(LIVE_EVERY_S)
            else:
                self.console.print(self._line())
                await anyio.sleep(PLAIN_EVERY_S)

    def _elapsed_s(self) -> float:
        return time.monotonic() - self._started

    def _line(self) -> str:
        if self.replay is not None:
            return describe_counts(self.replay)
        c = self.counts or LiveCounts()
        rate = c.completion_tokens / max(self._elapsed_s(), 1e-9)
        return (
            f"{self._elapsed_s():6.0f}s  sessions {c.sessions_active} active, {c.sessions_done}/{c.sessions_total} done"
            f"  turns {c.turns}  corrupted {c.turns_corrupted} turns / {c.sessions_corrupted} sessions"
            f"  errors {c.errors}  aborted {c.aborted}  {rate:,.0f} tok/s  max prompt {c.max_prompt_tokens:,}"
        )

    def _render(self) -> Table:
        c = self.counts or LiveCounts()
        table = Table(title=self.title, show_header=False, box=None, padding=(0, 2))
        rate = c.completion_tokens / max(self._elapsed_s(), 1e-9)
        corrupted = "red" if c.turns_corrupted else "green"
        table.add_row("elapsed", f"{self._elapsed_s():.0f} s")
        table.add_row(
            "sessions", f"{c.sessions_active} active, {c.sessions_done}/{c.sessions_total} done"
        )
        table.add_row("turns", f"{c.turns:,} judged, {c.open_requests} in flight")
        table.add_row(
            "corrupted",
            f"[{corrupted}]{c.turns_corrupted} turns in {c.sessions_corrupted} sessions[/]",
        )
        table.add_row("errors", f"{c.errors} errors, {c.aborted} aborted on purpose")
        table.add_row("throughput", f"{rate:,.0f} output tokens/s")
        table.add_row("context", f"max prompt {c.max_prompt_tokens:,} tokens")
        if self.replay is not None:
            table.add_row("replay", describe_counts(self.replay))
        return table
