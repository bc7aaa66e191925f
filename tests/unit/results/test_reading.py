"""Reading run folders back (also crashed ones) and comparing two runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from repro.errors import UsageError
from repro.results.compare import compare_rates, comparison_table
from repro.results.reading import read_run, read_turn_table
from repro.results.report import summary_rows
from repro.results.store import RunStore
from repro.results.summary import SUMMARY_COLUMNS, summarize, summarize_table
from tests.unit.results.test_store import record


def write_run(
    path: Path,
    corrupted: int,
    sessions: int = 80,
    finished: bool = True,
    engine_pace: dict[str, float] | None = None,
) -> Path:
    store = RunStore(path)
    store.write_spec({"config": {"index_k": "bf16"}, "engine": "repro-sim 0.1", "url": "http://x"})
    records = [record(session_id=i, corrupted=i < corrupted) for i in range(sessions)]
    for r in records:
        store.append(r)
    store.close()
    if finished:
        summary = summarize(
            records, config={"index_k": "bf16"}, wall_s=12.0, engine_pace=engine_pace
        )
        store.write_summary(summary.to_dict())
    return path


def test_a_finished_run_reads_back_with_its_figures(tmp_path: Path) -> None:
    folder = read_run(write_run(tmp_path / "a", corrupted=12))
    s = folder.summary
    assert (s.sessions, s.sessions_corrupted, s.wall_s, s.interrupted) == (80, 12, 12.0, False)
    assert len(folder.records) == 80 and s.config == {"index_k": "bf16"}


def test_a_report_keeps_the_engine_pace_the_run_measured(tmp_path: Path) -> None:
    folder = read_run(write_run(tmp_path / "a", corrupted=1, engine_pace={"decode": 0.6}))
    assert folder.summary.engine_pace == {"decode": 0.6}
    rows = {row.label: row.text for row in summary_rows(folder.summary, None)}
    assert "decode below 80%" in rows["engine pace *"]


def test_a_crashed_run_is_recomputed_from_its_turns(tmp_path: Path) -> None:
    s = read_run(write_run(tmp_path / "crashed", corrupted=3, finished=False)).summary
    assert s.sessions_corrupted == 3 and s.interrupted and s.error is None
    # It may still be running, or have been killed: the report claims no engine error, no Ctrl-C.
    rows = {row.label: row.text for row in summary_rows(s, None)}
    assert "engine error" not in rows and "interrupted" not in rows
    assert rows["unfinished"].startswith("no summary.json: the run is still going, or was killed")


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a run folder"):
        read_run(tmp_path)


def test_compare_tells_12_of_80_from_0_of_80() -> None:
    a = summarize([record(session_id=i, corrupted=i < 12) for i in range(80)], config={}, wall_s=1)
    b = summarize([record(session_id=i) for i in range(80)], config={}, wall_s=1)
    sessions, turns = compare_rates(a, b)
    assert sessions.what == "sessions corrupted" and sessions.a.k == 12 and sessions.b.k == 0
    assert sessions.p_value < 0.001 and turns.p_value < 0.001
    (same, _) = compare_rates(a, a)
    assert same.p_value == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("turns.parquet/part-000000.parquet", b"", r"part-000000.parquet is not a part repro"),
        ("turns.parquet/part-000000.parquet", b"x", r"part-000000.parquet is not a part repro"),
        ("spec.json", b"{", r"spec.json is not valid JSON"),
        ("spec.json", b"[]", r"spec.json does not hold a JSON object"),
        ("summary.json", b"", r"summary.json is not valid JSON"),
        ("summary.json", b"\xff", r"summary.json is not UTF-8 text"),
        ("summary.json", b"[" * 100_000, r"summary.json nests too deeply"),
        ("summary.json", b'{"interrupted": "maybe"}', r"summary.json is damaged at 'interrupted'"),
        ("summary.json", b'{"wall_s": NaN}', r"summary.json is damaged at 'wall_s'"),
        ("spec.json", b'{"config": ["pd"]}', r"spec.json is damaged at 'config'"),
        ("spec.json", b'{"config": {"topology": 1}}', r"spec.json is damaged at 'config.topology'"),
        (
            "spec.json",
            b'{"config": {}, "spec": {"oracle": "x"}}',
            r"spec.json: 'spec.oracle' is 'x', not one of validity, divergence, both, none\.",
        ),
    ],
)
def test_a_damaged_run_folder_is_one_sentence(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    folder = write_run(tmp_path / "a", corrupted=1)
    (folder / name).write_bytes(content)
    with pytest.raises(UsageError, match=message):
        read_run(folder)


def test_a_parquet_file_of_other_columns_is_not_a_turns_table(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "a", corrupted=1)
    shutil.rmtree(folder / "turns.parquet")
    pq.write_table(pa.table({"cell": [1, 2]}), folder / "turns.parquet")
    with pytest.raises(UsageError, match="is not a turns table written by repro run"):
        read_run(folder)


def test_a_run_folder_from_before_the_parts_still_reads(tmp_path: Path) -> None:
    # Earlier versions wrote turns.parquet as one file, rewritten whole at each flush.
    folder = write_run(tmp_path / "old", corrupted=5)
    table = pq.read_table(folder / "turns.parquet")
    shutil.rmtree(folder / "turns.parquet")
    pq.write_table(table, folder / "turns.parquet")
    assert (folder / "turns.parquet").is_file()
    s = read_run(folder).summary
    assert (s.sessions, s.sessions_corrupted, s.turns) == (80, 5, 80)


def test_a_run_folder_with_gap_lists_reads_with_their_figures(tmp_path: Path) -> None:
    # Earlier versions kept every inter-token gap of a turn as a list (gaps_s).
    folder = write_run(tmp_path / "old", corrupted=0, sessions=3)
    table = pq.read_table(folder / "turns.parquet")
    for name in ("gap_count", "gap_mean_s", "gap_max_s", "gap_buckets", "gap_bucket_counts"):
        table = table.drop_columns(name)
    gaps = [[0.01, 0.02, 0.03], [], [0.5]]
    table = table.append_column("gaps_s", pa.array(gaps, pa.list_(pa.float64())))
    shutil.rmtree(folder / "turns.parquet")
    pq.write_table(table, folder / "turns.parquet")
    run = read_run(folder)
    assert [r.gap_count for r in run.records] == [3, 0, 1]
    assert run.records[0].gap_mean_s == pytest.approx(0.02) and run.records[2].gap_max_s == 0.5
    itl = run.summary.latency_s["itl"]
    assert itl["max"] == 0.5 and itl["p50"] == pytest.approx(0.02, rel=0.03)  # nearest rank


def test_a_live_run_before_its_first_flush_reads_as_no_turns_yet(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "live")
    store.write_spec({"config": {}, "engine": "repro-sim 0.1", "url": "http://x"})
    s = read_run(tmp_path / "live").summary
    assert s.turns == 0 and s.interrupted and s.ended_because == "unfinished"
    store.close()


def test_summary_from_the_table_equals_summary_from_records(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "a", corrupted=7, sessions=30)
    records = read_run(folder).records
    table = read_turn_table(folder / "turns.parquet", SUMMARY_COLUMNS)
    context = {"config": {}, "wall_s": 3.0}
    assert summarize_table(table, **context) == summarize(records, **context)


def test_a_run_stopped_before_any_load_says_why(tmp_path: Path) -> None:
    # What `repro run` leaves when the engine fails to start or Ctrl-C comes during start-up.
    folder = tmp_path / "failed"
    folder.mkdir()
    failed = summarize([], config={}, wall_s=0.5, error="The prefill engine exited with code 1.")
    RunStore.write_json(folder / "summary.json", failed.to_dict())
    with pytest.raises(
        UsageError, match=r"holds no turns.*: The prefill engine exited with code 1"
    ):
        read_run(folder)
    stopped = summarize([], config={}, wall_s=0.5, interrupted=True)
    RunStore.write_json(folder / "summary.json", stopped.to_dict())
    with pytest.raises(UsageError, match="stopped before any load ran: interrupted"):
        read_run(folder)


def test_compare_with_a_run_that_measured_nothing_tests_nothing() -> None:
    from rich.console import Console

    a = summarize([record(session_id=i, corrupted=i < 12) for i in range(80)], config={}, wall_s=1)
    empty = summarize([], config={}, wall_s=1, interrupted=True)
    console = Console(record=True, width=200)
    console.print(comparison_table(a, empty, compare_rates(a, empty)))
    text = console.export_text()
    assert "no significant difference" not in text and "n/a (a run measured nothing)" in text


def test_a_run_folder_read_back_from_missing_keys_uses_what_is_there(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "a", corrupted=2)
    (folder / "spec.json").write_text("{}")
    (folder / "summary.json").write_text('{"error": "The decode engine died."}')
    s = read_run(folder).summary
    assert (s.sessions_corrupted, s.config, s.error) == (2, {}, "The decode engine died.")


def as_one_file(folder: Path) -> Path:
    """The run's turns.parquet rewritten as one file, as runs before the parts wrote it."""
    import pyarrow.parquet as pq

    table = pq.read_table(folder / "turns.parquet")
    shutil.rmtree(folder / "turns.parquet")
    pq.write_table(table, folder / "turns.parquet")
    return folder


def test_flipped_bytes_in_the_turns_table_are_one_sentence(tmp_path: Path) -> None:
    folder = as_one_file(write_run(tmp_path / "a", corrupted=1))
    data = bytearray((folder / "turns.parquet").read_bytes())
    for offset in range(len(data) - 40, len(data) - 8):  # the footer: the table's metadata
        data[offset] ^= 0xFF
    (folder / "turns.parquet").write_bytes(bytes(data))
    with pytest.raises(UsageError, match="is not a turns table written by repro run, or it is"):
        read_run(folder)


def test_empty_values_where_a_turn_always_has_one_are_one_sentence(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = as_one_file(write_run(tmp_path / "a", corrupted=1))
    table = pq.read_table(folder / "turns.parquet")
    nulls = pa.nulls(table.num_rows, pa.string())
    pq.write_table(table.set_column(2, "outcome", nulls), folder / "turns.parquet")
    with pytest.raises(UsageError, match="column 'outcome' has empty values"):
        read_run(folder)
    pq.write_table(table.drop_columns(["gap_buckets"]), folder / "turns.parquet")
    with pytest.raises(UsageError, match="it lacks gap_buckets"):
        read_run(folder)


def test_a_turns_table_may_be_a_folder_of_parts(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    folder = as_one_file(write_run(tmp_path / "a", corrupted=3, sessions=10))
    table = pq.read_table(folder / "turns.parquet")
    (folder / "turns.parquet").unlink()
    (folder / "turns.parquet").mkdir()
    pq.write_table(table.slice(0, 4), folder / "turns.parquet" / "part-0.parquet")
    pq.write_table(table.slice(4), folder / "turns.parquet" / "part-1.parquet")
    assert read_run(folder).summary.sessions_corrupted == 3
    (folder / "turns.parquet" / "part-1.parquet").write_bytes(b"PAR1 damaged")
    with pytest.raises(UsageError, match="or it is damaged"):
        read_run(folder)


def test_a_pipe_in_place_of_a_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os

    folder = write_run(tmp_path / "a", corrupted=1)
    for name in ("turns.parquet", "spec.json"):
        (folder / name).rename(folder / f"{name}.kept")
        os.mkfifo(folder / name)
        with pytest.raises(UsageError, match="not a regular file"):
            read_run(folder)
        (folder / name).unlink()
        (folder / f"{name}.kept").rename(folder / name)


def test_a_run_younger_than_its_first_write_says_so(tmp_path: Path) -> None:
    # What a live run looks like in its first seconds: spec.json, no turns, no summary yet.
    folder = tmp_path / "live"
    folder.mkdir()
    RunStore.write_json(folder / "spec.json", {"config": {}})
    with pytest.raises(UsageError, match="has no finished turns yet: the run is starting or"):
        read_run(folder)
    with pytest.raises(UsageError, match="does not exist"):
        read_run(tmp_path / "nowhere")


@pytest.mark.parametrize("line", [b"[1, 2]", b"null", b'"x"', b"{}", b"{garbage"])
def test_a_replay_line_repro_did_not_write_is_one_sentence(tmp_path: Path, line: bytes) -> None:
    from repro.records.replayed import read_replayed

    (tmp_path / "divergence.jsonl").write_bytes(line + b"\n")
    with pytest.raises(UsageError, match=r"divergence.jsonl line 1 is not a line repro wrote\."):
        read_replayed(tmp_path)


def test_turns_the_summary_counted_but_the_table_lost_are_said(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "a", corrupted=1, sessions=6)
    (part,) = (folder / "turns.parquet").iterdir()
    kept = pq.read_table(part).slice(0, 4)
    part.unlink()
    pq.write_table(kept, folder / "turns.parquet" / "part-000001.parquet")
    read = read_run(folder)
    assert read.turns_missing == 2 and len(read.records) == 4
    assert (
        write_run(tmp_path / "b", corrupted=0, sessions=3)
        and not read_run(tmp_path / "b").turns_missing
    )
    shutil.rmtree(folder / "turns.parquet")
    with pytest.raises(UsageError, match=r"turns.parquet is missing, though summary.json counts 6"):
        read_run(folder)


def test_a_damaged_part_is_named_with_how_to_read_the_rest(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "a", corrupted=1, sessions=6)
    bad = folder / "turns.parquet" / "part-000009.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(UsageError, match=r"part-000009.parquet is not a part repro wrote.*"
                       r"rename it to start with '_' to read the other parts"):  # fmt: skip
        read_run(folder)
    bad.rename(bad.with_name("_part-000009.parquet"))
    assert len(read_run(folder).records) == 6


def test_compare_names_the_load_two_runs_differ_in_and_refuses_one_run_twice(
    tmp_path: Path,
) -> None:
    import json

    from typer.testing import CliRunner

    from repro.cli import app

    a, b = write_run(tmp_path / "a", corrupted=3), write_run(tmp_path / "b", corrupted=0)
    for folder, context in ((a, 80_000), (b, 16_000)):
        spec = json.loads((folder / "spec.json").read_text())
        spec["spec"] = {"sessions": 80, "context_max_tokens": context, "oracle": "validity"}
        (folder / "spec.json").write_text(json.dumps(spec))
    done = CliRunner().invoke(app, ["compare", str(a), str(b), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["load_differs_in"] == {"context-max": {"a": 80_000, "b": 16_000}}
    table = CliRunner().invoke(app, ["compare", str(a), str(b)], terminal_width=200).stdout
    assert "load differs in" in table and "context-max 80000" in table
    same = CliRunner().invoke(app, ["compare", str(a), str(tmp_path / "." / "a") + "/"])
    assert same.exit_code == 2 and "A and B are the same run folder" in same.stderr
