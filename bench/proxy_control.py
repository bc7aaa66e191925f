"""The positive control at scale: an engine behind `repro proxy`, rule off and each rule.

    python bench/proxy_control.py [--engine sim|vllm] [--sessions 100] [--concurrency N]
        [--context-max 40000] [--rate 0.05] [--rules splice,duplicate,finish,flip]

Runs `repro run` twice behind the proxy: once with the rule off, once splicing at the chosen
rate from 2 streams in flight. `sim`: repro/profiles/examples/sim-behind-proxy.toml (single
server, fp8: a clean engine; `--target calls`, judged by the validity oracle). `vllm`: the
vLLM profile's `proxied` topology (the tiny model; `--target any`, judged by the divergence
oracle, every turn replayed alone after the load, through the proxy with one stream in
flight, where the rule cannot fire). `--rules` adds issue 43's rules on the embedded
engine, each run as tests/e2e/test_consistency.py runs it: `duplicate` and `finish` with the
engine's own tool parser (the calls arrive parsed, in fragments), `flip` on any answer text
with every turn sent twice (`--oracle stream --stream-sample all`: only the twin tells it).
For each it prints the turns judged, the injections the
proxy logged, how many of them the run caught, the corrupted turns no injection explains,
and the measured corruption rate with its 95% Wilson interval against the injected rate
(injections / turns judged) and the rule's nominal rate (a victim whose answer has no
target text cannot be corrupted, and the last streams of a run may have too few others in
flight, so fewer are injected), and the proxy's own CPU time for the bytes it streamed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro.proxy import match_run, read_injection_log
from repro.results.reading import read_run
from repro.results.stats import wilson
from repro.spec import PROFILES_DIR

ENGINES = {
    "sim": ["--profile", str(PROFILES_DIR / "examples" / "sim-behind-proxy.toml")],
    "vllm": ["--backend", "vllm", "--topology", "proxied", "--replay-sample", "all"],
}


PARSED = ["--server-args", "--tool-call-parser deepseekv32"]
# What each rule needs to be seen at all (the embedded engine only; splice runs on both).
RULE_ARGS = {
    "splice": [],
    "duplicate": PARSED,
    "finish": PARSED,
    "flip": ["--knob", "proxy_target=any", "--oracle", "stream", "--stream-sample", "all",
             "--history", "scripted"],
}  # fmt: skip


def one_run(
    out: Path, engine: list[str], knobs: list[str], nominal: float, extra: list[str] = ()
) -> str:
    argv = [sys.executable, "-m", "repro", "run", *engine, *extra, "--out", str(out),
            *(a for k in knobs for a in ("--knob", k))]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"repro run exited {done.returncode}: {done.stderr[-2000:]}")
    wall_s = time.monotonic() - started
    summary = read_run(out).summary
    log = read_injection_log(out / "logs" / "proxy.log")
    match = match_run(out, out / "logs" / "proxy.log")
    streams = log.summary["streams"] if log.summary else float("nan")
    cpu = (
        f"{log.summary['cpu_s']:.1f} s for {log.summary['streamed_bytes'] / 1e6:.0f} MB"
        if log.summary
        else "?"
    )
    judged = summary.turns
    measured = wilson(summary.turns_corrupted, judged)
    injected_rate = match.injected / judged  # one stream per judged turn of the load
    inside = measured.low <= injected_rate <= measured.high
    holds_nominal = measured.low <= nominal <= measured.high
    return (
        f"| {' '.join(knobs) or 'proxy_rule=off'} | {judged} | {streams} | "
        f"{log.summary['victims'] if log.summary else '?'} | {match.injected} | {match.detected} | "
        f"{len(match.unexplained)} | {summary.turns_corrupted}/{judged} = "
        f"{summary.turns_corrupted / judged:.2%} [{measured.low:.2%}, {measured.high:.2%}] | "
        f"{injected_rate:.2%} | {'yes' if inside else 'NO'} | {nominal:.0%}: "
        f"{'yes' if holds_nominal else 'NO'} | {wall_s:.0f} s | {cpu} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="sim", choices=list(ENGINES))
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--context-max", type=int, default=None, help="default: 40000 on sim")
    parser.add_argument("--rate", default="0.05", choices=["0.01", "0.05", "0.2", "1"])
    parser.add_argument(
        "--rules", default="splice", help="comma-separated, from: " + ", ".join(RULE_ARGS)
    )
    args = parser.parse_args()
    rules = args.rules.split(",")
    if unknown := [r for r in rules if r not in RULE_ARGS]:
        parser.error(f"no rule {unknown[0]!r}; the rules are {', '.join(RULE_ARGS)}")
    if args.engine != "sim" and rules != ["splice"]:
        parser.error("the rules beyond splice run on the embedded engine only (--engine sim)")
    if args.context_max is None and args.engine == "sim":
        args.context_max = 40_000
    engine = [*ENGINES[args.engine], "--sessions", str(args.sessions)]
    engine += ["--concurrency", str(args.concurrency)] if args.concurrency else []
    engine += ["--context-max", str(args.context_max)] if args.context_max else []
    root = Path(tempfile.mkdtemp(prefix="repro-proxy-"))
    print(f"`python {' '.join(sys.argv)}` (runs in {root}; load average "
          f"{os.getloadavg()[0]:.1f} at the start)\n")  # fmt: skip
    print("| rule | turns judged | streams | victims drawn | injected | caught | corrupted, "
          "not injected | measured turn corruption [95% Wilson] | injected rate | "
          "interval holds it | interval holds the rule's rate | wall | proxy CPU |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(one_run(root / "off", engine, [], 0.0), flush=True)
    for rule in rules:
        knobs = [f"proxy_rule={rule}", f"proxy_rate={args.rate}", "proxy_min_streams=2"]
        row = one_run(root / rule, engine, knobs, float(args.rate), RULE_ARGS[rule])
        print(row, flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
