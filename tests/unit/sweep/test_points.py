"""A sweep's point folders: named by what the outcome depends on, found again, set aside."""

from __future__ import annotations

import json
from pathlib import Path

from repro.results.summary import summarize
from repro.spec import RunSpec
from repro.sweep import SweepPlan
from repro.sweep.points import finished, point_folder, set_aside


def _points(**run: object) -> list:
    return SweepPlan.build(run=RunSpec.build(**run), sessions=(1, 10)).points()


def test_a_point_folder_depends_on_what_the_run_depends_on(tmp_path: Path) -> None:
    one, ten = _points()
    assert point_folder(tmp_path, one) == point_folder(tmp_path, _points()[0])
    assert point_folder(tmp_path, one) != point_folder(tmp_path, ten)
    bf16 = _points(knobs={"index_k": "bf16"})[0]
    assert point_folder(tmp_path, one) != point_folder(tmp_path, bf16)
    assert point_folder(tmp_path, _points(port=1234)[0]) == point_folder(tmp_path, one)
    assert point_folder(tmp_path, one).name.startswith("s001-c80000-")


def _write_summary(folder: Path, **fields: object) -> None:
    folder.mkdir(parents=True)
    summary = summarize([], config={}, wall_s=1.0, **fields)  # type: ignore[arg-type]
    (folder / "summary.json").write_text(json.dumps(summary.to_dict()))


def test_only_a_run_that_reached_its_end_counts_as_measured(tmp_path: Path) -> None:
    assert finished(tmp_path / "missing") is None
    _write_summary(tmp_path / "done")
    _write_summary(tmp_path / "wedged", wedge="no token for 30 s")
    _write_summary(tmp_path / "stopped", interrupted=True)
    _write_summary(tmp_path / "crashed", error="the engine died")
    assert finished(tmp_path / "done") is not None and finished(tmp_path / "wedged") is not None
    assert finished(tmp_path / "stopped") is None and finished(tmp_path / "crashed") is None
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "summary.json").write_text("{not json")
    assert finished(tmp_path / "torn") is None
    for shape in ("[]", "null", '"x"'):  # JSON, but not a summary: measured again, no traceback
        (tmp_path / "torn" / "summary.json").write_text(shape)
        assert finished(tmp_path / "torn") is None


def test_an_unfinished_attempt_is_renamed_never_deleted(tmp_path: Path) -> None:
    folder = tmp_path / "s010-c80000-abc"
    for n in (1, 2):
        folder.mkdir()
        (folder / "turns.parquet").write_text(str(n))
        assert set_aside(folder) == tmp_path / f"s010-c80000-abc.attempt-{n}"
    assert (tmp_path / "s010-c80000-abc.attempt-2" / "turns.parquet").read_text() == "2"
