"""`repro sweep` end to end: real runs per point, the table, and resuming what was measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import repro

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
SMALL = ["--sessions", "1,3", "--context-max", "8000", "--set", "time_scale=0.05",
         "--ramp-up", "0.2", "--index-k", "bf16"]  # fmt: skip


def _sweep(out: Path) -> tuple[dict, str]:
    done = repro("sweep", *SMALL, "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_sweep_measures_each_point_once_and_resumes(tmp_path: Path) -> None:
    result, log = _sweep(tmp_path)
    rows = result["rows"]
    assert [(r["sessions"], r["context_max_tokens"]) for r in rows] == [(1, 8000), (3, 8000)]
    assert [r["sessions_measured"] for r in rows] == [1, 3] and not any(r["reused"] for r in rows)
    assert all(r["turns_measured"] > 0 and r["sessions_corrupted_high"] > 0 for r in rows)
    assert Path(result["parquet"]).exists() and "<svg" in Path(result["html"]).read_text()
    assert "sweep 2/2: 3 sessions to 8,000 tokens: running in" in log

    again, log = _sweep(tmp_path)
    assert [r["reused"] for r in again["rows"]] == [True, True] and "running in" not in log
    assert again["rows"][1]["turns_measured"] == rows[1]["turns_measured"]

    # A point whose run did not reach its end is run again; its folder is kept aside.
    unfinished = Path(rows[1]["run_dir"])
    (unfinished / "summary.json").unlink()
    third, log = _sweep(tmp_path)
    assert [r["reused"] for r in third["rows"]] == [True, False]
    assert Path(f"{unfinished}.attempt-1", "turns.parquet").exists() and "kept as" in log
