"""Find every process a run started, by what it carries: the run folder (supervisors' logs)
or a role's port (engines, wrappers, daemons), read from the logs' argv headers and spec.json."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

ARGV_PORT = re.compile(r"--port[ =](\d+)")


def run_ports(run_dir: Path) -> set[str]:
    ports = set()
    for log in (run_dir / "logs").glob("*.log"):
        header = log.read_text(errors="replace").split("\n", 1)[0]
        ports |= set(ARGV_PORT.findall(header))
    spec = run_dir / "spec.json"
    if spec.exists():
        ports |= {str(role["port"]) for role in json.loads(spec.read_text())["roles"]}
    return ports


def _alive(pid: str) -> bool:
    """Running, not a zombie waiting for its parent to collect it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def run_processes(run_dir: Path) -> dict[int, str]:
    """pid -> command line of every live process that belongs to the run (repro excluded)."""
    ports, marker = run_ports(run_dir), str(run_dir)
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _alive(entry.name):
            continue
        try:
            words = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if words[1:3] == ["-m", "repro"]:  # repro itself (run, gate), given --out
            continue
        line = " ".join(words)
        if marker in line or any(re.search(rf"(--port |:|^| ){p}(\D|$)", line) for p in ports):
            found[int(entry.name)] = line[:160]
    return found


def cgroups_of(pids: list[int]) -> set[Path]:
    """The cgroups repro's supervisors made (repro-<pid>-<role>) that hold these processes."""
    from repro.harness.launch.supervisor import _cgroup2_mount

    mount, found = _cgroup2_mount(), set()
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            continue
        own = next((line[3:] for line in lines if line.startswith("0::")), "")
        if mount is not None and "/repro-" in own:
            found.add(mount / own.lstrip("/"))
    return found


def assert_none_left(run_dir: Path, exited_at: float, after_s: float = 3.0) -> None:
    """Nothing of the run is alive `after_s` seconds after repro exited."""
    time.sleep(max(0.0, exited_at + after_s - time.monotonic()))
    left = run_processes(run_dir)
    assert not left, f"{len(left)} processes left {after_s} s after repro exited: {left}"
