"""`repro bisect flags --parallel 3` end to end, at the CI scale of test_bisect.py: the same
culprit and classes as the serial search there, with trials' waves really overlapping, on
local deployments and on Slurm allocations of the local 3-node cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_bisect import engines_alive, flags

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BAD, GOOD = "hicache=on,index_k=bf16,topk_v2=on", "hicache=off,index_k=fp8,topk_v2=off"
# What the serial search finds on this campaign (test_bisect.py's killed-and-resumed test).
CULPRIT = {"hicache": "on", "index_k": "bf16"}
CLASSES = {"hicache": "needed", "index_k": "needed", "topk_v2": "irrelevant"}


def most_waves_at_once(out: Path) -> int:
    """The most waves in flight at one moment, from each wave folder's first and last write
    (waves that finished: one run ahead and cancelled as not needed has no summary)."""
    spans = []
    for wave in (out / "bisect" / "trials").glob("*/wave-*/"):
        if not (wave / "summary.json").exists():
            assert "-unused-" in wave.name, wave
            continue
        spans.append(
            ((wave / "spec.json").stat().st_mtime, (wave / "summary.json").stat().st_mtime)
        )
    return max(sum(start <= t < end for start, end in spans) for t, _ in spans)


def check_report(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["culprit"] == CULPRIT and report["classes"] == CLASSES
    assert report["trials"] == 5
    return report


def test_three_local_deployments_find_what_the_serial_search_finds(tmp_path: Path) -> None:
    check_report(flags(tmp_path, "--bad", BAD, "--good", GOOD, "--parallel", "3"))
    assert most_waves_at_once(tmp_path) == 3  # the three knock-outs together
    assert engines_alive(tmp_path, wait_s=10) == []


@pytest.mark.usefixtures("slurm_cluster")
def test_three_slurm_allocations_find_the_same(tmp_path: Path) -> None:
    result = flags(tmp_path, "--launcher", "slurm", "--bad", BAD, "--good", GOOD,
                   "--parallel", "3")  # fmt: skip
    check_report(result)
    assert most_waves_at_once(tmp_path) == 3
    files = list((tmp_path / "bisect").rglob("engine-logs/placement.json"))
    placements = [json.loads(p.read_text()) for p in files]
    jobs = {p["job_id"] for p in placements}
    assert len(jobs) == 3, jobs  # one allocation per deployment slot, kept from trial to trial
    # Five configurations; an engine starts only for a wave (its logs sit in that wave's
    # folder, trials/<configuration>/wave-NNN/): again on another slot when a wave of it
    # runs ahead there, even one cancelled as not needed.
    configurations = [f.parents[2].name for f in files]
    waves = list((tmp_path / "bisect" / "trials").glob("*/wave-*/"))
    assert len(set(configurations)) == 5 and len(files) <= len(waves), configurations
    for placement in placements:
        nodes = {role: where["node"] for role, where in placement["roles"].items()}
        # The CI campaign runs a single server (test_bisect.CI_STATS): its one role takes a
        # node of its own allocation (PD's layout is test_slurm.py's).
        assert set(nodes) == {"single"} and nodes["single"] in {"n1", "n2", "n3"}
    listed = subprocess.run(
        ["squeue", "--noheader", "--jobs", ",".join(jobs)], capture_output=True, text=True
    )
    assert listed.stdout.strip() == ""
    assert engines_alive(tmp_path) == []
