"""How long the engine's processes outlive a SIGKILL of repro: per engine kind, start a run,
wait for its first turns, SIGKILL repro, and time until no process of the run is left
(polled every 20 ms by run folder and port, as tests/e2e/leftovers.py finds them).

    PYTHONPATH=. python bench/teardown_after_sigkill.py --trials 3

Engines: the embedded engine in PD (three roles), a wrapper shell that forks it, and one
that ignores SIGTERM and leaves a daemon outside its process group (tests/e2e/engines/).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.leftovers import run_processes
from tests.e2e.test_interrupt import wait_for_turns

ENGINES = Path(__file__).resolve().parent.parent / "tests" / "e2e" / "engines"
KINDS = {
    "sim pd": [],
    "wrapper shell": ["--profile", str(ENGINES / "wrapper.toml")],
    "ignores SIGTERM + daemon": ["--profile", str(ENGINES / "stubborn.toml")],
}


def one_trial(extra: list[str], folder: Path) -> tuple[int, float]:
    """(processes before the kill, seconds until none is left)."""
    out = folder / "run"
    argv = [sys.executable, "-m", "repro", "run", "--sessions", "12", "--context-max", "40000"]
    process = subprocess.Popen(
        [*argv, "--out", str(out), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for_turns(out, 6)
    before = len(run_processes(out))
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = time.monotonic()
    while run_processes(out):
        if time.monotonic() - killed_at > 30:
            raise SystemExit(f"processes left 30 s after SIGKILL: {run_processes(out)}")
        time.sleep(0.02)
    return before, time.monotonic() - killed_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    print(f"{'engine':<26} {'processes':>9}  seconds until none is left (each trial)")
    for kind, extra in KINDS.items():
        times, counts = [], set()
        for _ in range(args.trials):
            with tempfile.TemporaryDirectory() as folder:
                before, seconds = one_trial(extra, Path(folder))
            counts.add(before)
            times.append(seconds)
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(
            f"{kind:<26} {'/'.join(map(str, sorted(counts))):>9}  {shown}  (max {max(times):.2f})"
        )


if __name__ == "__main__":
    main()
