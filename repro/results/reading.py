"""Reading a run folder back: its turns, its configuration, and a summary recomputed from them.

`repro report` and `repro compare` use this, so a run that crashed before writing
summary.json is still readable: turns.parquet is complete at every flush. A folder that is
damaged (flipped bytes, empty or mistyped columns, JSON of the wrong shape) is one sentence;
so is a run too young to have written any turn yet.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import UsageError
from repro.harness.turn import TurnRecord
from repro.results.summary import RunSummary, summarize
from repro.user_files import TOO_DEEP, read_user_text

Shape = TypeVar("Shape", bound=BaseModel)


@dataclass(frozen=True)
class RunFolder:
    path: Path
    records: list[TurnRecord]
    summary: RunSummary


class _WrittenSpec(BaseModel):
    """What a report takes from spec.json; the rest of it is for rerunning."""

    model_config = ConfigDict(extra="ignore")

    config: dict[str, str] = Field(default_factory=dict)
    engine: str = ""
    url: str = ""
    started_at: str = ""


class _WrittenSummary(BaseModel):
    """What a report takes from summary.json: how the run ended; the figures are recomputed."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    interrupted: bool = False
    wedge: str | None = None
    error: str | None = None
    wall_s: float = Field(0.0, ge=0)


def read_run(path: Path) -> RunFolder:
    """The turns of a run folder and its summary, recomputed from the turns."""
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is a file, not a run folder"
        raise UsageError(f"{path} {what}.")
    turns, spec_file, summary_file = (
        path / n for n in ("turns.parquet", "spec.json", "summary.json")
    )
    written = _read(summary_file, _WrittenSummary) if summary_file.exists() else None
    if not turns.exists() or not spec_file.exists():
        if written is not None:  # repro made it, but no load ran: say why it stopped
            why = written.error or (
                "interrupted." if written.interrupted else "no reason recorded."
            )
            raise UsageError(f"{path} holds no turns; the run stopped before any load ran: {why}")
        if spec_file.exists():  # a run still starting, or killed before its first write
            raise UsageError(
                f"{path} has no finished turns yet: the run is starting or running and writes "
                "its turns every few seconds (or it was killed before the first write)."
            )
        raise UsageError(f"{path} is not a run folder: it needs spec.json and turns.parquet.")
    records = read_turns(turns)
    spec = _read(spec_file, _WrittenSpec)
    wall_s = written.wall_s if written else max((r.ended_at_s for r in records), default=0.0)
    summary = summarize(
        records,
        config=spec.config,
        wall_s=wall_s,
        # No summary.json: the run is still going, or was killed before writing one.
        interrupted=written.interrupted if written else True,
        wedge=written.wedge if written else None,
        error=written.error if written else None,
        engine=spec.engine,
        url=spec.url,
        started_at=spec.started_at,
        run_dir=str(path),
    )
    return RunFolder(path, records, summary)


def read_turns(turns: Path) -> list[TurnRecord]:
    """The rows of turns.parquet (one file, or a folder of part files); a table that is not
    repro's, or is damaged, is one sentence."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = sorted(turns.glob("*.parquet")) if turns.is_dir() else [turns]
    for part in parts:  # a pipe or a device named like a part would block the reader
        if not part.is_file():
            raise UsageError(f"{part} is not a regular file; it cannot be a turns table.")
    if not parts:
        return []
    try:
        table = pa.concat_tables([pq.read_table(part) for part in parts], promote_options="default")
        return [TurnRecord(**row) for row in _as_turns(table, turns).to_pylist()]
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise UsageError(
            f"{turns} is not a turns table written by repro run, or it is damaged ({reason})."
        ) from None


def _as_turns(table: object, where: Path) -> object:
    """The table with repro's columns and types; a missing column or an empty value where
    a turn always has one is one sentence."""
    import pyarrow.compute as pc

    from repro.results.store import TURN_SCHEMA

    missing = [name for name in TURN_SCHEMA.names if name not in table.column_names]  # type: ignore[attr-defined]
    if missing:
        raise UsageError(
            f"{where} is not a turns table written by repro run: it lacks {', '.join(missing)}."
        )
    table = table.select(TURN_SCHEMA.names).cast(TURN_SCHEMA)  # type: ignore[attr-defined]
    for field in dataclasses.fields(TurnRecord):
        column = table.column(field.name)
        empty = column.null_count > 0 and "None" not in str(field.type)
        if not empty and str(field.type).startswith("list["):
            empty = pc.list_flatten(column).null_count > 0
        if empty:
            raise UsageError(f"{where} is damaged: column '{field.name}' has empty values.")
    return table


def _read(path: Path, shape: type[Shape]) -> Shape:
    """A run folder's JSON file, checked against the shape repro writes; one sentence if not."""
    text = read_user_text(path, str(path))
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}.") from None
    except RecursionError:
        raise UsageError(f"{path} {TOO_DEEP}.") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object, as repro run writes it.")
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"{path} is damaged at '{key}': {first['msg']}.") from None
