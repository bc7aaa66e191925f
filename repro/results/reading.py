"""Reading a run folder back: its turns, its configuration, and a summary recomputed from them.

`repro report` and `repro compare` use this, so a run that crashed before writing
summary.json is still readable: turns.parquet is complete at every flush.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from repro.errors import UsageError
from repro.harness.turn import TurnRecord
from repro.results.summary import RunSummary, summarize


@dataclass(frozen=True)
class RunFolder:
    path: Path
    records: list[TurnRecord]
    summary: RunSummary


def read_run(path: Path) -> RunFolder:
    """The turns of a run folder and its summary, recomputed from the turns."""
    import pyarrow.parquet as pq

    turns, spec_file = path / "turns.parquet", path / "spec.json"
    if not turns.exists() or not spec_file.exists():
        raise UsageError(f"{path} is not a run folder: it needs spec.json and turns.parquet.")
    records = [TurnRecord(**row) for row in pq.read_table(turns).to_pylist()]
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    written = (
        RunSummary.from_file(path / "summary.json") if (path / "summary.json").exists() else None
    )
    wall_s = written.wall_s if written else max((r.ended_at_s for r in records), default=0.0)
    summary = summarize(
        records,
        config=spec.get("config", {}),
        wall_s=wall_s,
        interrupted=written.interrupted if written else True,  # no summary: it did not finish
        wedge=written.wedge if written else None,
        error=written.error if written else "the run ended without writing summary.json",
        engine=spec.get("engine", ""),
        url=spec.get("url", ""),
        started_at=spec.get("started_at", ""),
        run_dir=str(path),
    )
    return RunFolder(path, records, summary)
