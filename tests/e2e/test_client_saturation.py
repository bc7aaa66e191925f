"""repro measures itself: a starved event loop is flagged, and the figures it skews are marked."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from repro.harness import Endpoint, drive
from repro.results.report import summary_rows
from repro.spec import RunSpec
from tests.e2e import sim_server


def spin(seconds: float) -> None:
    """Burn CPU in the event loop's thread, as a hog does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_a_client_starved_by_a_cpu_hog_in_its_loop_says_it_was_the_bottleneck(
    tmp_path: Path,
) -> None:
    async def hog() -> None:
        # Something in repro's own process holding the loop: 80 ms of every 100 ms.
        while True:
            spin(0.08)
            await anyio.sleep(0.02)

    with sim_server.single(tmp_path, "--time-scale", "0.2") as engine:
        spec = RunSpec.build(url=engine.url, model="sim", sessions=3, context_max_tokens=6000,
                             max_turns=3, ramp_up_s=0)  # fmt: skip
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(hog)
                summary = await drive(spec, Endpoint(engine.url, {}, "external"), tmp_path / "run")
                group.cancel_scope.cancel()
    assert summary.turns >= 3 and summary.errors == 0
    assert summary.client_loop_lag_s["p99"] > 0.05 and summary.client_was_slow
    assert summary.client_cpu_share > 0.1  # the hog's CPU is the process's
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["client_was_slow"] and written["client_loop_lag_s"]["p99"] > 0.05
    rows = {row.label: row for row in summary_rows(summary, None)}
    assert "bottleneck" in rows["client *"].text and rows["client *"].tone == "yellow"
    assert "TTFT p50/p90/p99 *" in rows and "throughput *" in rows
    windows = (tmp_path / "run" / "client_load.jsonl").read_text().splitlines()
    assert windows and max(json.loads(w)["lag_p99_ms"] for w in windows) > 50
