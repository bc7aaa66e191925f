"""Wall time of `repro bisect flags --parallel K` against the serial search, back to back.

The README's six-knob campaign on the embedded engine, each run from an empty results
folder (nothing from the cache), serial first and then with K trials at once, the same
launcher for both. For each it prints the culprit, the classes, trials, sessions, wall
time, the waves and their mean duration, the CPU time of the campaign's processes (repro and the engines it waits for; with
Slurm, repro only), the load average around it and how busy the machine's cores were (all
processes: on a shared 2-core machine the cores, not the search, may set the pace). Run:

    python bench/bisect_parallel.py --parallel 3 [--launcher slurm] [--rounds 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro.spec import RunSpec

BAD = "topology=pd,hicache=on,index_k=bf16,topk_v2=on,custom_kernels=on,cuda_graph=off"
GOOD = "topology=single,hicache=off,index_k=fp8,topk_v2=off,custom_kernels=off,cuda_graph=on"
# The README's campaign: the race needs contexts that outgrow the device pool (80k, the
# default); the drift's fix is held on both sides, since without HiCache at 80k the drift is
# a second bug of its own (docs/bisect.md); HiCache-off trials recompute every spilled
# prefix, so the engine's clock runs at 0.1.
CAMPAIGN = ["--set", "time_scale=0.1", "--knob", "drift_fix=on"]
SESSIONS_PER_WAVE = RunSpec().sessions  # the campaign sets no --sessions


def busy_jiffies() -> tuple[int, int]:
    """All CPUs' (busy, total) jiffies since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def waves(out: Path, report: dict) -> dict[str, object]:
    """Waves started (folders, less the empty ones a start aborted), taken by the search
    (its trials' sessions in waves), and cancelled as not needed (renamed `-unused-`); the
    mean duration of those that ran to the end (spec.json to summary.json)."""
    folders = [w for w in (out / "bisect" / "trials").glob("*/wave-*/") if any(w.iterdir())]
    finished = [w for w in folders if "-unused-" not in w.name and (w / "summary.json").exists()]
    spans = [
        (w / "summary.json").stat().st_mtime - (w / "spec.json").stat().st_mtime for w in finished
    ]
    return {
        "started": len(folders),
        "taken": sum(row["sessions_run"] for row in report["table"]) // SESSIONS_PER_WAVE,
        "cancelled": sum("-unused-" in w.name for w in folders),
        "wave_s": sum(spans) / len(spans),
    }


def campaign(out: Path, launcher: str, parallel: int) -> dict[str, object]:
    argv = [sys.executable, "-m", "repro", "bisect", "flags", *CAMPAIGN, "--bad", BAD, "--good", GOOD, "--launcher", launcher, "--parallel", str(parallel),
            "--out", str(out), "--json"]  # fmt: skip
    load_before, (busy0, total0), started = load(), busy_jiffies(), time.monotonic()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall_s = time.monotonic() - started
    busy1, total1 = busy_jiffies()
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return {
        **waves(out, report),
        "parallel": parallel,
        "culprit": report["culprit"],
        "classes": report["classes"],
        "trials": report["trials"],
        "sessions": report["sessions"],
        "wall_s": wall_s,
        "load_before": load_before,
        "load_after": load(),
        "cores_busy": (busy1 - busy0) / max(total1 - total0, 1),  # share of all cores' time
        # repro and the engines it started and waited for (Slurm steps are slurmd's children)
        "cpu_s": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--launcher", choices=["local", "slurm"], default="local")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep each campaign's folder under this one")
    args = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, launcher {args.launcher}")
    print("| round | trials at once | culprit | classes | trials | sessions | waves started / taken / cancelled | mean wave s "
          "| wall s | campaign CPU s | load before/after | all cores busy |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        rows = []
        for parallel in (1, args.parallel):
            with tempfile.TemporaryDirectory() as scratch:
                out = args.keep / f"round{round_}-k{parallel}" if args.keep else Path(scratch)
                row = campaign(out, args.launcher, parallel)
            rows.append(row)
            culprit = " + ".join(f"{k}={v}" for k, v in row["culprit"].items())
            classes = ", ".join(f"{k} {v}" for k, v in row["classes"].items())
            print(
                f"| {round_} | {parallel} | {culprit} | {classes} | {row['trials']} | "
                f"{row['sessions']} | {row['started']} / {row['taken']} / {row['cancelled']} | "
                f"{row['wave_s']:.1f} | "
                f"{row['wall_s']:.0f} | {row['cpu_s']:.0f} | "
                f"{row['load_before']:.1f} / "
                f"{row['load_after']:.1f} | {row['cores_busy']:.0%} |",
                flush=True,
            )
        serial, parallel_row = rows
        same = (serial["culprit"], serial["classes"]) == (
            parallel_row["culprit"],
            parallel_row["classes"],
        )
        ratio = parallel_row["wall_s"] / serial["wall_s"]
        print(f"# round {round_}: wall ratio {ratio:.2f}; same culprit and classes: {same}")


if __name__ == "__main__":
    main()
