"""Issue 12's acceptance runs for the divergence oracle, as a table for bench/RESULTS.md.

Each row is one exact `repro` command; its figures come from the run's summary.json. The
machine is shared, so the 1-minute load average is printed beside each run. Full replays use
`--reference-engines 8` (eight more embedded engines, one replayed request at a time each);
`auto-*` rows use the defaults (the run's own engine, --replay-sample auto).

    python bench/divergence_oracle.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

FULL = ["--oracle", "divergence", "--replay-sample", "all", "--reference-engines", "8"]
STORY = ["--sessions", "80", "--index-k", "bf16"]
PARSER = ["--knob", "tool_parser=on"]
# Without HiCache every spilled prefix is recomputed (ten times the prefill work): these rows
# run the engine's clock faster so that they take minutes, as docs/sim.md's calibration does.
OFF = ["--hicache", "off", "--set", "time_scale=0.1"]
RUNS: dict[str, list[str]] = {
    "validity-story": ["run", *STORY],
    "divergence-story": ["run", *STORY, *FULL],
    "validity-story-parser": ["run", *STORY, *PARSER],
    "divergence-story-parser": ["run", *STORY, *PARSER, *FULL],
    "divergence-drift": ["run", *STORY, *OFF, *FULL],
    "divergence-drift-parser": ["run", *STORY, *OFF, *PARSER, *FULL],
    "divergence-fp8": ["run", "--sessions", "80", "--index-k", "fp8", *FULL],
    "divergence-gate-fixed": ["run", *STORY, "--knob", "index_k_gate=fixed", *FULL],
    "divergence-drift-fix": ["run", *STORY, *OFF, "--knob", "drift_fix=on", *FULL],
    "divergence-fp8-parser": ["run", "--sessions", "80", "--index-k", "fp8", *PARSER, *FULL],
    "divergence-gate-fixed-parser": ["run", *STORY, "--knob", "index_k_gate=fixed", *PARSER, *FULL],
    "divergence-drift-fix-parser": ["run", *STORY, *OFF, "--knob", "drift_fix=on", *PARSER, *FULL],
    "near-tie-gate": ["gate", "--sessions", "80", "--index-k", "fp8", "--knob", "near_tie_flip=on", *FULL],
    "near-tie-gate-parser": ["gate", "--sessions", "80", "--index-k", "fp8", "--knob", "near_tie_flip=on", *PARSER, *FULL],
    "auto-story": ["run", *STORY, "--oracle", "divergence"],
    # Alongside the load, on one more engine launched in the gated (safe) configuration.
    "alongside-story": ["run", *STORY, "--oracle", "divergence", "--reference-engines", "1",
                        "--reference-knob", "index_k_gate=fixed"],
    "auto-drift": ["run", *STORY, *OFF, "--oracle", "divergence"],
    # Both oracles on the same turns: each one's session rate over the replayed sessions.
    "both-auto-story": ["run", *STORY, "--oracle", "both"],
    "validity-drift": ["run", *STORY, *OFF],
    "both-story-parser": ["run", *STORY, *PARSER, "--oracle", "both", *FULL[2:]],
    "validity-fp8-parser": ["run", "--sessions", "80", "--index-k", "fp8", *PARSER],
    "near-tie-story-gate": ["gate", *STORY, "--knob", "near_tie_flip=on", *FULL],
}  # fmt: skip


def run(name: str, args: list[str], out: Path) -> dict:
    folder = out / name
    started = time.monotonic()
    done = subprocess.run(["repro", *args, "--out", str(folder)], capture_output=True, text=True)
    wall_s = time.monotonic() - started
    summary = (
        json.loads((folder / "summary.json").read_text())
        if (folder / "summary.json").exists()
        else {}
    )
    return {"name": name, "command": "repro " + shlex.join(args), "exit": done.returncode,
            "command_wall_s": wall_s, "load_1m": os.getloadavg()[0], **summary}  # fmt: skip


def row(r: dict) -> str:
    d = r.get("divergence") or {}
    kinds = d.get("kinds") or {}
    rate = r.get("session_corruption_rate")
    ci = r.get("session_corruption_ci") or (0, 0)
    sessions = (
        "n/a"
        if rate is None
        else f"{r['sessions_corrupted']}/{r['sessions']} = {rate:.1%} [{ci[0]:.1%}, {ci[1]:.1%}]"
    )
    found = (
        f"identical {kinds.get('identical', 0)}, numerical {kinds.get('numerical', 0)}, "
        f"corrupt {kinds.get('corrupt', 0)}, diverged {kinds.get('diverged', 0)}"
        if d
        else ", ".join(f"{k} {v}" for k, v in sorted((r.get("defects") or {}).items()))
    )
    replay = (
        f"{d.get('sessions_replayed')}/{d.get('sessions_with_turns')} sessions, "
        f"{d.get('turns_replayed')} turns, {d.get('wall_s', 0):.0f} s"
        if d
        else "-"
    )
    if d.get("concurrency", 1) > 1:
        alone = d.get("alone") or {}
        replay += (f", {d['concurrency']} at once, {alone.get('replayed', 0)} replayed alone at "
                   f"the end ({alone.get('counted', 0)} counted)")  # fmt: skip
    if d.get("left_out"):
        replay += f", {len(d['left_out'])} sessions left out"
    load = d.get("load_wall_s") or r.get("wall_s", 0)
    return (f"| `{r['command']}` | {r['exit']} | {sessions} | {r.get('turns_corrupted', 'n/a')}/{r.get('turns', 'n/a')} | "
            f"{found} | {replay} | {load:.0f} s | {r.get('max_prompt_tokens', 'n/a')} | {r['load_1m']:.1f} |")  # fmt: skip


def oracles_apart(folder: Path) -> str:
    """With both oracles: the sessions each one alone calls corrupted, over those replayed."""
    import pyarrow.parquet as pq

    turns = pq.read_table(folder / "turns.parquet", columns=["session_id", "turn", "corrupted"])
    verdicts = [json.loads(line) for line in (folder / "divergence.jsonl").read_text().splitlines()]
    replayed = {v["session_id"] for v in verdicts}
    by_divergence = {v["session_id"] for v in verdicts if v.get("kind") in ("corrupt", "diverged")}
    by_validity = {r["session_id"] for r in turns.to_pylist() if r["corrupted"]} & replayed
    n = len(replayed)
    return (f"validity alone {len(by_validity)}/{n}, divergence alone {len(by_divergence)}/{n}, "
            f"both {len(by_validity & by_divergence)}")  # fmt: skip


def run_rows(runs: dict[str, list[str]], default_out: Path) -> Iterator[tuple[str, dict]]:
    """Parse --only/--out, print the table's head, run each chosen command and print its row;
    yields (name, result) after each, for what a caller prints below the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=default_out / time.strftime("%H%M%S"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("| command | exit | sessions corrupted [95% CI] | turns corrupted | verdicts (or defects) "
          "| replay | load wall | max prompt | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, run_args in runs.items():
        if args.only and name not in args.only:
            continue
        result = run(name, run_args, args.out)
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
        print(row(result), flush=True)
        if "both" in run_args and (args.out / name / "divergence.jsonl").exists():
            print(f"|  | | {oracles_apart(args.out / name)} | | | | | | |", flush=True)
        yield name, result


def main() -> None:
    for _ in run_rows(RUNS, Path("/tmp/repro-divergence")):
        pass


if __name__ == "__main__":
    main()
