"""The embedded engine's pace, read from the run's scraped metrics, and the row that says it."""

from __future__ import annotations

from pathlib import Path

from repro.results import engine_pace
from repro.results.pace import role_pace
from repro.results.report import summary_rows
from repro.results.summary import summarize
from repro.sim.metrics import EngineMetrics


def _prom(wall_s: float, modelled_s: float, scale: float) -> str:
    metrics = EngineMetrics(
        busy_wall_seconds_total=wall_s, busy_modelled_seconds_total=modelled_s, time_scale=scale
    )
    return metrics.render("m", "decode")


def test_the_pace_is_modelled_seconds_per_scaled_wall_second(tmp_path: Path) -> None:
    assert role_pace(_prom(wall_s=10.0, modelled_s=40.0, scale=0.25)) == 1.0
    assert role_pace(_prom(wall_s=20.0, modelled_s=40.0, scale=0.25)) == 0.5
    assert role_pace(_prom(wall_s=0.0, modelled_s=0.0, scale=0.25)) is None  # never busy
    assert role_pace("sglang:num_running_reqs 3\n") is None  # another engine's metrics
    (tmp_path / "prefill.prom").write_text(_prom(10.0, 36.0, 0.25))
    (tmp_path / "decode.prom").write_text(_prom(10.0, 24.0, 0.25))
    (tmp_path / "router.prom").write_text("# nothing of ours\n")
    assert engine_pace(tmp_path) == {"decode": 0.6, "prefill": 0.9}
    assert engine_pace(tmp_path / "missing") == {}


def test_a_slow_role_is_named_in_a_yellow_row_and_a_quick_one_in_a_plain_row() -> None:
    slow = summarize([], config={}, wall_s=1.0, engine_pace={"prefill": 0.9, "decode": 0.6})
    rows = {row.label: row for row in summary_rows(slow, None)}
    assert rows["engine pace *"].tone == "yellow"
    assert "decode below 80%" in rows["engine pace *"].text
    assert "prefill 90%, decode 60%" in rows["engine pace *"].text
    quick = summarize([], config={}, wall_s=1.0, engine_pace={"single": 0.97})
    rows = {row.label: row for row in summary_rows(quick, None)}
    assert rows["engine pace"].text == "single 97% of its time scale"
    other = summarize([], config={}, wall_s=1.0)
    assert not any(row.label.startswith("engine pace") for row in summary_rows(other, None))
