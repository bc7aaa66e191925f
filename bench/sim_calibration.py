"""Measure the embedded engine against the story's figures (issue 10) with repro itself.

Each row is one exact `repro run` (or `repro sweep`) command; its figures come from the run's
summary.json and turns.parquet. The machine is shared, so the 1-minute load average is
printed beside each run. Prints the markdown tables for docs/sim.md and bench/RESULTS.md.

    python bench/sim_calibration.py [--only NAME ...] [--out DIR] [--single-session-runs N]
                                    [--repeat N]

`--repeat N` runs each row N times, the first as written and the others with `--seed 1` ...
`--seed N-1`, and ends with a pooled table: the runs' counts, their pooled rate with its
Wilson interval, and how much more the runs spread than a binomial count would (phi, as
repro/bisect/dispersion.py measures waves) with the interval widened by it. One run of 80
sessions is not a measurement of a rate that spreads 15-26 of 80 from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pandas as pd

from repro.bisect.dispersion import pearson, phi
from repro.results.stats import wilson

RUNS: dict[str, list[str]] = {
    "pd-bf16-80k": ["--sessions", "80", "--index-k", "bf16"],
    "pd-fp8-80k": ["--sessions", "80", "--index-k", "fp8"],
    "pd-bf16-16k": ["--sessions", "80", "--index-k", "bf16", "--context-max", "16000"],
    "single-bf16-240": ["--sessions", "240", "--concurrency", "80", "--topology", "single", "--index-k", "bf16"],
    # 80 sessions in flight, replaced as they end: prompts of every length at once, as a
    # production fleet's are (a run of 80 started together reaches its long prompts last).
    "pd-bf16-240": ["--sessions", "240", "--concurrency", "80", "--index-k", "bf16"],
    "pd-fp8-240": ["--sessions", "240", "--concurrency", "80", "--index-k", "fp8"],
    "pd-bf16-gate-fixed": ["--sessions", "80", "--index-k", "bf16", "--knob", "index_k_gate=fixed"],
    # Without HiCache every spilled prefix is recomputed: ten times the prefill work, so these
    # two run the engine's clock faster (the faults are decided in modelled time).
    "pd-bf16-hicache-off-80k": ["--sessions", "80", "--index-k", "bf16", "--hicache", "off", "--set", "time_scale=0.1"],
    "pd-bf16-hicache-off-drift-fix": ["--sessions", "80", "--index-k", "bf16", "--hicache", "off", "--knob", "drift_fix=on", "--set", "time_scale=0.1"],
    "pd-nixl-abort-storm": ["--sessions", "80", "--knob", "transfer_backend=nixl", "--abort-rate", "0.2"],
    "pd-nixl-abort-storm-fixed": ["--sessions", "80", "--knob", "transfer_backend=nixl", "--abort-rate", "0.2", "--knob", "abort_fix=on"],
    "pd-red-herrings": ["--sessions", "80", "--index-k", "fp8", "--topk-v2", "off", "--custom-kernels", "on", "--cuda-graph", "off"],
}  # fmt: skip
SWEEP = ["--index-k", "bf16", "--sessions", "1,10,20,40,60,80"]
SINGLE_SESSION_RUNS = 20
BIN_TOKENS = 10_000


def load_1m() -> float:
    return os.getloadavg()[0]


def run(name: str, args: list[str], out: Path) -> dict:
    folder = out / name
    started, load = time.monotonic(), load_1m()
    done = subprocess.run(
        ["repro", "run", *args, "--out", str(folder)], capture_output=True, text=True
    )
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return {"name": name, "command": "repro run " + shlex.join(args), "exit": done.returncode,
            "wall_s": time.monotonic() - started, "load_1m": max(load, load_1m()),
            **summary, **by_prompt(folder)}  # fmt: skip


def by_prompt(folder: Path) -> dict:
    """Where the corruption is: share of corrupted turns at >= 20k, and top bin vs 0-10k."""
    path = folder / "turns.parquet"
    if not path.exists():
        return {}
    turns = pd.read_parquet(path, columns=["outcome", "corrupted", "prompt_tokens"])
    judged = turns[(turns.outcome == "ok") & turns.prompt_tokens.notna()]
    corrupted = judged[judged.corrupted]
    bins = (judged.prompt_tokens // BIN_TOKENS).astype(int)
    share = judged.corrupted.groupby(bins).mean()
    top = int(bins.max()) if len(bins) else 0
    return {
        "corrupted_at_20k": int((corrupted.prompt_tokens >= 20_000).sum()),
        "top_bin": f"{top * 10}–{top * 10 + 10}k",
        "top_bin_share": float(share.get(top, 0.0)),
        "low_bin_share": float(share.get(0, 0.0)),
    }


def defects(summary: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((summary.get("defects") or {}).items()))


def row(r: dict) -> str:
    if "sessions" not in r:
        return f"| `{r['command']}` | exit {r['exit']}, no summary | | | | | | | | {r['load_1m']:.1f} | |"
    ttft = r.get("latency_s", {}).get("ttft", {}).get("p90")
    where = (f"{r['corrupted_at_20k']}/{r['turns_corrupted']}; {r['top_bin']} {r['top_bin_share']:.2%} "
             f"vs 0–10k {r['low_bin_share']:.2%}") if r["turns_corrupted"] else ""  # fmt: skip
    return (f"| `{r['command']}` | {r['sessions_corrupted']}/{r['sessions']} = {r['session_corruption_rate']:.1%} | "
            f"{r['turns_corrupted']}/{r['turns']} | {where} | {defects(r)} | {r['errors']} | {r['stalls']} | "
            f"{'n/a' if ttft is None else f'{ttft:.2f} s'} | {r['max_prompt_tokens']:,} | {r['wall_s']:.0f} s | "
            f"{r['load_1m']:.1f} | {pace(r)} |")  # fmt: skip


def pace(r: dict) -> str:
    """The slowest engine role's pace (repro/results/pace.py): 100% kept its clock."""
    paces = r.get("engine_pace") or {}
    return f"{min(paces.values()):.0%}" if paces else "n/a"


def sweep(out: Path) -> list[str]:
    started, load = time.monotonic(), load_1m()
    done = subprocess.run(["repro", "sweep", *SWEEP, "--out", str(out / "sweep"), "--json"],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        return [f"`repro sweep {shlex.join(SWEEP)}` exited {done.returncode}: {done.stderr[-300:]}"]
    rows = json.loads(done.stdout)["rows"]
    lines = [
        f"`repro sweep {shlex.join(SWEEP)}`: {time.monotonic() - started:.0f} s wall, "
        f"load {max(load, load_1m()):.1f}",
        "",
        "| sessions | sessions corrupted [95% CI] | turns corrupted [95% CI] | failed turns | TTFT p90 |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        ttft = "n/a" if r["ttft_p90_s"] is None else f"{r['ttft_p90_s']:.2f} s"
        lines.append(
            f"| {r['sessions']} | {_rate(r, 'sessions')} | {_rate(r, 'turns')} | "
            f"{r['failed_turns']} | {ttft} |"
        )
    return lines


def _rate(r: dict, what: str) -> str:
    k, n = r[f"{what}_corrupted"], r[f"{what}_measured"]
    low, high = r[f"{what}_corrupted_low"], r[f"{what}_corrupted_high"]
    return f"{k}/{n} = {k / max(n, 1):.1%} [{low:.1%}, {high:.1%}]"


def pooled(repeats: dict[str, list[dict]]) -> list[str]:
    """Each row's runs pooled: the session rate, and how much the runs spread around it."""
    lines = ["| row | sessions corrupted, run by run | pooled [95% CI] | phi | interval widened by phi |",
             "|---|---|---|---|---|"]  # fmt: skip
    for name, results in repeats.items():
        counts = [(r["sessions_corrupted"], r["sessions"]) for r in results if "sessions" in r]
        k, n = sum(c for c, _ in counts), sum(m for _, m in counts)
        phi = spread(counts)
        wide = wilson(round(k / phi), round(n / phi))
        each = ", ".join(f"{c}/{m}" for c, m in counts) + (
            f" ({len(results) - len(counts)} without a summary)"
            if len(counts) < len(results)
            else ""
        )
        lines.append(
            f"| {name} | {each} | {wilson(k, n)} | {phi:.2f} | [{wide.low:.1%}, {wide.high:.1%}] |"
        )
    return lines


def spread(counts: list[tuple[int, int]]) -> float:
    """phi: Pearson's chi-square of the runs around their pooled rate over its degrees of
    freedom, as repro/bisect/dispersion.py measures waves; 1 when there is nothing to see."""
    return phi(*pearson(counts))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None, help="row names, 'sweep', 'one-session'")
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/repro-sim-calibration") / time.strftime("%H%M%S")
    )
    parser.add_argument("--single-session-runs", type=int, default=SINGLE_SESSION_RUNS)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row (seeds 0..N-1)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = lambda name: args.only is None or name in args.only  # noqa: E731
    print("| command | sessions corrupted | turns corrupted | corrupted turns at ≥ 20k; by prompt bin | "
          "defects | failed turns | stalls | TTFT p90 | max prompt | wall | load | pace |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    repeats: dict[str, list[dict]] = {}
    for name, run_args in RUNS.items():
        if not wanted(name):
            continue
        for seed in range(args.repeat):
            label, seeded = (
                (name, run_args)
                if seed == 0
                else (f"{name}-s{seed}", [*run_args, "--seed", str(seed)])
            )
            result = run(label, seeded, args.out)
            (args.out / f"{label}.json").write_text(json.dumps(result, default=str))
            repeats.setdefault(name, []).append(result)
            print(row(result), flush=True)
    if wanted("one-session"):
        corrupted, load = 0, load_1m()
        for seed in range(args.single_session_runs):
            r = run(
                f"one-{seed}",
                ["--sessions", "1", "--index-k", "bf16", "--seed", str(seed)],
                args.out,
            )
            corrupted += r.get("sessions_corrupted", 0)
        print(f"| `repro run --sessions 1 --index-k bf16 --seed S` for S in 0..{args.single_session_runs - 1} | "
              f"{corrupted}/{args.single_session_runs} | | | | | | | | | {max(load, load_1m()):.1f} | |")  # fmt: skip
    if args.repeat > 1 and repeats:
        print()
        print("\n".join(pooled(repeats)), flush=True)
    if wanted("sweep"):
        print()
        print("\n".join(sweep(args.out)), flush=True)


if __name__ == "__main__":
    main()
