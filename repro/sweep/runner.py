"""Run a sweep: each point through the harness's run entry (a fresh engine each), finished
points found again instead of rerun, and the table, parquet file and page rewritten as it goes."""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from repro.sweep.plan import SweepPlan
from repro.sweep.points import finished, point_folder, set_aside
from repro.sweep.table import SweepRow, write_parquet


@dataclass(frozen=True)
class SweepResult:
    rows: list[SweepRow]
    parquet: Path
    page: Path
    points: int  # asked for; fewer rows when the sweep stopped early

    def to_json(self) -> dict[str, Any]:
        return {
            "points": self.points,
            "parquet": str(self.parquet),
            "html": str(self.page),
            "rows": [r.to_dict() for r in self.rows],
        }


def sweep_name(plan: SweepPlan) -> str:
    """sweep-<digest of what was asked>: the same command writes the same files."""
    text = json.dumps(plan.model_dump(mode="json"), sort_keys=True)
    return f"sweep-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def run_sweep(plan: SweepPlan, console: Console) -> SweepResult:
    """Every point in order; Interrupted or an engine error stops it after saving the table."""
    from repro.harness import Progress, run

    points = plan.points()
    plan.folder.mkdir(parents=True, exist_ok=True)
    name = sweep_name(plan)
    result = SweepResult(
        [], plan.folder / f"{name}.parquet", plan.folder / f"{name}.html", len(points)
    )
    try:
        for i, point in enumerate(points, 1):
            folder = point_folder(plan.folder, point)
            summary = finished(folder)
            reused = summary is not None
            head = f"sweep {i}/{len(points)}: {point.describe()}"
            if summary is None:
                if folder.exists():
                    console.print(f"{head}: an unfinished attempt is kept as {set_aside(folder)}")
                console.print(f"{head}: running in {folder}")
                with Progress(console, head) as progress:
                    summary = run(point.spec, folder, progress)
            row = SweepRow.of(point, summary, folder, reused)
            result.rows.append(row)
            where = f" (measured earlier in {folder})" if reused else ""
            console.print(f"{head}: {_outcome(row)}{where}")
            write_parquet(result.rows, result.parquet)
    finally:
        if result.rows:
            _write_page(plan, result)
    return result


def _outcome(row: SweepRow) -> str:
    failed = f", {row.failed_turns} failed turns" if row.failed_turns else ""
    wedged = ", wedged" if row.wedged else ""
    return f"sessions corrupted {row.session_rate}, turns {row.turn_rate}{failed}{wedged}"


def _write_page(plan: SweepPlan, result: SweepResult) -> None:
    from repro.harness import resolve
    from repro.sweep.page import write_page

    config = resolve(plan.run).config
    command = "repro " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "repro sweep"
    write_page(
        result.rows,
        result.page,
        f"repro sweep: {result.page.stem}",
        f"{command}\nconfiguration: " + ", ".join(f"{k}={v}" for k, v in config.items()),
    )
