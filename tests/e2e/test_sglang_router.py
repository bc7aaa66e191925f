"""`repro run --router sglang`: the real sglang-router 0.3.2 in front of the embedded prefill and decode."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.conftest import FAST, engine_processes, repro, summary

pytestmark = pytest.mark.e2e


def router_processes(port: int) -> list[int]:
    """PIDs still running sglang-router on `port` (the sim-only helper does not see it)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if "sglang_router.launch_router" in words and str(port) in words:
                alive.append(int(entry.name))
    return alive


def test_sixteen_sessions_through_the_real_router_every_turn_checked(
    tmp_path: Path, sglang_python: Path
) -> None:
    out = tmp_path / "run"
    done = repro("run", "--router", "sglang", "--sessions", "16", *FAST,
                 "--set", f"sglang_router_python={sglang_python}", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = summary(out)
    assert s["config"]["router"] == "sglang" and s["config"]["topology"] == "pd"
    assert s["sessions"] == 16 and s["sessions_started"] == 16
    assert s["errors"] == 0 and s["stalls"] == 0 and s["outcomes"] == {"ok": s["turns"]}
    assert s["turns_corrupted"] == 0  # fp8 index-K is healthy, through any router
    turns = pq.read_table(out / "turns.parquet").to_pandas()
    assert len(turns) == s["turns"] >= 16 * 4 and set(turns.session_id) == set(range(16))
    assert turns.corrupted.notna().all() and (turns.outcome == "ok").all()  # every turn judged
    assert (turns.prompt_tokens > 1_000).all() and turns.n_calls.sum() > 0
    roles = {r["name"]: r for r in json.loads((out / "spec.json").read_text())["roles"]}
    router_argv = roles["router"]["argv"]
    assert router_argv[:3] == [str(sglang_python), "-m", "sglang_router.launch_router"]
    assert {"--disable-retries", "--disable-circuit-breaker", "--pd-disaggregation"} <= set(
        router_argv
    )
    assert router_argv[router_argv.index("--prometheus-host") + 1] == "127.0.0.1"
    assert s["url"] == f"http://127.0.0.1:{roles['router']['port']}"  # the client's only address
    assert "sglang_router.launch_router" in (out / "logs" / "router.log").read_text()
    assert engine_processes(out) == [] and router_processes(roles["router"]["port"]) == []
