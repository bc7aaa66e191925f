"""What the live progress display shows: the load's counts and the replay's, each written only
by its producer (the load generator, the replay) and read by the display."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from repro.checkers.divergence import DivergenceKind


@dataclass(slots=True)
class LiveCounts:
    """What the progress display shows; written only by the load generator."""

    sessions_total: int = 0
    sessions_active: int = 0
    sessions_done: int = 0
    turns: int = 0
    turns_corrupted: int = 0
    sessions_corrupted: int = 0
    errors: int = 0
    aborted: int = 0
    completion_tokens: int = 0
    max_prompt_tokens: int = 0
    open_requests: int = 0


@dataclass(slots=True)
class ReplayCounts:
    """What the progress display shows of the replay; written only by the replay."""

    sessions_planned: int = 0
    sessions_done: int = 0
    turns_planned: int = 0
    turns_done: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    started_at_s: float = 0.0  # time.monotonic()
    budget_s: float | None = None


def describe_counts(counts: ReplayCounts) -> str:
    """One progress line: turns replayed, divergences so far, time and what is left."""
    if not counts.started_at_s:
        return "replay: starting (rebuilding what the load sent, launching references)"
    elapsed = time.monotonic() - counts.started_at_s
    line = (
        f"replay {counts.turns_done:,}/{counts.turns_planned:,} turns "
        f"({counts.sessions_done}/{counts.sessions_planned} sessions)"
    )
    found = [f"{v} {k}" for k, v in sorted(counts.by_kind.items()) if k != DivergenceKind.IDENTICAL]
    line += "; " + (", ".join(found) if found else "no divergence")
    if counts.errors:
        line += f", {counts.errors} not answered"
    line += f"; {elapsed:,.0f} s"
    if counts.turns_done and counts.turns_done < counts.turns_planned:
        left = elapsed / counts.turns_done * (counts.turns_planned - counts.turns_done)
        line += f", about {left / 60:,.1f} min more for all"
    if counts.budget_s is not None:
        line += f" (auto: new sessions stop at {counts.budget_s:,.0f} s)"
    return line
