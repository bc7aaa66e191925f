"""The run summary and compare tables at 80 columns cut nothing; compare has --json."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from repro.cli import app
from repro.results.compare import compare_rates, comparison_table
from repro.results.reading import read_run
from repro.results.report import summary_table
from tests.table_cells import assert_nothing_cut, cells
from tests.unit.results.test_reading import write_run

LONG = "results/20261130-061800-pd-index_k-bf16-transfer_backend-nixl-router-sglang-run"


def test_summary_table_cuts_nothing_at_80_columns(tmp_path: Path) -> None:
    folder = write_run(tmp_path / LONG, corrupted=12)
    summary = read_run(folder).summary
    table = summary_table(summary, folder)
    assert_nothing_cut(table, 80)
    assert ["runfolder", "".join(str(folder).split())] in cells(table, 80)


def test_compare_table_cuts_nothing_at_80_columns(tmp_path: Path) -> None:
    a = read_run(write_run(tmp_path / LONG / "a", corrupted=12)).summary
    b = read_run(write_run(tmp_path / LONG / "b", corrupted=0)).summary
    assert_nothing_cut(comparison_table(a, b, compare_rates(a, b)), 80)


def test_compare_json(tmp_path: Path) -> None:
    a, b = write_run(tmp_path / "a", corrupted=12), write_run(tmp_path / "b", corrupted=0)
    result = CliRunner().invoke(app, ["compare", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["a"]["run_dir"].endswith("a") and doc["differs_in"] == []
    sessions = doc["rates"][0]
    assert sessions["what"] == "sessions corrupted"
    assert (sessions["a"]["corrupted"], sessions["a"]["of"], sessions["b"]["corrupted"]) == (
        12,
        80,
        0,
    )
    assert sessions["fisher_p"] < 0.001
