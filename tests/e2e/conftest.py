"""End-to-end helpers: run the real `repro` command, find leftover engine processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

# Small, fast runs: short sessions and a sped-up engine clock.
FAST = ["--context-max", "12000", "--set", "time_scale=0.2", "--ramp-up", "0.5"]
# The index-K race needs spilled prefixes loaded back (docs/sim.md): a 3 GB device pool
# (~35k tokens) and a 12 GB/s host link bring that down to a couple of dozen 12k sessions.
SPILL = ["--set", "kv_pool_gb=3", "--set", "host_link_gbytes_per_s=12"]


def repro(
    *args: str, timeout: float = 240, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m repro ARGS` as a real process; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=os.environ | {"COLUMNS": "200"},
    )


def engine_processes(run_dir: Path) -> list[int]:
    """PIDs of processes still running any role of the run recorded in run_dir/spec.json."""
    spec = json.loads((run_dir / "spec.json").read_text())
    ports = [str(role["port"]) for role in spec["roles"]]
    return processes_with_ports(ports)


def processes_with_ports(ports: list[str]) -> list[int]:
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if "repro.sim" in words and any(w in ports for w in words):
            alive.append(int(entry.name))
    return alive


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())
