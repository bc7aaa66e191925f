"""The run folder: turns.parquet is complete at every flush, failures are flushed per line."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from repro.errors import UsageError
from repro.harness.turn import TurnRecord
from repro.results.store import RunStore


def record(session_id: int = 0, turn: int = 0, corrupted: bool = False, **kw) -> TurnRecord:
    fields = dict(
        session_id=session_id, turn=turn, outcome="ok", http_status=200, error="",
        scheduled_at_s=1.0, sent_at_s=1.01, first_token_at_s=1.2, last_token_at_s=1.9, ended_at_s=2.0,
        prompt_tokens=2000 + 2600 * turn, completion_tokens=100, cached_tokens=None, finish_reason="tool_calls",
        content="", reasoning="thinking", tool_calls='[{"name": "read_file", "arguments": "{}"}]', n_calls=1,
        chunks=10, gaps_s=[0.05] * 9, request_bytes=1000, corrupted=corrupted,
        defect_kinds=["malformed_markup"] if corrupted else [], first_defect="malformed_markup@content:3: x" if corrupted else "",
    )  # fmt: skip
    fields.update(kw)
    return TurnRecord(**fields)


def test_flush_writes_a_readable_file_with_every_turn(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    for i in range(150):
        store.append(record(session_id=i % 7, turn=i // 7))
    store.flush()
    table = pq.read_table(tmp_path / "run" / "turns.parquet")
    assert table.num_rows == 150
    store.append(record(session_id=99))
    store.close()
    rows = pq.read_table(tmp_path / "run" / "turns.parquet").to_pylist()
    assert len(rows) == 151 and rows[-1]["session_id"] == 99
    assert rows[0]["gaps_s"] == [0.05] * 9 and rows[0]["cached_tokens"] is None


def test_failures_are_on_disk_before_close(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    bad = record(corrupted=True, content="<|DSML|function_calls>")
    store.add_failure(
        bad, {"messages": [{"role": "user", "content": "hi"}]}, [{"kind": "malformed_markup"}]
    )
    line = json.loads((tmp_path / "failures.jsonl").read_text())
    assert line["request"]["messages"][0]["content"] == "hi"
    assert line["output"]["content"] == "<|DSML|function_calls>"
    assert line["defects"] == [{"kind": "malformed_markup"}]
    store.close()


def test_an_earlier_run_is_never_overwritten(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_spec({"spec": {}})
    store.close()
    with pytest.raises(UsageError, match="already holds a run"):
        RunStore(tmp_path)
