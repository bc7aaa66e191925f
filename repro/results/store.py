"""The run folder, written as the run goes so that nothing measured is lost.

spec.json        everything needed to rerun (written first)
turns.parquet    one row per turn; rewritten atomically every few seconds, so at any
                 moment it is a complete, readable file holding every finished turn
failures.jsonl   each corrupted turn's full request and raw output, flushed per line
logs/            engine logs per role (the launcher writes them)
summary.json     written at the end, on every way out (also after an error or Ctrl-C)
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from repro.errors import UsageError
from repro.harness.turn import TurnRecord

FLUSH_EVERY_S = 5.0
BATCH_ROWS = 64

_ARROW_TYPES = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "int | None": pa.int64(),
    "float | None": pa.float64(),
    "str | None": pa.string(),
    "list[float]": pa.list_(pa.float64()),
    "list[str]": pa.list_(pa.string()),
}
# Built from TurnRecord's annotations (strings under postponed evaluation), so the two cannot drift.
TURN_SCHEMA = pa.schema([(f.name, _ARROW_TYPES[f.type]) for f in dataclasses.fields(TurnRecord)])


def check_output_file(option: str, path: Path) -> None:
    """Refuse a file path given to `option` (--junit, --html) that could not be written, in
    one sentence, before any work is spent on what would go in it."""
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; give the path of the file to write.")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {path}: {folder} is a file, not a folder.")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: the folder {folder} does not exist.")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable.")


class RunStore:
    """Appends turns and failures to one run folder; the folder must be new or empty."""

    def __init__(self, run_dir: Path) -> None:
        if any(
            (run_dir / name).exists() for name in ("spec.json", "turns.parquet", "summary.json")
        ):
            raise UsageError(
                f"{run_dir} already holds a run; choose a new --out so it is not overwritten."
            )
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"Cannot create the run folder {run_dir}: {exc.strerror}.") from None
        self.run_dir = run_dir
        self.records: list[TurnRecord] = []
        self._batches: list[pa.RecordBatch] = []
        self._pending: list[TurnRecord] = []
        self._flushed_at = time.monotonic()
        self._failures = (run_dir / "failures.jsonl").open("ab")

    @property
    def logs_dir(self) -> Path:
        return self.run_dir / "logs"

    @staticmethod
    def write_json(path: Path, data: Any) -> None:
        """Indented JSON, replaced atomically (a reader never sees half a file)."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
        os.replace(tmp, path)

    def write_spec(self, spec: dict[str, Any]) -> None:
        self.write_json(self.run_dir / "spec.json", spec)

    def write_summary(self, summary: dict[str, Any]) -> None:
        self.write_json(self.run_dir / "summary.json", summary)

    def append(self, record: TurnRecord) -> None:
        self.records.append(record)
        self._pending.append(record)
        if len(self._pending) >= BATCH_ROWS:
            self._seal_batch()

    def add_failure(
        self, record: TurnRecord, request: dict[str, Any], defects: list[dict[str, Any]]
    ) -> None:
        """One line per corrupted turn: the full request, the raw output and every defect."""
        line = {
            "session_id": record.session_id,
            "turn": record.turn,
            "defects": defects,
            "output": {
                "content": record.content,
                "reasoning": record.reasoning,
                "tool_calls": json.loads(record.tool_calls),
                "finish_reason": record.finish_reason,
            },
            "request": request,
        }
        self._failures.write(orjson.dumps(line) + b"\n")
        self._failures.flush()

    def due(self) -> bool:
        return time.monotonic() - self._flushed_at >= FLUSH_EVERY_S

    def flush(self) -> None:
        """Rewrite turns.parquet with every turn so far (tmp file + rename: never half-written)."""
        self._seal_batch()
        table = pa.Table.from_batches(self._batches, schema=TURN_SCHEMA)
        tmp = self.run_dir / "turns.parquet.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.run_dir / "turns.parquet")
        self._flushed_at = time.monotonic()

    def close(self) -> None:
        self.flush()
        self._failures.close()

    def _seal_batch(self) -> None:
        if not self._pending:
            return
        columns = {name: [getattr(r, name) for r in self._pending] for name in TURN_SCHEMA.names}
        self._batches.append(pa.RecordBatch.from_pydict(columns, schema=TURN_SCHEMA))
        self._pending = []
