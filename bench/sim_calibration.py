"""Run issue 5's calibration commands with `repro run` and print the table for docs/sim.md.

Each row is one exact command; its figures come from the run's summary.json. The machine is
shared, so the 1-minute load average is printed beside each run.

    python bench/sim_calibration.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import time
from pathlib import Path

RUNS: dict[str, list[str]] = {
    "pd-bf16-80k": ["--sessions", "80", "--index-k", "bf16"],
    "pd-bf16-16k": ["--sessions", "80", "--index-k", "bf16", "--context-max", "16000"],
    "single-bf16-240": ["--sessions", "240", "--topology", "single", "--index-k", "bf16", "--context-max", "16000"],
    "pd-fp8-80k": ["--sessions", "80", "--index-k", "fp8"],
    "single-fp8-16k": ["--sessions", "80", "--topology", "single", "--index-k", "fp8", "--context-max", "16000"],
    "pd-bf16-gate-fixed": ["--sessions", "80", "--index-k", "bf16", "--knob", "index_k_gate=fixed"],
    "pd-bf16-hicache-off-80k": ["--sessions", "80", "--index-k", "bf16", "--hicache", "off"],
    "pd-bf16-hicache-off-drift-fix": ["--sessions", "80", "--index-k", "bf16", "--hicache", "off", "--knob", "drift_fix=on"],
    "pd-nixl-abort-storm": ["--sessions", "80", "--knob", "transfer_backend=nixl", "--abort-rate", "0.2"],
    "pd-nixl-abort-storm-fixed": ["--sessions", "80", "--knob", "transfer_backend=nixl", "--abort-rate", "0.2", "--knob", "abort_fix=on"],
    "pd-red-herrings": ["--sessions", "80", "--index-k", "fp8", "--topk-v2", "off", "--custom-kernels", "on", "--cuda-graph", "off", "--context-max", "16000"],
}  # fmt: skip
SINGLE_SESSION_RUNS = 20


def run(name: str, args: list[str], out: Path) -> dict:
    folder = out / name
    started = time.monotonic()
    done = subprocess.run(
        ["repro", "run", *args, "--out", str(folder)], capture_output=True, text=True
    )
    wall_s = time.monotonic() - started
    summary = (
        json.loads((folder / "summary.json").read_text())
        if (folder / "summary.json").exists()
        else {}
    )
    return {"name": name, "command": "repro run " + shlex.join(args), "exit": done.returncode, "wall_s": wall_s,
            "load_1m": os.getloadavg()[0], **summary}  # fmt: skip


def defects(summary: dict) -> str:
    kinds = summary.get("defects") or summary.get("defect_kinds") or {}
    return (
        ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        if isinstance(kinds, dict)
        else str(kinds)
    )


def row(r: dict) -> str:
    rate = r.get("session_corruption_rate")
    rate_text = "n/a" if rate is None else f"{r['sessions_corrupted']}/{r['sessions']} = {rate:.1%}"
    return (f"| `{r['command']}` | {rate_text} | {r.get('turns_corrupted', 'n/a')}/{r.get('turns', 'n/a')} | "
            f"{defects(r)} | {r.get('stalls', 'n/a')} | {r.get('errors', 'n/a')} | {r.get('max_prompt_tokens', 'n/a')} | "
            f"{r['wall_s']:.0f} s | {r['load_1m']:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/repro-sim-calibration") / time.strftime("%H%M%S")
    )
    parser.add_argument("--single-session-runs", type=int, default=SINGLE_SESSION_RUNS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        "| command | sessions corrupted | turns corrupted | defects | stalls | errors | max prompt | wall | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, run_args in RUNS.items():
        if args.only is None or name in args.only:
            result = run(name, run_args, args.out)
            (args.out / f"{name}.json").write_text(json.dumps(result, default=str))
            print(row(result), flush=True)
    if args.only is None or "pd-bf16-1-session" in args.only:
        corrupted = 0
        for seed in range(args.single_session_runs):
            r = run(
                f"one-{seed}",
                ["--sessions", "1", "--index-k", "bf16", "--seed", str(seed)],
                args.out,
            )
            corrupted += r.get("sessions_corrupted", 0)
        print(f"| `repro run --sessions 1 --index-k bf16 --seed S` for S in 0..{args.single_session_runs - 1} | "
              f"{corrupted}/{args.single_session_runs} | | | | | | | {os.getloadavg()[0]:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
