"""Reading a run folder back: its turns, its configuration, and a summary recomputed from them.

`repro report`, `repro compare`, the gate and bisection read runs through this, so a run that
crashed before writing summary.json is still readable. turns.parquet is a folder of parts
(one per flush, see results.store) or, in runs written before that, one file; both read as
one table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from repro.errors import UsageError
from repro.harness.turn import TurnRecord
from repro.results.summary import RunSummary, summarize

if TYPE_CHECKING:
    import pyarrow as pa


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
    records = read_turns(turns)
    spec = _json_object(spec_file)
    written = RunSummary.from_dict(_json_object(summary_file)) if summary_file.exists() else None
    wall_s = written.wall_s if written else max((r.ended_at_s for r in records), default=0.0)
    summary = summarize(
        records,
        config=spec.get("config", {}),
        wall_s=wall_s,
        # No summary.json: the run is still going, or was killed before writing one.
        interrupted=written.interrupted if written else True,
        wedge=written.wedge if written else None,
        error=written.error if written else None,
        ended_because=written.ended_because if written else None,
        client_pauses=written.client_pauses if written else 0,
        client_paused_s=written.client_paused_s if written else 0.0,
        client_loop_lag_s=written.client_loop_lag_s if written else None,
        client_cpu_share=written.client_cpu_share if written else 0.0,
        client_workers=written.client_workers if written else 1,
        engine=spec.get("engine", ""),
        url=spec.get("url", ""),
        started_at=spec.get("started_at", ""),
        run_dir=str(path),
    )
    return RunFolder(path, records, summary)


def read_turns(turns: Path) -> list[TurnRecord]:
    """The rows of a turns.parquet (folder or file); anything else is one sentence."""
    return [TurnRecord(**row) for row in read_turn_table(turns).to_pylist()]


def read_turn_table(turns: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """turns.parquet as one Arrow table (only `columns`, when given), parts in write order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from repro.results.store import TURN_SCHEMA

    wanted = list(columns or TURN_SCHEMA.names)
    if turns.is_dir() and not any(_is_part(p) for p in turns.iterdir()):
        return TURN_SCHEMA.empty_table().select(wanted)  # a live run before its first flush
    try:
        return pq.read_table(turns, columns=wanted)
    except (pa.ArrowException, TypeError):  # not Parquet, or not repro's columns
        upgraded = _gaps_as_figures(turns, wanted)
        if upgraded is None:
            raise UsageError(f"{turns} is not a turns table written by repro run.") from None
        return upgraded


GAP_COLUMNS = ("gap_count", "gap_mean_s", "gap_max_s", "gap_buckets", "gap_bucket_counts")


def _gaps_as_figures(turns: Path, wanted: list[str]) -> pa.Table | None:
    """A run written when a turn kept its gaps as a list (`gaps_s`): read with the figures
    the list gives, as repro writes them now; None if it is not such a run either."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from repro.harness.gap_stats import GapStats
    from repro.results.store import TURN_SCHEMA

    try:
        names = pq.ParquetDataset(turns).schema.names
        if "gaps_s" not in names or any(c not in names for c in wanted if c not in GAP_COLUMNS):
            return None
        table = pq.read_table(
            turns, columns=[c for c in wanted if c not in GAP_COLUMNS] + ["gaps_s"]
        )
    except (pa.ArrowException, TypeError, OSError):
        return None
    figures: dict[str, list] = {c: [] for c in GAP_COLUMNS}
    for gaps in table.column("gaps_s").to_pylist():
        stats = GapStats()
        for gap in gaps or ():
            stats.add(gap)
        buckets, counts = stats.bucket_columns()
        for name, value in zip(GAP_COLUMNS, (stats.count, stats.mean_s,
                               stats.max_s if stats.count else None, buckets, counts), strict=True):  # fmt: skip
            figures[name].append(value)
    columns = {c: table.column(c) if c not in GAP_COLUMNS else figures[c] for c in wanted}
    return pa.table(columns, schema=pa.schema([TURN_SCHEMA.field(c) for c in wanted]))


def _is_part(path: Path) -> bool:
    return not path.name.startswith((".", "_"))  # what pyarrow's dataset reader reads


def _json_object(path: Path) -> dict:
    """A run folder's JSON file, which holds one object; anything else is one sentence."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both are
        raise UsageError(f"{path} is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object, as repro run writes it.")
    return data
