"""Reading a run folder back: its turns, its configuration, and a summary recomputed from them.

`repro report`, `repro compare`, the gate and bisection read runs through this, so a run that
crashed before writing summary.json is still readable. turns.parquet is a folder of parts
(one per flush, see results.store) or, in runs written before that, one file; both read as
one table. A folder that is damaged (flipped bytes, empty or mistyped columns, JSON of the
wrong shape) is one sentence; so is a run too young to have written any turn yet.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import UsageError
from repro.records import TurnRecord
from repro.results.summary import UNFINISHED, RunSummary, summarize
from repro.spec import RunOracle
from repro.user_files import TOO_DEEP, read_user_text

Shape = TypeVar("Shape", bound=BaseModel)

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class RunFolder:
    path: Path
    records: list[TurnRecord]
    summary: RunSummary
    turns_missing: int = 0  # counted in summary.json but not in turns.parquet (a part lost)
    spec: dict[str, Any] = dataclasses.field(default_factory=dict)  # the RunSpec as run


class _WrittenSpec(BaseModel):
    """What a report takes from spec.json; the rest of it is for rerunning."""

    model_config = ConfigDict(extra="ignore")

    config: dict[str, str] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)  # the RunSpec as run (its oracle)
    engine: str = ""
    url: str = ""
    started_at: str = ""


class _WrittenSummary(BaseModel):
    """What a report takes from summary.json: how the run ended; the figures are recomputed."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    interrupted: bool = False
    wedge: str | None = None
    error: str | None = None
    ended_because: str | None = None
    divergence: dict[str, Any] | None = None  # the replay's own figures (sampling, wall time)
    client_pauses: int = Field(0, ge=0)
    client_paused_s: float = Field(0.0, ge=0)
    client_loop_lag_s: dict[str, float] | None = None
    client_cpu_share: float = Field(0.0, ge=0)
    client_workers: int = Field(1, ge=1)
    engine_pace: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    wall_s: float = Field(0.0, ge=0)
    outcomes: dict[str, int] = Field(default_factory=dict)  # every turn written, by outcome
    mix: dict[str, dict[str, float]] = Field(default_factory=dict)
    in_flight_at_failure: dict[str, int] = Field(default_factory=dict)


def read_run(path: Path) -> RunFolder:
    """The turns of a run folder and its summary, recomputed from the turns."""
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is a file, not a run folder"
        raise UsageError(f"{path} {what}.")
    turns, spec_file, summary_file = (
        path / n for n in ("turns.parquet", "spec.json", "summary.json")
    )
    written = _read(summary_file, _WrittenSummary) if summary_file.exists() else None
    counted = sum(written.outcomes.values()) if written else 0
    if counted and not turns.exists():
        raise UsageError(f"{turns} is missing, though summary.json counts {counted} turns.")
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
    loaded = read_turns(turns)
    spec = _read(spec_file, _WrittenSpec)
    wall_s = written.wall_s if written else max((r.ended_at_s for r in loaded), default=0.0)
    oracle = spec.spec.get("oracle")
    oracles = typing.get_args(RunOracle)
    if oracle not in (None, *oracles):
        raise UsageError(
            f"{spec_file}: 'spec.oracle' is {oracle!r}, not one of {', '.join(oracles)}."
        )
    divergence_info = written.divergence if written else None
    records, divergence = judged_view(path, loaded, oracle, divergence_info)
    summary = summarize(
        records,
        config=spec.config,
        wall_s=wall_s,
        # No summary.json: the run is still going, or was killed before writing one.
        interrupted=written.interrupted if written else True,
        wedge=written.wedge if written else None,
        error=written.error if written else None,
        ended_because=written.ended_because if written else UNFINISHED,
        client_pauses=written.client_pauses if written else 0,
        client_paused_s=written.client_paused_s if written else 0.0,
        client_loop_lag_s=written.client_loop_lag_s if written else None,
        client_cpu_share=written.client_cpu_share if written else 0.0,
        client_workers=written.client_workers if written else 1,
        engine=spec.engine,
        engine_pace=written.engine_pace if written else None,
        url=spec.url,
        started_at=spec.started_at,
        run_dir=str(path),
        oracle=oracle,
        divergence=divergence,
        mix=written.mix if written else None,
        in_flight_at_failure=written.in_flight_at_failure if written else None,
    )
    return RunFolder(path, records, summary, max(counted - len(loaded), 0), spec.spec)


def judged_view(
    path: Path, records: list[TurnRecord], oracle: str | None, written: dict | None
) -> tuple[list[TurnRecord], dict | None]:
    """The turns as the run's oracle judged them, and the replay's figures recomputed."""
    from repro.records import read_replayed
    from repro.results.oracle_view import divergence_figures, judged_records

    if oracle in (None, "validity", "none"):
        return records, None
    replayed = read_replayed(path)
    info = written or {}  # summary.json's divergence figures, when it was written
    return judged_records(records, oracle, replayed), divergence_figures(records, replayed, info)


def read_turns(turns: Path) -> list[TurnRecord]:
    """The rows of a turns.parquet (folder or file); anything else is one sentence."""
    return [TurnRecord(**row) for row in read_turn_table(turns).to_pylist()]


def read_turn_table(turns: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """turns.parquet as one Arrow table (only `columns`, when given), parts in write order;
    a table that is not repro's, or is damaged, is one sentence."""
    import pyarrow as pa

    from repro.results.store import TURN_SCHEMA

    wanted = list(columns or TURN_SCHEMA.names)
    parts = sorted(p for p in turns.iterdir() if _is_part(p)) if turns.is_dir() else [turns]
    for part in parts:  # a pipe or a device named like a part would block the reader
        if not part.is_file():
            raise UsageError(f"{part} is not a regular file; it cannot be a turns table.")
    if not parts:
        return TURN_SCHEMA.empty_table().select(wanted)  # a live run before its first flush
    part = turns
    try:
        tables = []
        for part in parts:
            tables.append(_read_part(part, wanted, turns))
        part = turns  # the parts are read: what fails from here is the table as a whole
        return _as_turns(pa.concat_tables(tables, promote_options="default"), turns)
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        if part != turns:  # one part of a folder: name it, and how to read the others
            raise UsageError(
                f"{part} is not a part repro wrote, or it is damaged ({reason}); rename it "
                f"to start with '_' to read the other parts of {turns.name}."
            ) from None
        raise UsageError(
            f"{turns} is not a turns table written by repro run, or it is damaged ({reason})."
        ) from None


# Columns added after runs were first written, with the value an older run's turns had.
_ADDED_LATER = {
    f.name: f.default
    for f in dataclasses.fields(TurnRecord)
    if f.default is not dataclasses.MISSING
}
GAP_COLUMNS = ("gap_count", "gap_mean_s", "gap_max_s", "gap_buckets", "gap_bucket_counts")


def _read_part(part: Path, wanted: list[str], turns: Path) -> pa.Table:
    """One part's `wanted` columns as repro writes them now: a run written when a turn kept
    its gaps as a list (`gaps_s`) gets the figures the list gives, and a column added since
    the run was written gets the value its turns had."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from repro.results.store import TURN_SCHEMA

    names = pq.read_schema(part).names
    gaps_as_list = "gaps_s" in names and "gap_count" not in names
    have = set(names) | (set(GAP_COLUMNS) if gaps_as_list else set())
    missing = [n for n in wanted if n not in have and n not in _ADDED_LATER]
    if missing:
        raise UsageError(
            f"{turns} is not a turns table written by repro run: it lacks {', '.join(missing)}."
        )
    read = [n for n in wanted if n in names]
    if gaps_as_list and any(n in GAP_COLUMNS for n in wanted):
        read.append("gaps_s")
    table = pq.read_table(part, columns=read)
    if "gaps_s" in table.column_names:
        table = _with_gap_figures(table)
    for name in wanted:
        if name not in table.column_names:
            field = TURN_SCHEMA.field(name)
            table = table.append_column(
                field, pa.array([_ADDED_LATER[name]] * table.num_rows, field.type)
            )
    return table.select(wanted)


def _with_gap_figures(table: pa.Table) -> pa.Table:
    """The table with the gap figures of its `gaps_s` lists in place of the lists."""
    import pyarrow as pa

    from repro.records import GapStats
    from repro.results.store import TURN_SCHEMA

    figures: dict[str, list] = {c: [] for c in GAP_COLUMNS}
    for gaps in table.column("gaps_s").to_pylist():
        stats = GapStats()
        for gap in gaps or ():
            stats.add(gap)
        buckets, counts = stats.bucket_columns()
        for name, value in zip(GAP_COLUMNS, (stats.count, stats.mean_s,
                               stats.max_s if stats.count else None, buckets, counts), strict=True):  # fmt: skip
            figures[name].append(value)
    table = table.drop_columns(["gaps_s"])
    for name in GAP_COLUMNS:
        field = TURN_SCHEMA.field(name)
        table = table.append_column(field, pa.array(figures[name], field.type))
    return table


def _is_part(path: Path) -> bool:
    return not path.name.startswith((".", "_"))  # what pyarrow's dataset reader reads


def _as_turns(table: pa.Table, where: Path) -> pa.Table:
    """The table with repro's types; an empty value where a turn always has one is one sentence."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from repro.results.store import TURN_SCHEMA

    table = table.cast(pa.schema([TURN_SCHEMA.field(name) for name in table.column_names]))
    types = {f.name: str(f.type) for f in dataclasses.fields(TurnRecord)}
    for name in table.column_names:
        column = table.column(name)
        empty = column.null_count > 0 and "None" not in types[name]
        if not empty and types[name].startswith("list["):
            empty = pc.list_flatten(column).null_count > 0
        if empty:
            raise UsageError(f"{where} is damaged: column '{name}' has empty values.")
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
