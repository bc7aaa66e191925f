"""`repro run` as a real process for the tests that signal or kill it mid-run, and the wait
for its first turns on disk."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from repro.results.reading import read_turn_table


def start_run(out: Path, *args: str, **popen: object) -> subprocess.Popen[str]:
    """`repro run ARGS --out OUT`, its output piped as text unless `popen` says otherwise."""
    argv = [sys.executable, "-m", "repro", "run", *args, "--out", str(out)]
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True} | popen
    return subprocess.Popen(argv, **popen)  # type: ignore[call-overload]


def wait_for_turns(
    out: Path, at_least: int, timeout_s: float = 90, process: subprocess.Popen[str] | None = None
) -> None:
    """Until turns.parquet holds `at_least` rows; fails at once, with its stderr, if the
    run (`process`) ended first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        path = out / "turns.parquet"
        if path.exists() and read_turn_table(path, ["turn"]).num_rows >= at_least:
            return
        if process is not None and process.poll() is not None:
            stderr = process.communicate()[1] or ""  # None when it writes to a terminal
            raise AssertionError(f"the run ended ({process.returncode}) first: {stderr[-2000:]}")
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} turns in {timeout_s} s")
