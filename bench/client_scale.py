"""How many sessions repro holds per worker: event-loop lag at growing session counts.

Against bench/peers/stream_server.py, paced (one token per stream every 5 ms, then every
25 ms, as a batched decode step sends them), one `repro run --url` worker in-process with a
lag probe (bench/peers/scale_worker.py) runs `sessions` sessions of one long turn each,
started over 2 s; the lag p99 is taken over the steady window, when every session is
streaming. A worker "holds" a count when the lag p99 stays under 50 ms with no failed turn;
the lag judged is repro's own (its probe in every worker, pooled, over the whole load), which
with --workers 1 agrees with the in-process probe's steady window (both are in the table).

    python bench/client_scale.py [--quick] [--sessions 64,128,256,512,1000]
        [--paces-ms 5,25] [--workers 1] [--seconds 8] [--record bench/HISTORY.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.common import BENCH_DIR, REPO, autogroup_nice, control, record_section, stream_server

from repro.harness.load.loop_probe import PROBE_EVERY_S

HOLD_LAG_MS = 50.0  # issue 14's bound for the lag p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64, 256, 1000 sessions, 5 s streams")
    parser.add_argument("--sessions", default="64,128,256,512,1000")
    parser.add_argument("--paces-ms", default="5,25")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each stream")
    parser.add_argument("--ramp-up", type=float, default=2.0)
    parser.add_argument("--workers", default="1", help="comma-separated worker counts")
    parser.add_argument(
        "--record", type=Path, help="append the table, dated, to this file (bench/HISTORY.md)"
    )
    parser.add_argument("--boost", action="store_true",
                        help="raise this session's CPU share (autogroup nice -10) on a shared "
                             "machine, so other work does not set the loop lag")  # fmt: skip
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.seconds = "64,256,1000", 5.0
    counts = [int(n) for n in args.sessions.split(",")]
    paces = [float(p) for p in args.paces_ms.split(",")]
    fleet = [int(w) for w in args.workers.split(",")]
    command = "python bench/client_scale.py " + " ".join(sys.argv[1:])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rows, started, load_before = [], time.monotonic(), os.getloadavg()[0]
    with (
        autogroup_nice(-10 if args.boost else None),
        tempfile.TemporaryDirectory(prefix="client-scale-") as tmp,
        stream_server() as (url, _),
    ):
        runs = [(w, p, n) for w in fleet for p in paces for n in counts]
        for workers, pace, sessions in runs:
            tokens = round(args.seconds * 1000 / pace)
            control(url, "/bench/config", {"tokens": tokens, "pace_ms": pace})
            load = os.getloadavg()[0]
            out = Path(tmp) / f"run-{workers}-{pace:g}-{sessions}"
            worker = [sys.executable, str(BENCH_DIR / "peers" / "scale_worker.py"),
                      "--url", url, "--sessions", str(sessions), "--out", str(out),
                      "--ramp-up", str(args.ramp_up), "--workers", str(workers)]  # fmt: skip
            done = subprocess.run(worker, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"the worker failed at {sessions} sessions:\n{done.stderr[-2000:]}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            stats = control(url, "/bench/stats")
            figures.update(pace_ms=pace, load=load, tokens=tokens,
                           server_step_ms=stats["steps_s"] / max(stats["steps"], 1) * 1000)  # fmt: skip
            rows.append(figures)
            print(f"{workers} worker(s) {pace:g} ms {sessions:>5} sessions: repro lag p99 "
                  f"{figures['repro_lag_p99_ms']:.1f} ms, CPU {figures['repro_cpu_share']:.0%}, "
                  f"server step "
                  f"{figures['server_step_ms']:.1f} ms, load {load:.2f}", flush=True)  # fmt: skip
    text = report(rows, command.strip(), load_before, (time.monotonic() - started) / 60, args)
    print()
    print(text)
    if args.record:
        record_section(args.record, "client_scale", text)
        print(f"\nwritten to {args.record}")


def report(rows: list[dict], command: str, load_before: float, minutes: float, args) -> str:
    head = ["workers", "pace", "sessions", "repro's loop lag p99 / max ms",
            "probe here: lag p50 / p99 ms (steady)", "client CPU (cores)", "server step ms",
            "repro: send lag p99 ms", "repro: TTFT p99 ms", "repro: gap p50 / p99 ms",
            "turns ok / errors", "repro says slow", "held", "load"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        held = (r["repro_lag_p99_ms"] < HOLD_LAG_MS and r["errors"] == 0
                and r["turns_ok"] == r["sessions"])  # fmt: skip
        probe = (f"{r['lag_p50_ms']:.1f} / {r['lag_p99_ms']:.1f}" if r["workers"] == 1
                 else "(parent only)")  # fmt: skip
        lines.append("| " + " | ".join([
            str(r["workers"]), f"{r['pace_ms']:g} ms", str(r["sessions"]),
            f"{r['repro_lag_p99_ms']:.1f} / {r['repro_lag_max_ms']:.0f}", probe,
            f"{r['repro_cpu_share']:.2f}", f"{r['server_step_ms']:.1f}",
            f"{r['send_lag_p99_ms']:.1f}", f"{r['ttft_p99_ms']:.0f}",
            f"{r['itl_p50_ms']:.1f} / {r['itl_p99_ms']:.1f}", f"{r['turns_ok']} / {r['errors']}",
            "yes" if r["client_was_slow"] else "no", "yes" if held else "**no**",
            f"{r['load']:.2f}",
        ]) + " |")  # fmt: skip
    return "\n".join([
        f"`{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, `repro run --url` "
        f"(sessions, checking, run folder) in-process, its lag probe every "
        f"{PROBE_EVERY_S * 1000:.0f} ms and the bench's every 10 ms; each session one "
        f"turn streaming {args.seconds:g} s of tokens, sessions started over {args.ramp_up:g} s; "
        f"{minutes:.0f} min; load average {load_before:.2f} at the start"
        + ("; this session's CPU share raised (--boost)." if args.boost else "."),
        "",
        *lines,
        "",
        f"Held = repro's own loop lag p99 under {HOLD_LAG_MS:.0f} ms and every turn finished. "
        "Client CPU is repro's, in cores (summed over workers). The server step is the real "
        "interval between the server's decode steps (above the pace: the server, not only the "
        "client, fell behind). Send lag runs from when a turn was due to when it was sent.",
    ])  # fmt: skip


if __name__ == "__main__":
    main()
