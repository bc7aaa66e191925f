"""The vLLM path's speed on CPU (issue 43): `repro run --backend vllm --sessions 32`, timed.

Runs the exact command the docs promise takes about two minutes of load (the profile's
defaults: the tiny model, scripted history, 64-token answers, every turn then judged by
the divergence oracle), then reads its run folder: the load's wall time (first request sent
to the last loaded turn's end), the tokens the engine took in and wrote per second over it,
the turns judged, the whole command's wall time. Each row carries what decides the figure
on this kind of machine: the CPU's instruction set (avx2, avx512f, avx512_bf16, amx_tile
from /proc/cpuinfo: without AMX vLLM's CPU attention runs its generic `vec` kernel), the
vLLM release, the model's attention shape and the 1-minute load average before and after.

It guards the figure: exit 1 when the engine wrote fewer than --min-tokens-per-s answer
tokens a second over the load, or the load took over --max-load-s (measured 2026-12-05 on
an AVX2-only EPYC before the fix: 9.8 tokens/s, 82 of 160 turns after 561 s).

It starts vLLM, so run it alone on the machine:

    flock /tmp/repro-bench.lock python bench/vllm_speed.py [--sessions 32] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile")


def cpu_flags() -> str:
    """The instruction-set flags that pick vLLM's CPU kernels, as /proc/cpuinfo lists them."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    have = set(line.split(":", 1)[-1].split())
    return " ".join(f if f in have else f"no-{f}" for f in CPU_FLAGS)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def model_shape(model: Path) -> str:
    try:
        c = json.loads((model / "config.json").read_text())
    except OSError:
        return "unknown"
    return (
        f"{c['num_hidden_layers']} layers, {c['num_attention_heads']} heads of "
        f"{c.get('head_dim', c['hidden_size'] // c['num_attention_heads'])} over "
        f"{c['num_key_value_heads']} KV"
    )


def replayed_turns(out: Path) -> int:
    """The turns the divergence oracle judged (its verdicts, one line a turn)."""
    verdicts = out / "divergence.jsonl"
    if not verdicts.exists():
        return 0
    lines = verdicts.read_text().splitlines()
    return len({(v["session_id"], v["turn"]) for v in map(json.loads, lines)})


def load_figures(out: Path) -> dict:
    """The load phase from turns.parquet: loaded turns only (the replay is the oracle's)."""
    turns = pq.read_table(out / "turns.parquet").to_pandas()
    done = turns[turns["outcome"] == "ok"]
    if done.empty:
        return {"turns_loaded": 0}
    load_s = float(done["ended_at_s"].max() - turns["sent_at_s"].min())
    completion = int(done["completion_tokens"].sum())
    prompt = int(done["prompt_tokens"].sum())
    return {
        "turns_loaded": len(done),
        "turns_judged": max(int(turns["judged"].astype(bool).sum()), replayed_turns(out)),
        "load_s": load_s,
        "completion_tokens": completion,
        "prompt_tokens": prompt,
        "completion_per_s": completion / load_s,
        "prompt_per_s": prompt / load_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("/tmp/repro-vllm-speed"))
    parser.add_argument("--min-tokens-per-s", type=float, default=40.0)
    parser.add_argument("--max-load-s", type=float, default=600.0)
    parser.add_argument("--timeout-s", type=float, default=3600.0)
    parser.add_argument("extra", nargs="*", help="more `repro run` options, after --")
    args = parser.parse_args()
    out = args.out / f"sessions-{args.sessions}"
    command = ["repro", "run", "--backend", "vllm", "--sessions", str(args.sessions)]
    command += [*args.extra, "--out", str(out)]
    before = os.getloadavg()[0]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", *command], cwd=REPO, timeout=args.timeout_s, check=False
        )
        code: int | str = done.returncode
    except subprocess.TimeoutExpired:
        code = f"timeout {args.timeout_s:.0f} s"
    wall_s = time.monotonic() - started
    after = os.getloadavg()[0]
    summary = {}
    if (out / "summary.json").exists():
        summary = json.loads((out / "summary.json").read_text())
    figures = load_figures(out) if (out / "turns.parquet").exists() else {}
    spec = json.loads((out / "spec.json").read_text()) if (out / "spec.json").exists() else {}
    engine = summary.get("engine") or spec.get("engine") or "?"
    model = str(REPO / ".cache" / "tiny-qwen2")  # the vLLM profile's default model
    shown = shlex.join(command[:-2])
    print(f"\n{time.strftime('%Y-%m-%d')}: `{shown}` on {cpu_model()} ({cpu_flags()})")
    print(
        "| command | exit | load wall | answer tokens/s | prompt tokens/s | turns judged | "
        "max prompt | whole command | engine | model | CPU flags | load before/after |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    judged = figures.get("turns_judged", "?")
    print(
        f"| `{shown}` | {code} | {figures.get('load_s', 0):.0f} s | "
        f"{figures.get('completion_per_s', 0):.1f} | {figures.get('prompt_per_s', 0):.0f} | "
        f"{judged} of {figures.get('turns_loaded', 0)} | {summary.get('max_prompt_tokens', '?')} | "
        f"{wall_s:.0f} s | {engine} | {model_shape(Path(model)) if model else '?'} | "
        f"{cpu_flags()} | {before:.1f} / {after:.1f} |"
    )
    record = {"command": shown, "exit": code, "wall_s": wall_s, "cpu": cpu_flags()}
    (args.out / "result.json").write_text(json.dumps(record | figures | {"summary": summary}))
    slow = figures.get("completion_per_s", 0) < args.min_tokens_per_s
    long = figures.get("load_s", float("inf")) > args.max_load_s
    if code != 0 or slow or long:
        print(
            f"GUARD: exit {code}, {figures.get('completion_per_s', 0):.1f} answer tokens/s "
            f"(floor {args.min_tokens_per_s:g}), load {figures.get('load_s', 0):.0f} s "
            f"(ceiling {args.max_load_s:g})"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
