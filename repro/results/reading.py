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
    turns, spec_file, summary_file = (
        path / n for n in ("turns.parquet", "spec.json", "summary.json")
    )
    if not turns.exists() or not spec_file.exists():
        if summary_file.exists():  # repro made it, but no load ran: say why it stopped
            written = RunSummary.from_dict(_json_object(summary_file))
            why = written.error or (
                "interrupted." if written.interrupted else "no reason recorded."
            )
            raise UsageError(f"{path} holds no turns; the run stopped before any load ran: {why}")
        raise UsageError(f"{path} is not a run folder: it needs spec.json and turns.parquet.")
    loaded = read_turns(turns)
    spec = _json_object(spec_file)
    written = RunSummary.from_dict(_json_object(summary_file)) if summary_file.exists() else None
    wall_s = written.wall_s if written else max((r.ended_at_s for r in loaded), default=0.0)
    oracle = (spec.get("spec") or {}).get("oracle")
    records, divergence = judged_view(path, loaded, oracle, written)
    summary = summarize(
        records,
        config=spec.get("config", {}),
        wall_s=wall_s,
        # No summary.json: the run is still going, or was killed before writing one.
        interrupted=written.interrupted if written else True,
        wedge=written.wedge if written else None,
        error=written.error if written else None,
        engine=spec.get("engine", ""),
        url=spec.get("url", ""),
        started_at=spec.get("started_at", ""),
        run_dir=str(path),
        oracle=oracle,
        divergence=divergence,
    )
    return RunFolder(path, records, summary)


def judged_view(
    path: Path, records: list[TurnRecord], oracle: str | None, written: RunSummary | None
) -> tuple[list[TurnRecord], dict | None]:
    """The turns as the run's oracle judged them, and the replay's figures recomputed."""
    from repro.harness.replayed import read_replayed
    from repro.results.oracle_view import divergence_figures, judged_records

    if oracle in (None, "validity"):
        return records, None
    replayed = read_replayed(path)
    info = written.divergence if written else {}
    return judged_records(records, oracle, replayed), divergence_figures(records, replayed, info)


def read_turns(turns: Path) -> list[TurnRecord]:
    """The rows of a turns.parquet; a file that is not one is one sentence."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return [TurnRecord(**row) for row in pq.read_table(turns).to_pylist()]
    except (pa.ArrowException, TypeError):  # not Parquet at all, or not repro's columns
        raise UsageError(f"{turns} is not a turns table written by repro run.") from None


def _json_object(path: Path) -> dict:
    """A run folder's JSON file, which holds one object; anything else is one sentence."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both are
        raise UsageError(f"{path} is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object, as repro run writes it.")
    return data
