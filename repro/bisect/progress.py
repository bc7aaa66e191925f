"""Live progress for long campaigns: the trials running now, decisions so far, sessions spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True, slots=True)
class CampaignState:
    running: tuple[tuple[str, int, int], ...]  # wave in flight: label, corrupted, sessions so far
    waiting: int  # trials asked for that wait for a free deployment (--parallel)
    wave_started: str | None  # the trial whose wave just started, if that is the news
    decisions: tuple[tuple[str, str, int, int], ...]  # label, decision, corrupted, sessions
    sessions_spent: int
    elapsed_s: float
    parallel: int = 1  # deployments the campaign may run at once
    busy: int = 0  # of those, lent out now (to trials, or to waves run ahead)
    ahead: int = 0  # waves running ahead of need on otherwise idle deployments (ahead.py)


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
        elif state.wave_started:  # a log (CI): one plain line per wave
            self.console.print(f"{_header(state)}; now: {_now(state)}", soft_wrap=True)


def render_state(state: CampaignState) -> Group:
    table = Table(title="decisions so far", title_justify="left", expand=False)
    for column in ("trial", "decision", "corrupted"):
        table.add_column(column, overflow="fold")  # a narrow terminal wraps, never cuts
    for label, decision, corrupted, sessions in state.decisions[-12:]:
        table.add_row(label, decision, f"{corrupted}/{sessions}")
    parts: list[object] = [Text(_header(state), style="bold")]
    parts += [Text(f"now: {_one(trial)}") for trial in state.running]
    parts.append(table)
    return Group(*parts)


def _header(state: CampaignState) -> str:
    trials = len(state.decisions)
    header = (
        f"bisect: {trials} trial{'s' * (trials != 1)} decided, {state.sessions_spent} sessions "
        f"spent, {state.elapsed_s / 60:.1f} min"
    )
    if state.parallel > 1:
        header += f"; {state.busy} of {state.parallel} deployments busy"
        header += f" ({state.ahead} with a wave ahead)" if state.ahead else ""
        header += f", {state.waiting} trial(s) waiting" if state.waiting else ""
    return header


def _one(trial: tuple[str, int, int]) -> str:
    label, corrupted, sessions = trial
    return f"{label} — running a wave; {corrupted}/{sessions} sessions corrupted so far"


def _now(state: CampaignState) -> str:
    return "; ".join(_one(trial) for trial in state.running)
