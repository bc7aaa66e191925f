"""Live progress for long campaigns: the trial running now, decisions so far, sessions spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True, slots=True)
class CampaignState:
    current: str | None
    current_sessions: int
    current_corrupted: int
    wave_running: bool
    decisions: tuple[tuple[str, str, int, int], ...]  # label, decision, corrupted, sessions
    sessions_spent: int
    elapsed_s: float


class Progress(Protocol):
    def update(self, state: CampaignState) -> None: ...


class LiveProgress:
    """A rich Live panel on stderr; a context manager so the terminal is restored on any exit."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._live = Live(console=self.console, refresh_per_second=2, transient=True)

    def __enter__(self) -> LiveProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(*exc)  # type: ignore[arg-type]

    def update(self, state: CampaignState) -> None:
        if self.console.is_terminal:
            self._live.update(render_state(state))
        elif state.wave_running and state.current:  # a log (CI): one plain line per wave
            self.console.print(f"{_header(state)}; now: {_now(state)}", soft_wrap=True)


def render_state(state: CampaignState) -> Group:
    table = Table(title="decisions so far", title_justify="left", expand=False)
    for column in ("trial", "decision", "corrupted"):
        table.add_column(column, overflow="fold")  # a narrow terminal wraps, never cuts
    for label, decision, corrupted, sessions in state.decisions[-12:]:
        table.add_row(label, decision, f"{corrupted}/{sessions}")
    parts: list[object] = [Text(_header(state), style="bold")]
    if state.current:
        parts.append(Text(f"now: {_now(state)}"))
    parts.append(table)
    return Group(*parts)


def _header(state: CampaignState) -> str:
    trials = len(state.decisions)
    return (
        f"bisect: {trials} trial{'s' * (trials != 1)} decided, {state.sessions_spent} sessions "
        f"spent, {state.elapsed_s / 60:.1f} min"
    )


def _now(state: CampaignState) -> str:
    doing = "running a wave" if state.wave_running else "checking"
    return (
        f"{state.current} — {doing}; "
        f"{state.current_corrupted}/{state.current_sessions} sessions corrupted so far"
    )
