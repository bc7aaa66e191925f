"""The story's run on the embedded engine in every tool-call format it writes (issue 41).

For each format X: `repro gate --sessions 80 --index-k bf16 --set model_format=X
--max-corruption 0` (the story's configuration: its rate, where its corrupted turns are,
and the gate's exit code, 1 expected) and `repro run ... --knob index_k_gate=fixed` (the fix:
0 expected). Each format's two runs go under one `flock /tmp/repro-bench.lock` (the machine
is shared: the script runs itself with `--inner` under flock(1)), and `uptime` is recorded
beside every run. Prints the markdown table for bench/RESULTS.md and keeps each run's
figures as JSON in --out.

    python bench/sim_formats.py [--formats X,Y] [--out DIR] [--skip-fixed] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
from sim_calibration import by_prompt, pace

FORMATS = ("dsml-v32", "qwen3_coder", "hermes", "deepseek_v31", "kimi_k2", "glm45", "glm47",
           "harmony", "minimax_m2", "mistral")  # fmt: skip
LOCK = "/tmp/repro-bench.lock"
STORY = ["--sessions", "80", "--index-k", "bf16"]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(command: list[str], folder: Path) -> dict:
    before, started = uptime(), time.monotonic()
    done = subprocess.run(["repro", *command, "--out", str(folder)], capture_output=True, text=True)
    path = folder / "summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {}
    return {"command": "repro " + shlex.join(command), "exit": done.returncode,
            "wall_s": round(time.monotonic() - started), "uptime": before,
            "uptime_after": uptime(), **summary, **by_prompt(folder), **kinds(folder)}  # fmt: skip


def kinds(folder: Path) -> dict:
    """The corrupted turns' first defect kinds, and how many carried calls."""
    path = folder / "turns.parquet"
    if not path.exists():
        return {}
    turns = pd.read_parquet(path, columns=["outcome", "corrupted", "first_defect", "n_calls"])
    bad = turns[(turns.outcome == "ok") & turns.corrupted]
    first = Counter(str(d).split("@", 1)[0] for d in bad.first_defect)
    return {
        "first_kinds": dict(first.most_common()),
        "corrupted_with_calls": int((bad.n_calls > 0).sum()),
    }


def row(fmt: str, story: dict, fixed: dict | None) -> str:
    if "sessions" not in story:
        return f"| {fmt} | exit {story['exit']}, no summary | | | | | {story['uptime']} |"
    where = ""
    if story["turns_corrupted"]:
        where = (f"{story['corrupted_at_20k']}/{story['turns_corrupted']} at ≥ 20k; "
                 f"{story['top_bin']} {story['top_bin_share']:.2%} vs 0–10k {story['low_bin_share']:.2%}")  # fmt: skip
    kinds_text = ", ".join(f"{k} {v}" for k, v in (story.get("first_kinds") or {}).items())
    fix = (
        ""
        if fixed is None
        else (
            f"{fixed.get('sessions_corrupted', '?')}/{fixed.get('sessions', '?')} (exit {fixed['exit']})"
        )
    )
    return (f"| {fmt} | {story['sessions_corrupted']}/{story['sessions']} = {story['session_corruption_rate']:.1%} "
            f"| {story['turns_corrupted']}/{story['turns']} | {where} | {kinds_text} | {story['errors']} "
            f"| exit {story['exit']} | {fix} | {pace(story)} | {story['uptime']} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/repro-sim-formats") / time.strftime("%H%M%S")
    )
    parser.add_argument("--skip-fixed", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inner", action="store_true", help="one format's runs, the lock held")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.inner:
        print("| format | sessions corrupted | turns corrupted | where | first defect of each corrupted turn "
              "| failed turns | `repro gate --max-corruption 0` | the fix: sessions corrupted | pace | uptime |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
        for fmt in args.formats.split(","):
            inner = [sys.executable, __file__, "--inner", "--formats", fmt, "--out", str(args.out),
                     "--seed", str(args.seed), *(["--skip-fixed"] if args.skip_fixed else [])]  # fmt: skip
            subprocess.run(["flock", LOCK, *inner], check=False)
        return
    seed = ["--seed", str(args.seed)] if args.seed else []
    for fmt in args.formats.split(","):
        setting = ["--set", f"model_format={fmt}", *seed]
        story = run(["gate", *STORY, *setting, "--max-corruption", "0",
                     "--junit", str(args.out / f"{fmt}.junit.xml")], args.out / fmt)  # fmt: skip
        (args.out / f"{fmt}.json").write_text(json.dumps(story, default=str))
        fixed = None
        if not args.skip_fixed:
            fixed = run(
                ["run", *STORY, "--knob", "index_k_gate=fixed", *setting], args.out / f"{fmt}-fixed"
            )
            (args.out / f"{fmt}-fixed.json").write_text(json.dumps(fixed, default=str))
        print(row(fmt, story, fixed), flush=True)


if __name__ == "__main__":
    main()
