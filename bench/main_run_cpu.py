"""The repro process's own CPU share during the main run, and its send lag.

    python bench/main_run_cpu.py [-- extra repro run options]

Runs `repro run --sessions 80 --index-k bf16` (plus any extra options) as a child process and
samples that process's own user+system CPU time from /proc (Linux) until it exits: its
engine processes are its children and are not counted. The send lag p99 (how late turns were
sent against their schedule) comes from the run's summary.json. Both say whether repro
itself, rather than the engine, could have set the pace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def own_cpu_s(pid: int) -> float | None:
    """utime + stime of `pid` alone (fields 14 and 15 of /proc/PID/stat), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def main() -> None:
    extra = sys.argv[2:] if sys.argv[1:2] == ["--"] else sys.argv[1:]
    out = Path(tempfile.mkdtemp(prefix="repro-cpu-")) / "run"
    argv = [sys.executable, "-m", "repro", "run", "--sessions", "80", "--index-k", "bf16",
            "--out", str(out), *extra]  # fmt: skip
    started = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    cpu_s = 0.0
    while child.poll() is None:
        cpu_s = own_cpu_s(child.pid) or cpu_s  # the last reading before it exits
        time.sleep(0.2)
    wall_s = time.monotonic() - started
    if child.returncode != 0:
        sys.exit(f"repro run exited {child.returncode}; see {out}")
    summary = json.loads((out / "summary.json").read_text())
    print(f"`python bench/main_run_cpu.py {' '.join(extra)}`".replace(" `", "`"))
    print(
        f"repro process: {cpu_s:.1f} s CPU over {wall_s:.0f} s wall = "
        f"{cpu_s / wall_s:.0%} of one core; send lag p99 {summary['send_lag_p99_s'] * 1000:.1f} ms; "
        f"run {summary['wall_s']:.0f} s, {summary['turns']} turns, run folder {out}"
    )


if __name__ == "__main__":
    main()
