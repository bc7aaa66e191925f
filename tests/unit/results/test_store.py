"""The run folder: turns.parquet grows by parts, never rewritten; failures go out per line."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import anyio
import pandas as pd
import pyarrow.parquet as pq
import pytest

from repro.errors import StoreError, UsageError
from repro.records.gap_stats import GapStats
from repro.records.turn import TurnRecord
from repro.results import store as store_module
from repro.results.reading import read_turn_table
from repro.results.store import RunStore


def gap_columns(gaps_s: list[float]) -> dict:
    """A TurnRecord's gap fields for these gaps, as the client keeps them."""
    stats = GapStats()
    for gap in gaps_s:
        stats.add(gap)
    buckets, counts = stats.bucket_columns()
    return dict(gap_count=stats.count, gap_mean_s=stats.mean_s, gap_max_s=stats.max_s if
                gaps_s else None, gap_buckets=buckets, gap_bucket_counts=counts)  # fmt: skip


def record(session_id: int = 0, turn: int = 0, corrupted: bool = False, **kw) -> TurnRecord:
    fields = dict(
        session_id=session_id, turn=turn, outcome="ok", http_status=200, error="",
        scheduled_at_s=1.0, sent_at_s=1.01, first_token_at_s=1.2, last_token_at_s=1.9, ended_at_s=2.0,
        prompt_tokens=2000 + 2600 * turn, completion_tokens=100, cached_tokens=None, finish_reason="tool_calls",
        content="", reasoning="thinking", tool_calls='[{"name": "read_file", "arguments": "{}"}]', n_calls=1,
        chunks=10, **gap_columns([0.05] * 9), request_bytes=1000, corrupted=corrupted,
        defect_kinds=["malformed_markup"] if corrupted else [], first_defect="malformed_markup@content:3: x" if corrupted else "",
    )  # fmt: skip
    fields.update(kw)
    return TurnRecord(**fields)


def test_each_flush_appends_a_part_and_never_rewrites_one(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    turns = tmp_path / "run" / "turns.parquet"
    assert read_turn_table(turns).num_rows == 0  # readable before the first flush
    for i in range(150):
        store.append(record(session_id=i % 7, turn=i // 7))
    anyio.run(store.flush)
    first = (turns / "part-000000.parquet").read_bytes()
    assert pq.read_table(turns).num_rows == 150
    store.append(record(session_id=99))
    assert store.close() is None
    assert (turns / "part-000000.parquet").read_bytes() == first
    assert sorted(p.name for p in turns.iterdir()) == ["part-000000.parquet", "part-000001.parquet"]
    rows = pq.read_table(turns).to_pylist()
    assert len(rows) == 151 and rows[-1]["session_id"] == 99  # parts read back in write order
    assert rows[0]["gap_count"] == 9 and rows[0]["gap_max_s"] == 0.05
    assert sum(rows[0]["gap_bucket_counts"]) == 9 and rows[0]["cached_tokens"] is None
    assert len(pd.read_parquet(turns)) == 151  # one table for pandas too
    assert store.rows_written == 151 and store.rows_lost == 0


def test_a_flush_cancelled_as_the_load_ends_still_writes_the_rows_it_took(tmp_path: Path) -> None:
    """The periodic flush can wake in the loop iteration where the last session ends and the
    load's task group is cancelled: the rows it took must reach a part (CI once saw a wave
    lose all of its turns that way and be taken for an engine that answered nothing)."""
    store = RunStore(tmp_path / "run")
    for i in range(40):
        store.append(record(session_id=i))

    async def load_ends_during_the_flush() -> None:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await store.flush()

    anyio.run(load_ends_during_the_flush)
    assert store.close() is None
    assert read_turn_table(tmp_path / "run" / "turns.parquet").num_rows == 40


def test_a_write_that_keeps_failing_is_one_error_and_keeps_the_parts_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "RETRY_AFTER_S", (0.0, 0.0))
    store = RunStore(tmp_path / "run")
    store.append(record(session_id=1))
    anyio.run(store.flush)
    tries = []

    def full_disk(table: object, where: Path) -> None:
        tries.append(where)
        Path(where).write_bytes(b"PAR1 half a part")  # what a write cut short leaves
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_module.pq, "write_table", full_disk)
    store.append(record(session_id=2))
    store.append(record(session_id=3))
    with pytest.raises(StoreError) as raised:
        anyio.run(store.flush)
    message = str(raised.value)
    assert len(tries) == store_module.WRITE_TRIES
    assert "part-000001.parquet: No space left on device (3 tries)" in message
    assert "the 1 turns written before are kept" in message
    store.append(record(session_id=4))  # a turn that ends while the run stops
    assert store.close() is raised.value
    assert store.rows_written == 1 and store.rows_lost == 3
    turns = tmp_path / "run" / "turns.parquet"
    assert [p.name for p in turns.iterdir()] == ["part-000000.parquet"]  # no half part left
    assert read_turn_table(turns, ["session_id"]).to_pylist() == [{"session_id": 1}]


def test_a_line_cut_short_by_a_failed_write_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "RETRY_AFTER_S", (0.0, 0.0))
    store = RunStore(tmp_path)
    real_write, calls = os.write, []

    def write_half_then_fail(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 2:  # the first try writes half the line, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data)[: max(1, len(data) // 2)] if len(calls) == 1 else data)

    monkeypatch.setattr(store_module.os, "write", write_half_then_fail)
    store.add_protocol_error(3, 1, "event is not valid JSON", "{cut", 4)
    monkeypatch.undo()
    lines = (tmp_path / "protocol_errors.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["{cut"]
    store.close()


def test_protocol_errors_file_appears_only_when_one_happens(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a")
    store.close()
    assert not (tmp_path / "a" / "protocol_errors.jsonl").exists()
    store = RunStore(tmp_path / "b")
    store.add_protocol_error(0, 2, "breaks the schema", "x" * 4096, 9000)
    store.close()
    line = json.loads((tmp_path / "b" / "protocol_errors.jsonl").read_text())
    assert line["event_chars"] == 9000 and line["truncated"] and line["turn"] == 2


def test_failures_are_on_disk_before_close(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    bad = record(corrupted=True, content="<|DSML|function_calls>")
    calls = [{"name": "read_file", "arguments": "{}"}]
    request = {"messages": [{"role": "user", "content": "hi"}]}
    store.add_failure(bad, request, [{"kind": "malformed_markup"}], calls)
    line = json.loads((tmp_path / "failures.jsonl").read_text())
    assert line["output"]["tool_calls"] == calls
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


def test_a_run_folder_is_refused_by_what_it_already_holds(tmp_path: Path) -> None:
    from repro.results.store import create_run_folder

    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="already exists and is not empty"):
        create_run_folder(used, refuse="anything")
    create_run_folder(used, refuse="a run")  # a stray file is no run
    (used / "summary.json").write_text("{}")
    with pytest.raises(UsageError, match="already holds a run"):
        create_run_folder(used, refuse="a run")
    create_run_folder(used, refuse="nothing")  # a worker's folder, made by its parent
    create_run_folder(tmp_path / "new" / "run", refuse="anything")
    assert (tmp_path / "new" / "run").is_dir()


_FIRST_PART = """
import json, sys
from pathlib import Path
from repro.records.turn import TurnRecord
from repro.results.store import RunStore
store = RunStore(Path(sys.argv[1]))
before = set(sys.modules)
store.append(TurnRecord(**json.loads(sys.argv[2])))
assert store.close() is None
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_a_new_store_writes_its_first_part_without_importing_anything(tmp_path: Path) -> None:
    """pyarrow imports pandas on its first array (0.3 s): a store does that when it is made,
    before the load, not in the writer thread at its first flush, seconds into a run. In a
    fresh interpreter, where nothing else has imported pandas yet."""
    import dataclasses
    import subprocess
    import sys

    row = json.dumps(dataclasses.asdict(record(corrupted=True)))
    done = subprocess.run([sys.executable, "-c", _FIRST_PART, str(tmp_path / "run"), row],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert read_turn_table(tmp_path / "run" / "turns.parquet").num_rows == 1
