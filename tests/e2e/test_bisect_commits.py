"""`repro bisect commits` end to end: a git repository whose history brings the index-K race
into the embedded engine, each commit's build an environment whose interpreter starts the
engine with that commit's gate, the engine started for real on 127.0.0.1 at CI scale."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, SPILL, processes_with_ports, repro

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# CI scale, as tests/e2e/test_bisect.py: a single server whose small pool spills races at
# 40 sessions to 12k; the SPRT at p0=2% / p1=20%.
CI_STATS = ["--sessions", "40", "--p0", "0.02", "--p1", "0.2", "--sessions-cap", "120",
            *SPILL, "--topology", "single", "--index-k", "bf16", "--hicache", "on",
            "--set", "time_scale=0.05"]  # fmt: skip

# A commit's build: its `gate` file says whether the index-K read waits for the layer
# transfer; the environment's interpreter starts the engine with that switch. A commit with
# a `broken` file does not build (exit 125: untestable, as for git bisect run).
BUILD = (
    "test -f broken && exit 125; "
    'mkdir -p "$REPRO_BISECT_ENV/bin" && '
    'printf \'#!/bin/sh\\nexec %s "$@" --index-k-gate %s\\n\' "$REPRO_TEST_PYTHON" "$(cat gate)" '
    '> "$REPRO_BISECT_ENV/bin/python" && chmod +x "$REPRO_BISECT_ENV/bin/python"'
)


def gate_history(folder: Path, gates: list[str], broken: set[int]) -> list[str]:
    folder.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    shas = []
    for index, gate in enumerate(gates):
        (folder / "gate").write_text(gate)
        (folder / "change").write_text(str(index))
        if index in broken:
            (folder / "broken").write_text("")
        elif (folder / "broken").exists():
            (folder / "broken").unlink()
        git("add", "-A")
        git("commit", "-q", "-m", f"change {index}: gate {gate}")
        shas.append(git("rev-parse", "HEAD"))
    return shas


def engines_alive(out: Path) -> list[int]:
    ports = set()
    for spec in (out / "bisect" / "trials").glob("*/wave-*/spec.json"):
        ports |= {str(role["port"]) for role in json.loads(spec.read_text())["roles"]}
    return processes_with_ports(sorted(ports)) if ports else []


def test_the_commit_that_brought_the_race_in_with_a_kill_and_a_resume(tmp_path, monkeypatch):
    """8 commits, the race in from commit 5, commit 4 unbuildable (the first the search
    tries); killed after its third trial and run again: the answer is commits 3 and 5 with the
    skipped 4 between them, no point measured twice, no worktree or engine left behind."""
    monkeypatch.setenv("REPRO_TEST_PYTHON", sys.executable)
    gates = ["fixed"] * 5 + ["buggy"] * 3
    shas = gate_history(tmp_path / "repo", gates, broken={4})
    out = tmp_path / "out"
    args = ["bisect", "commits", "--repo", str(tmp_path / "repo"), "--good", shas[0],
            "--bad", "main", "--build", BUILD, *FAST, *CI_STATS, "--out", str(out), "--json"]  # fmt: skip
    trials = out / "bisect" / "trials"
    first = subprocess.Popen(
        [sys.executable, "-m", "repro", *args], start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and first.poll() is None:
            if trials.is_dir() and len(list(trials.iterdir())) >= 4:
                break  # the fourth trial has started: three are done
            time.sleep(0.2)
        assert first.poll() is None, "the campaign ended before its fourth trial"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    cached = {
        entry.stem: sum(len(w["outcomes"]) for w in json.loads(entry.read_text())["waves"])
        for entry in (out / "bisect" / "cache").glob("*.json")
    }
    assert len(cached) >= 3

    rerun = repro(*args, timeout=400)
    assert rerun.returncode == 0, rerun.stderr
    doc = json.loads(rerun.stdout)
    answer = doc["answer"]
    assert answer["first_bad"]["id"] == shas[5], doc
    assert answer["last_good"]["id"] == shas[3] and answer["decided"]
    assert [p["id"] for p in answer["skipped_between"]] == [shas[4]]
    assert (
        answer["first_bad"]["sessions_corrupted"] > 0 == answer["last_good"]["sessions_corrupted"]
    )
    assert [s["id"] for s in doc["skipped"]] == [shas[4]] and "125" in doc["skipped"][0]["reason"]
    for row in doc["table"]:  # every wave finished before the kill came from the cache
        assert row["from_cache_sessions"] == cached.get(row["cache_key"], 0), row
    assert not list((out / "bisect" / "worktrees").glob("*"))
    listed = subprocess.run(["git", "-C", str(tmp_path / "repo"), "worktree", "list"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert len(listed.strip().splitlines()) == 1
    assert engines_alive(out) == []
