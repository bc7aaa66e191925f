"""The sweep's table as parquet and JSON columns, and its page: curves, escaped text."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from repro.results.stats import wilson
from repro.sweep import SweepRow
from repro.sweep.page import write_page
from repro.sweep.table import write_parquet


def _row(sessions: int, context: int, corrupted: int, run_dir: str = "runs/x") -> SweepRow:
    return SweepRow(
        sessions=sessions,
        context_max_tokens=context,
        session_rate=wilson(corrupted, sessions),
        turn_rate=wilson(corrupted, sessions * 30),
        failed_turns=sessions // 40,
        wedged=False,
        max_prompt_tokens=context - 500,
        ttft_p90_s=0.1 * sessions,
        wall_s=60.0,
        run_dir=run_dir,
        reused=False,
    )


ROWS = [_row(1, 80_000, 0), _row(40, 80_000, 4), _row(80, 80_000, 12), _row(80, 16_000, 1)]


def test_parquet_holds_one_row_per_point_with_its_intervals(tmp_path: Path) -> None:
    path = tmp_path / "sweep.parquet"
    write_parquet(ROWS, path)
    table = pq.read_table(path).to_pylist()
    assert [(r["sessions"], r["context_max_tokens"]) for r in table] == [
        (1, 80_000), (40, 80_000), (80, 80_000), (80, 16_000),
    ]  # fmt: skip
    eighty = table[2]
    assert (eighty["sessions_corrupted"], eighty["sessions_measured"]) == (12, 80)
    assert eighty["sessions_corrupted_low"] < 0.15 < eighty["sessions_corrupted_high"]
    assert eighty["turns_corrupted_rate"] == 12 / 2400 and eighty["failed_turns"] == 2
    assert not list(tmp_path.glob(".*"))  # written through a temporary file, renamed


def test_the_page_draws_a_curve_per_context_and_escapes_run_text(tmp_path: Path) -> None:
    path = tmp_path / "sweep.html"
    rows = [*ROWS[:3], _row(80, 16_000, 1, run_dir="runs/<odd>&name")]
    write_page(rows, path, "repro sweep: <test>", "repro sweep --sessions 1,40,80")
    page = path.read_text()
    assert page.count("<svg") == 3 and "<script" not in page
    assert "to 80,000 tokens" in page and "to 16,000 tokens" in page  # one legend entry each
    assert "runs/&lt;odd&gt;&amp;name" in page and "<odd>" not in page
    assert "12/80 = 15.0%" in page


def test_the_table_cuts_no_figure_at_80_columns() -> None:
    import dataclasses

    from rich.console import Console

    from repro.sweep.table import render_table

    console = Console(width=80, record=True)
    stalled = dataclasses.replace(
        _row(1_000, 80_000, 251), wedged=True, failed_turns=120, ttft_p90_s=123.4, wall_s=12_345
    )
    render_table([*ROWS, stalled], console)
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    words = text.split()
    for figure in ("80,000", "12/80", "15.0%", "[8.8%,", "24.4%]", "251/1000", "25.1%"):
        assert figure in words, figure
    assert {"wedged", "123.40", "12345"} <= set(words)
