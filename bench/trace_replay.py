"""Issue 42's acceptance: a trace recorded through `repro record` in front of the embedded
engine while `repro run` drives it, replayed as a scenario, against the built-in scenario.

    flock /tmp/repro-bench.lock python bench/trace_replay.py [--sessions 80] [--seed 0]
        [--keep DIR] [--only NAME ...] [--trace FILE]

Runs, each `repro run --sessions N --index-k bf16 --seed S` on the story's configuration
(PD + HiCache + bf16) unless named `fixed` (`--knob index_k_gate=fixed` added):

- `builtin`: the built-in agentic-coding scenario, as `repro run` drives it (live history);
- `recorded`: the same through `repro record`, a profile role in front of the PD router (the
  bundled sim profile plus a `pd_recorded` topology, written beside the trace): its trace
  is what the replays replay;
- `scripted`, `live`: `--scenario trace:TRACE --history scripted|live`;
- `scripted-fixed`, `live-fixed`: the same with the gate fixed (expected: 0).

For each it prints the sessions and turns corrupted with their 95% Wilson intervals, the
defect kinds of the corrupted turns, failed turns, the wall time and the load average
(`uptime`) before the run; and whether each replay's session rate lies inside the built-in
runs' intervals. The machine is shared: run it under the bench lock.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from repro.results.reading import read_run
from repro.results.stats import wilson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the profile is test data
from tests.recorded_profile import recorded_profile

RUNS = ("builtin", "recorded", "scripted", "live", "scripted-fixed", "live-fixed")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def one_run(name: str, argv: list[str], out: Path) -> dict:
    before = uptime()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "repro", "run", *argv, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall_s = time.monotonic() - started
    if done.returncode not in (0,):
        print(f"{name}: repro run exited {done.returncode}: {done.stderr[-1500:]}", file=sys.stderr)
    summary = read_run(out).summary
    kinds: Counter[str] = Counter()
    failures = out / "failures.jsonl"
    if failures.exists():
        for line in failures.read_text().splitlines():
            for defect in json.loads(line).get("defects", []):
                kinds[defect["kind"]] += 1
    return {
        "name": name,
        "sessions": summary.sessions,
        "sessions_corrupted": summary.sessions_corrupted,
        "turns": summary.turns,
        "turns_corrupted": summary.turns_corrupted,
        "errors": summary.errors,
        "kinds": kinds,
        "wall_s": wall_s,
        "uptime": before.split("load average:")[-1].strip(),
        "exit": done.returncode,
    }


def rate(k: int, n: int) -> str:
    interval = wilson(k, n)
    return f"{k}/{n} = {k / n:.1%} [{interval.low:.1%}, {interval.high:.1%}]" if n else "0/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    parser.add_argument("--only", nargs="*", choices=RUNS, default=list(RUNS))
    parser.add_argument("--trace", type=Path, default=None, help="replay this trace, record none")
    parser.add_argument("--extra", default="", help="more `repro run` options for every run")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="trace-replay-"))
    root.mkdir(parents=True, exist_ok=True)
    profile = recorded_profile(root / "profile")
    trace = args.trace or root / "profile" / "recorded.jsonl"
    base = ["--sessions", str(args.sessions), "--index-k", "bf16", "--seed", str(args.seed)]
    base += args.extra.split()
    fixed = ["--knob", "index_k_gate=fixed"]
    argvs = {
        "builtin": base,
        "recorded": [*base, "--profile", str(profile), "--topology", "pd_recorded"],
        "scripted": [*base, "--scenario", f"trace:{trace}", "--history", "scripted"],
        "live": [*base, "--scenario", f"trace:{trace}", "--history", "live"],
        "scripted-fixed": [*base, *fixed, "--scenario", f"trace:{trace}", "--history", "scripted"],
        "live-fixed": [*base, *fixed, "--scenario", f"trace:{trace}", "--history", "live"],
    }
    rows = []
    for name in RUNS:
        if name not in args.only or (name == "recorded" and args.trace):
            continue
        if name == "recorded" and trace.exists():
            trace.unlink()  # the recorder appends: one recording per trace here
        out = root / name
        shutil.rmtree(out, ignore_errors=True)
        row = one_run(name, argvs[name], out)
        rows.append(row)
        print(f"{name}: sessions {rate(row['sessions_corrupted'], row['sessions'])}, "
              f"turns {rate(row['turns_corrupted'], row['turns'])}, {row['errors']} failed, "
              f"{row['wall_s']:.0f} s, load {row['uptime']}", flush=True)  # fmt: skip
    print(report(rows, args, trace))


def report(rows: list[dict], args: argparse.Namespace, trace: Path) -> str:
    builtins = [r for r in rows if r["name"] in ("builtin", "recorded")]
    lines = [
        f"`flock /tmp/repro-bench.lock python bench/trace_replay.py --sessions {args.sessions} "
        f"--seed {args.seed}{' --extra ' + repr(args.extra) if args.extra else ''}` — "
        f"{time.strftime('%Y-%m-%d %H:%M')}; trace {trace.name}",
        "",
        "| run | sessions corrupted | turns corrupted | defect kinds (corrupted turns) | failed turns | inside the built-in runs' intervals | wall | load before (1/5/15 min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        k, n = row["sessions_corrupted"], row["sessions"]
        inside = ""
        if row["name"].endswith("-fixed"):
            inside = f"(the fix: 0 expected) {'yes' if k == 0 else 'NO'}"
        elif row["name"] not in ("builtin", "recorded") and builtins:
            point = k / n if n else 0.0
            verdicts = []
            for b in builtins:
                interval = wilson(b["sessions_corrupted"], b["sessions"])
                verdicts.append(
                    f"{b['name']}: {'yes' if interval.low <= point <= interval.high else 'NO'}"
                )
            inside = ", ".join(verdicts)
        kinds = ", ".join(f"{kind} {count}" for kind, count in row["kinds"].most_common())
        lines.append(
            f"| {row['name']} | {rate(k, n)} | {rate(row['turns_corrupted'], row['turns'])} | "
            f"{kinds or '-'} | {row['errors']} | {inside or '-'} | {row['wall_s']:.0f} s | "
            f"{row['uptime']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
