"""Soak: `repro run` at 80 sessions in flight for a fixed time, with repro's RSS sampled.

    python bench/soak.py --minutes 30 [--out results/soak] [-- extra repro run options]

Runs the embedded engine (launched by repro, as a user would) with sessions that keep
replacing each other (--sessions 100000 --concurrency 80), stops it with Ctrl-C (SIGINT)
after --minutes, and prints a table: elapsed time, turns on disk, repro's own RSS (the
engine is a separate process, not counted), and an estimate of the history the open
sessions hold (each open session's last request size). Memory is flat when RSS tracks that
history, not the turns done. The last lines fit a line to RSS over the second half.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_EVERY_S = 10.0


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def turns_and_open_history(out: Path, context_max: int) -> tuple[int, int, float]:
    """Turns on disk, sessions that look open, and their last request sizes (MiB)."""
    from repro.results.reading import read_turn_table

    turns = out / "turns.parquet"
    if not turns.exists():
        return 0, 0, 0.0
    columns = ["session_id", "turn", "outcome", "n_calls", "prompt_tokens", "request_bytes"]
    frame = read_turn_table(turns, columns).to_pandas()
    if frame.empty:
        return 0, 0, 0.0
    last = frame.sort_values(["session_id", "turn"]).groupby("session_id").tail(1)
    # A session goes on after an ok turn with calls that has not reached its target context.
    open_ = last[
        (last.outcome == "ok")
        & (last.n_calls > 0)
        & (last.prompt_tokens.fillna(0) < 0.95 * context_max)
    ]
    return len(frame), len(open_), float(open_.request_bytes.sum()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--context-max", type=int, default=80_000)
    parser.add_argument("extra", nargs="*", help="more `repro run` options (after --)")
    args = parser.parse_args()
    out = args.out or REPO / "results" / time.strftime("soak-%Y%m%d-%H%M%S")
    command = [sys.executable, "-m", "repro", "run", "--sessions", "100000", "--concurrency",
               "80", "--context-max", str(args.context_max), "--out", str(out), *args.extra]  # fmt: skip
    print("command:", " ".join(command[1:]), flush=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    repro = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    samples: list[tuple[float, int, int, float, float]] = []
    try:
        while time.monotonic() - started < args.minutes * 60 and repro.poll() is None:
            time.sleep(SAMPLE_EVERY_S)
            elapsed = time.monotonic() - started
            turns, open_sessions, history = turns_and_open_history(out, args.context_max)
            samples.append((elapsed, turns, open_sessions, history, rss_mib(repro.pid)))
    finally:
        if repro.poll() is None:
            repro.send_signal(signal.SIGINT)
        _, stderr = repro.communicate(timeout=120)
    print(f"repro exited {repro.returncode}; load average at end: {os.getloadavg()[0]:.2f}")
    if "Traceback" in stderr:
        print(stderr)
    report(samples)


def report(samples: list[tuple[float, int, int, float, float]]) -> None:
    import numpy as np

    print(
        "| minute | turns on disk | open sessions | their last requests (MiB) | repro RSS (MiB) |"
    )
    print("|---|---|---|---|---|")
    step = max(1, len(samples) // 15)
    for elapsed, turns, open_sessions, history, rss in samples[step - 1 :: step]:
        print(f"| {elapsed / 60:.1f} | {turns:,} | {open_sessions} | {history:.1f} | {rss:.0f} |")
    half = samples[len(samples) // 2 :]
    if len(half) >= 2:
        t = np.array([s[0] for s in half]) / 60
        turns = np.array([s[1] for s in half], dtype=float)
        rss = np.array([s[4] for s in half])
        per_min = np.polyfit(t, rss, 1)[0]
        per_10k = np.polyfit(turns, rss, 1)[0] * 10_000 if np.ptp(turns) else float("nan")
        print(
            f"second half: RSS {rss.min():.0f}-{rss.max():.0f} MiB, slope {per_min:+.2f} MiB/min, "
            f"{per_10k:+.2f} MiB per 10k turns ({int(turns[0]):,} -> {int(turns[-1]):,} turns)"
        )


if __name__ == "__main__":
    main()
