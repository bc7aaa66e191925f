"""The engine's fault mechanisms through real processes, at CI scale: directions, not counts.

conftest.SPILL (a 3 GB device pool, a 12 GB/s host link) brings the story's exposure down to
24 sessions of 12k tokens: the sessions' prefixes spill to the host tier and later turns load
them back, which is where the index-K race lives.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from tests.e2e import sim_server
from tests.e2e.conftest import SPILL, repro, summary
from tests.e2e.sim_client import chat_body, stream_chat

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
SMALL = ["--context-max", "12000", "--set", "time_scale=0.05", "--ramp-up", "0.3", *SPILL]


def _run(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "run"
    done = repro("run", *SMALL, *args, "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _metric(run_dir: Path, role: str, name: str) -> float:
    for line in (run_dir / "metrics" / f"{role}.prom").read_text().splitlines():
        if line.startswith(f"{name}{{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in {role}'s metrics")


@pytest.mark.parametrize(
    ("args", "corrupts"),
    [
        (["--index-k", "bf16"], True),
        (["--index-k", "fp8"], False),  # fp8's fused store waits for the layer
        (["--index-k", "bf16", "--knob", "index_k_gate=fixed"], False),
    ],
    ids=["bf16", "fp8", "gate-fixed"],
)
def test_load_backs_race_only_on_the_ungated_bf16_path(
    tmp_path: Path, args: list[str], corrupts: bool
) -> None:
    run = _run(tmp_path, "--topology", "single", "--sessions", "24", *args)
    assert _metric(run, "single", "sglang:load_back_tokens_total") > 100_000  # spilled each time
    corrupted = summary(run)["turns_corrupted"]
    assert (corrupted >= 1) if corrupts else (corrupted == 0)
    # Only a stale read can derail an output, and a corrupted turn needs a derailed read.
    stale = _metric(run, "single", "sglang:sim_index_k_stale_reads_total")
    derailed = _metric(run, "single", "sglang:sim_index_k_derailed_total")
    assert corrupted <= derailed <= stale
    turns = pq.read_table(run / "turns.parquet").to_pandas()
    assert not (turns.corrupted & (turns.turn == 0)).any()  # a first turn has nothing to load


def test_no_spill_at_low_load_means_no_race(tmp_path: Path) -> None:
    # Two sessions fit the same pool: nothing is spilled, nothing loaded back, nothing races.
    run = _run(tmp_path, "--topology", "single", "--sessions", "2", "--index-k", "bf16")
    assert _metric(run, "single", "sglang:load_back_tokens_total") == 0
    assert summary(run)["turns_corrupted"] == 0


def test_stuck_hand_overs_fail_turns_with_the_reason_never_corrupt_them(tmp_path: Path) -> None:
    run = _run(tmp_path, "--sessions", "24", "--index-k", "bf16")
    turns = pq.read_table(run / "turns.parquet").to_pandas()
    failed = turns[turns.outcome != "ok"]
    assert len(failed) >= 1 and (failed.outcome == "http_error").all()
    assert failed.error.str.contains("never became ready to send").all()
    assert not failed.corrupted.any()
    assert _metric(run, "prefill", "sglang:sim_stuck_handovers_total") == len(failed)
    assert "never became ready to send" in (run / "logs" / "prefill.log").read_text()


def _abort_streams(url: str, count: int) -> None:
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            with client.stream(
                "POST", url + "/v1/chat/completions", json=chat_body(stream=True)
            ) as response:
                next(response.iter_lines())  # first token arrived: close mid-stream


def _worker_alive(client: httpx.Client, prefill: sim_server.SimProcess) -> bool:
    return client.get(prefill.url + "/server_info").json()["internal_states"][0][
        "bootstrap_worker_alive"
    ]


@pytest.mark.parametrize("abort_fix", [False, True])
def test_abort_storm_wedges_nixl_unless_fixed(tmp_path: Path, abort_fix: bool) -> None:
    flags = [
        "--disaggregation-transfer-backend",
        "nixl",
        "--disaggregation-bootstrap-timeout",
        "3",
        "--time-scale",
        "3",
    ]
    if abort_fix:
        flags.append("--abort-fix")
    with sim_server.pd(tmp_path, *flags) as dep, httpx.Client(timeout=30) as client:
        _abort_streams(dep.url, 4)
        deadline = time.monotonic() + 10
        while _worker_alive(client, dep.prefill) and time.monotonic() < deadline and not abort_fix:
            time.sleep(0.1)
        result = stream_chat(client, dep.url, chat_body(stream=True))
        if abort_fix:
            assert (
                _worker_alive(client, dep.prefill)
                and result.done
                and result.finish_reason() == "stop"
            )
        else:
            assert not _worker_alive(client, dep.prefill)
            assert (
                result.status == 500 and result.chunks == []
            )  # no token, an error after the timeout
