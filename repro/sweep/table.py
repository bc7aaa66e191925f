"""The sweep's table: one row per point, with Wilson intervals; as rich text, JSON and parquet."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from repro.results import Rate, RunSummary
from repro.sweep.plan import SweepPoint


@dataclass(frozen=True, slots=True)
class SweepRow:
    sessions: int
    context_max_tokens: int
    session_rate: Rate
    turn_rate: Rate
    failed_turns: int
    wedged: bool
    max_prompt_tokens: int
    ttft_p90_s: float | None
    wall_s: float
    run_dir: str
    reused: bool  # measured by an earlier invocation of the same sweep

    @classmethod
    def of(cls, point: SweepPoint, summary: RunSummary, run_dir: Path, reused: bool) -> SweepRow:
        s = summary
        return cls(
            sessions=point.sessions,
            context_max_tokens=point.context_max_tokens,
            session_rate=Rate(s.sessions_corrupted, s.sessions, *s.session_corruption_ci),
            turn_rate=Rate(s.turns_corrupted, s.turns, *s.turn_corruption_ci),
            failed_turns=s.errors,
            wedged=s.wedge is not None,
            max_prompt_tokens=s.max_prompt_tokens,
            ttft_p90_s=s.latency_s.get("ttft", {}).get("p90"),
            wall_s=s.wall_s,
            run_dir=str(run_dir),
            reused=reused,
        )

    def to_dict(self) -> dict[str, Any]:
        """Flat: one column per figure (the parquet schema and the --json objects)."""
        row: dict[str, Any] = {
            "sessions": self.sessions,
            "context_max_tokens": self.context_max_tokens,
        }
        for name, rate in (("sessions", self.session_rate), ("turns", self.turn_rate)):
            row |= {
                f"{name}_measured": rate.n,
                f"{name}_corrupted": rate.k,
                f"{name}_corrupted_rate": rate.value,
                f"{name}_corrupted_low": rate.low,
                f"{name}_corrupted_high": rate.high,
            }
        return row | {
            "failed_turns": self.failed_turns,
            "wedged": self.wedged,
            "max_prompt_tokens": self.max_prompt_tokens,
            "ttft_p90_s": self.ttft_p90_s,
            "wall_s": self.wall_s,
            "run_dir": self.run_dir,
            "reused": self.reused,
        }


def write_parquet(rows: list[SweepRow], path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame([r.to_dict() for r in rows])
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)  # a reader never sees half a file


def render_table(rows: list[SweepRow], console: Console) -> None:
    """One row per point; a rate's interval goes under it so the table fits 80 columns."""
    table = Table(
        title="corruption by load (95% Wilson intervals)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1),
        pad_edge=False,
    )
    headers = ("sessions", "context", "sessions\ncorrupted", "turns\ncorrupted", "failed")
    for column in (*headers, "TTFT\np90", "wall"):  # only a rate wraps, and at its spaces
        table.add_column(column, justify="right", no_wrap="corrupted" not in column)
    for r in rows:
        table.add_row(
            f"{r.sessions:,}",
            f"{r.context_max_tokens:,}",
            r.session_rate.stacked(),
            r.turn_rate.stacked(),
            f"{r.failed_turns:,}" + ("\nwedged" if r.wedged else ""),
            "n/a" if r.ttft_p90_s is None else f"{r.ttft_p90_s:.2f} s",
            f"{r.wall_s:.0f} s",
        )
    console.print(table)
