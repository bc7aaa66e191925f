"""`repro bisect flags` end to end: the embedded engine started for real on 127.0.0.1, at CI
scale (short sessions, a fast engine clock, waves of 40, SPRT p0=2% / p1=20%)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.spec import DEFAULT_PROFILES
from tests.e2e.conftest import FAST, SPILL, processes_with_ports, repro

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# CI scale: CLEAN after 15 clean sessions, CORRUPTING on 2 early corruptions, and "cured"
# after 36 clean sessions (one wave). A single server whose small pool spills (SPILL) races at
# this scale; a PD pair would also stall hand-overs, which waste CI time.
CI_STATS = ["--sessions", "40", "--p0", "0.02", "--p1", "0.2", "--sessions-cap", "160",
            *SPILL, "--topology", "single", "--set", "time_scale=0.05"]  # fmt: skip


def flags(out: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return repro("bisect", "flags", *args, *FAST, *CI_STATS, "--out", str(out), "--json",
                 timeout=timeout)  # fmt: skip


def wave_dirs(out: Path) -> dict[str, list[str]]:
    trials = out / "bisect" / "trials"
    return {t.name: sorted(w.name for w in t.glob("wave-*")) for t in trials.iterdir()}


def engines_alive(out: Path, wait_s: float = 0.0) -> list[int]:
    """PIDs of this campaign's engine processes (found by their ports) still alive."""
    ports = set()
    for spec in (out / "bisect" / "trials").glob("*/wave-*/spec.json"):
        ports |= {str(role["port"]) for role in json.loads(spec.read_text())["roles"]}
    deadline = time.monotonic() + wait_s
    while True:
        alive = processes_with_ports(sorted(ports)) if ports else []
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.2)


def test_killed_after_the_third_trial_resumes_without_repeating_one(tmp_path):
    """The story's pair of needed knobs plus a red herring, with the campaign killed hard."""
    bad, good = "hicache=on,index_k=bf16,topk_v2=on", "hicache=off,index_k=fp8,topk_v2=off"
    command = [sys.executable, "-m", "repro", "bisect", "flags", "--bad", bad, "--good", good,
               *FAST, *CI_STATS, "--out", str(tmp_path), "--json"]  # fmt: skip
    trials = tmp_path / "bisect" / "trials"
    first = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and first.poll() is None:
            if trials.is_dir() and len(list(trials.iterdir())) >= 4:
                break  # the fourth trial has started: three are decided
            time.sleep(0.2)
        assert first.poll() is None, "the campaign ended before its fourth trial"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        # The engine roles die with the campaign that started them (the launcher's
        # parent-death signal), even on SIGKILL.
        assert engines_alive(tmp_path, wait_s=10) == []
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        for pid in engines_alive(tmp_path):
            os.kill(pid, signal.SIGKILL)
    cached_before = (tmp_path / "bisect" / "cache").glob("*.json")
    assert len(list(cached_before)) >= 3
    before = wave_dirs(tmp_path)

    rerun = repro("bisect", "flags", "--bad", bad, "--good", good, *FAST, *CI_STATS,
                  "--out", str(tmp_path), "--json", timeout=300)  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["culprit"] == {"hicache": "on", "index_k": "bf16"}
    assert report["classes"] == {"hicache": "needed", "index_k": "needed", "topk_v2": "irrelevant"}
    table = {row["trial"]: row for row in report["table"]}
    after = wave_dirs(tmp_path)
    for label in ("bad", "good", "revert hicache"):
        row, key = table[label], table[label]["cache_key"]
        # Every wave a decided trial had was reused from the cache, none run again; the
        # search may still extend one with new sessions (bad, as the reference for a gray
        # comparison), numbered on from where it stopped.
        assert before[key] and after[key][: len(before[key])] == before[key], label
        assert row["from_cache_sessions"] == 40 * len(before[key]), label
        firsts = [
            json.loads((tmp_path / "bisect" / "trials" / key / w / "spec.json").read_text())[
                "first_session_id"
            ]
            for w in after[key]
        ]
        assert firsts == [40 * i for i in range(len(firsts))], label
    assert report["trials"] == 5 and report["sessions"] < 1000


def test_a_stop_signal_is_answered_at_once_and_leaves_no_engine(tmp_path):
    """SIGTERM (a CI job cancelled) while two deployments run waves: a line at once, exit 130
    with the resume hint, every engine gone; a second signal would kill them without waiting."""
    bad, good = "hicache=on,index_k=bf16,topk_v2=on", "hicache=off,index_k=fp8,topk_v2=off"
    command = [sys.executable, "-m", "repro", "bisect", "flags", "--bad", bad, "--good", good,
               *FAST, *CI_STATS, "--parallel", "2", "--out", str(tmp_path)]  # fmt: skip
    waves = tmp_path / "bisect" / "trials"
    campaign = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(waves.glob("*/wave-*/turns*"))) < 2:
            assert time.monotonic() < deadline, "the two deployments' waves did not start"
            time.sleep(0.2)  # both endpoints' waves are under way
        assert campaign.poll() is None, "the campaign ended before its waves ran"
        campaign.send_signal(signal.SIGTERM)
        _, stderr = campaign.communicate(timeout=60)
    finally:
        if campaign.poll() is None:
            campaign.kill()
    assert campaign.returncode == 130, stderr
    assert "interrupted: stopping the waves and their engines" in stderr, stderr
    assert "run the same command again to resume" in " ".join(stderr.split()), stderr
    assert "Traceback" not in stderr
    assert engines_alive(tmp_path, wait_s=5) == []


CUSTOM_KNOBS = """
[knobs.host_tier]
values = ["off", "on"]
description = "this team's name for HiCache"
map.on.engine = { args = ["--enable-hierarchical-cache"] }

[knobs.indexer_cache]
values = ["fp8", "bf16"]
description = "this team's name for the index-K dtype"
map.bf16.engine = { args = ["--index-k-dtype", "bf16"] }
map.fp8.engine = { args = ["--index-k-dtype", "fp8"] }

[knobs.banner]
values = ["plain", "fancy"]
description = "a red herring: an environment variable the engine never reads"
map.fancy.engine = { env = { REPRO_TEST_BANNER = "fancy" } }
"""


def custom_profile(folder: Path) -> Path:
    """The embedded engine's own profile with its knobs replaced by three of this test's."""
    text = DEFAULT_PROFILES["sim"].read_text(encoding="utf-8")
    head = text.split("\n[knobs.", 1)[0]
    path = folder / "custom-knobs.toml"
    path.write_text(head + "\n" + CUSTOM_KNOBS, encoding="utf-8")
    return path


def test_a_profile_with_its_own_knobs_bisects_the_same(tmp_path):
    profile = custom_profile(tmp_path)
    result = flags(
        tmp_path,
        "--profile", str(profile),
        "--bad", "host_tier=on,indexer_cache=bf16,banner=fancy",
        "--good", "host_tier=off,indexer_cache=fp8,banner=plain",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["culprit"] == {"host_tier": "on", "indexer_cache": "bf16"}
    assert report["classes"] == {
        "host_tier": "needed",
        "indexer_cache": "needed",
        "banner": "irrelevant",
    }
    # bad, good, three reverts; good + the culprit is "revert banner" again, from the cache.
    assert report["trials"] == 5


def test_the_divergence_oracle_alone_finds_the_same_culprit(tmp_path):
    """No grammar check: each wave is judged against its requests replayed alone."""
    result = flags(
        tmp_path,
        "--bad", "hicache=on,index_k=bf16,topk_v2=on",
        "--good", "hicache=off,index_k=fp8,topk_v2=off",
        "--oracle", "divergence", "--replay-sample", "all",
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["culprit"] == {"hicache": "on", "index_k": "bf16"}
    assert report["classes"] == {"hicache": "needed", "index_k": "needed", "topk_v2": "irrelevant"}
    waves = list((tmp_path / "bisect" / "trials").glob("*/wave-*/summary.json"))
    summaries = [json.loads(w.read_text()) for w in waves]
    assert summaries and all(s["oracle"] == "divergence" for s in summaries)
    # Corruption was seen by divergence alone: no grammar, schema or semantic defect kinds.
    assert set().union(*(s["defects"] for s in summaries)) == {"corrupt_divergence"}
