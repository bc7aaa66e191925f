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
        self._live.update(render_state(state))


def render_state(state: CampaignState) -> Group:
    table = Table(title="decisions so far", title_justify="left", expand=False)
    for column in ("trial", "decision", "corrupted"):
        table.add_column(column)
    for label, decision, corrupted, sessions in state.decisions[-12:]:
        table.add_row(label, decision, f"{corrupted}/{sessions}")
    minutes = state.elapsed_s / 60
    trials = len(state.decisions)
    header = Text(
        f"bisect: {trials} trial{'s' * (trials != 1)} decided, {state.sessions_spent} sessions "
        f"spent, {minutes:.1f} min",
        style="bold",
    )
    parts: list[object] = [header]
    if state.current:
        doing = "running a wave" if state.wave_running else "checking"
        parts.append(
            Text(
                f"now: {state.current} — {doing}; "
                f"{state.current_corrupted}/{state.current_sessions} sessions corrupted so far"
            )
        )
    parts.append(table)
    return Group(*parts)
