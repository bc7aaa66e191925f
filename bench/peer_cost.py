"""Client CPU per streamed token: repro against the real peer load generators and a bare floor.

One interleaved run against one streaming server that does almost nothing per token
(bench/peers/stream_server.py): for each round, pacing (below) and
stream length, every client runs the same workload in turn, in a rotated order: `streams`
streams, `concurrency` at once, prompts of about the same request size. A client's cost is
the user+system CPU of its whole process tree (children included, the server excluded), per
1M tokens the server sent (warm-up and check requests included, as the client chose to send
them). Total = at the base length (start-up included); marginal = the CPU difference between
the long and the base length divided by the token difference. Medians over the rounds. Each
marginal is also printed split into user-space and kernel time: the kernel's part (reads,
wake-ups, TCP) is what every client pays per token; the user-space part is the client's own.

Pacings (`--paces-ms`): a figure is the time between a stream's tokens, as an engine's decode
step sets it; `event` is unpaced with one write per event, as an engine streams when nothing
holds it back; `stream` (or 0) is unpaced with the whole stream in one write, which no engine
does and which prices a client's parsing alone.

    python bench/peer_cost.py [--quick] [--rounds 3] [--record bench/HISTORY.md]

Peers need their environments: scripts/build-peer-envs (SGLang bench_serving, vllm bench
serve, GuideLLM, and a local tokenizer they all load); a missing one is skipped and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.common import REPO, become_subreaper, control, record_section, run_client, stream_server

CACHE = REPO / ".cache"
TOKENIZER = CACHE / "tiny-qwen2"
SGLANG_PYTHON = CACHE / "sglang-bench" / "bin" / "python"
VLLM = CACHE / "vllm-0.32.0" / "bin" / "vllm"
GUIDELLM = CACHE / "guidellm-0.8.1" / "bin" / "guidellm"
# Prompt lengths in the tiny tokenizer's tokens that make each peer's request body about as
# large as repro's first agentic-coding turn (6.5 kB); the table prints the measured sizes.
BODY_BYTES = 6500
SGLANG_INPUT_TOKENS = 1670  # random-ids: about 3.9 bytes per token once decoded
VLLM_INPUT_TOKENS = 4800  # random: about 1.35 bytes per token
GUIDELLM_INPUT_TOKENS = 4300  # synthetic_text: about 1.5 bytes per token


@dataclass(frozen=True)
class Workload:
    url: str
    streams: int
    concurrency: int
    tokens: int
    workdir: Path


def floor(w: Workload) -> list[str]:
    return [sys.executable, str(REPO / "bench" / "peers" / "floor_client.py"), "--url", w.url,
            "--streams", str(w.streams), "--concurrency", str(w.concurrency),
            "--body-bytes", str(BODY_BYTES)]  # fmt: skip


def sglang(w: Workload) -> list[str]:
    return [str(SGLANG_PYTHON), "-m", "sglang.bench_serving", "--backend", "sglang-oai-chat",
            "--base-url", w.url, "--model", "bench", "--tokenizer", str(TOKENIZER),
            "--dataset-name", "random-ids", "--random-input-len", str(SGLANG_INPUT_TOKENS),
            "--random-output-len", str(w.tokens), "--random-range-ratio", "1",
            "--num-prompts", str(w.streams), "--max-concurrency", str(w.concurrency),
            "--output-file", str(w.workdir / "sglang.jsonl")]  # fmt: skip


def vllm(w: Workload) -> list[str]:
    return [str(VLLM), "bench", "serve", "--backend", "openai-chat",
            "--endpoint", "/v1/chat/completions", "--base-url", w.url, "--model", "bench",
            "--tokenizer", str(TOKENIZER), "--dataset-name", "random",
            "--random-input-len", str(VLLM_INPUT_TOKENS), "--random-output-len", str(w.tokens),
            "--num-prompts", str(w.streams), "--max-concurrency", str(w.concurrency)]  # fmt: skip


def guidellm(w: Workload) -> list[str]:
    scenario = {"spec": {
        "backend": {"kind": "openai_http", "target": w.url, "model": "bench",
                    "request_format": "/v1/chat/completions"},
        "profile": {"kind": "concurrent", "streams": [w.concurrency]},
        "constraints": [{"kind": "max_requests", "count": w.streams}],
        "tokenizer": {"kind": "huggingface_auto", "model": str(TOKENIZER)},
        "data": [{"kind": "synthetic_text", "prompt_tokens": GUIDELLM_INPUT_TOKENS,
                  "output_tokens": w.tokens}],
        "outputs": [{"kind": "console"}, {"kind": "json", "path": str(w.workdir / "gl.json")}],
    }}  # fmt: skip
    path = w.workdir / "guidellm-scenario.json"
    path.write_text(json.dumps(scenario))
    # The live progress view is a terminal UI; its results tables are still printed.
    return [str(GUIDELLM), "run", "-c", str(path), "--disable-progress"]


def repro_run(w: Workload) -> list[str]:
    # A reply without tool calls ends a session, so one session = one stream.
    return [sys.executable, "-m", "repro", "run", "--url", w.url, "--model", "bench",
            "--sessions", str(w.streams), "--concurrency", str(w.concurrency),
            "--ramp-up", "0", "--out", str(w.workdir / f"run-{time.monotonic_ns()}")]  # fmt: skip


def repro_without_invariants(w: Workload) -> list[str]:
    # The control that prices the consistency invariants: `repro run` with them switched off.
    script = str(REPO / "bench" / "peers" / "repro_without_invariants.py")
    return [sys.executable, script, *repro_run(w)[3:]]


def chatclient(w: Workload) -> list[str]:
    return [sys.executable, str(REPO / "bench" / "peers" / "chatclient_only.py"), "--url", w.url,
            "--streams", str(w.streams), "--concurrency", str(w.concurrency)]  # fmt: skip


def chatclient_fresh(w: Workload) -> list[str]:
    # `repro run` here opens a connection per session, and a session is one stream.
    return [*chatclient(w), "--connection-per-stream"]


@dataclass(frozen=True)
class Client:
    name: str
    label: str
    argv: Callable[[Workload], list[str]]
    needs: Path | None = None
    by_default: bool = True  # a diagnostic variant is run only when named


CLIENTS = (
    Client("floor", "bare asyncio socket client, counts SSE events (the floor)", floor),
    Client("sglang", "SGLang `bench_serving` 0.5.23", sglang, SGLANG_PYTHON),
    Client("vllm", "`vllm bench serve` 0.32", vllm, VLLM),
    Client("guidellm", "GuideLLM 0.8.1", guidellm, GUIDELLM),
    Client("repro", "`repro run --url` (sessions, checking, run folder)", repro_run),
    Client("chatclient", "repro's `ChatClient` alone", chatclient),
    Client(
        "repro-no-invariants",
        "`repro run --url` without the consistency invariants",
        repro_without_invariants,
        by_default=False,
    ),
    Client(
        "chatclient-fresh",
        "its ChatClient, a new connection per stream",
        chatclient_fresh,
        by_default=False,
    ),
)


@dataclass(frozen=True)
class Measurement:
    client: str
    round: int
    pace_ms: float
    tokens_per_stream: int
    cpu_s: float
    wall_s: float
    tokens: int
    streams: int
    request_bytes: int
    server_cpu_s: float
    load: float
    user_s: float | None = None  # the user-space part of cpu_s (rows saved before had none)


def measure(client: Client, w: Workload, pace_ms: float, round_: int, env: dict[str, str],
            keep: set[int]) -> Measurement:  # fmt: skip
    control(w.url, "/bench/config", {"tokens": w.tokens, "pace_ms": pace_ms})
    server_cpu = control(w.url, "/bench/stats")["cpu_s"]
    load = os.getloadavg()[0]
    log = w.workdir / f"{client.name}-{pace_ms:g}ms-{w.tokens}-r{round_}.log"
    run = run_client(client.argv(w), log, cwd=w.workdir, env=env, keep=keep, timeout_s=900)
    stats = control(w.url, "/bench/stats")
    if run.returncode != 0 or stats["streams"] < w.streams:
        tail = log.read_text(errors="replace")[-1500:]
        sys.exit(f"{client.name} failed (exit {run.returncode}, {stats['streams']} of "
                 f"{w.streams} streams); its log {log} ends:\n{tail}")  # fmt: skip
    return Measurement(client.name, round_, pace_ms, w.tokens, run.cpu_s, run.wall_s,
                       stats["tokens"], stats["streams"], stats["request_bytes"],
                       stats["cpu_s"] - server_cpu, load, run.user_s)  # fmt: skip


# The unpaced forms by name, as the stream server's pace: a negative pace is a write per event.
PACINGS = {"event": -1.0, "stream": 0.0}


def parse_paces(text: str) -> list[float]:
    paces = []
    for item in text.split(","):
        try:
            paces.append(PACINGS[item] if item in PACINGS else float(item))
        except ValueError:
            sys.exit(f"--paces-ms takes milliseconds, `event` or `stream`, not {item!r}.")
        if paces[-1] < 0 and item not in PACINGS:
            sys.exit(f"--paces-ms: {item} ms is negative; `event` is the unpaced write per event.")
    return paces


def pacing_name(pace_ms: float) -> str:
    if pace_ms == 0:
        return "unpaced, a write per stream"
    if pace_ms < 0:
        return "unpaced, a write per event"
    return f"paced {pace_ms:g} ms"


def per_million(rows: list[Measurement], client: str, pace: float, base: int, long: int,
                cpu: Callable[[Measurement], float] = lambda m: m.cpu_s):  # fmt: skip
    """(total, marginal, marginals of every round) in CPU-seconds per 1M tokens; the first
    two are medians over rounds. `cpu` picks the CPU figure of a row (all of it by default)."""
    by = {
        (m.round, m.tokens_per_stream): m for m in rows if m.client == client and m.pace_ms == pace
    }
    rounds = sorted({r for r, _ in by})
    total = statistics.median(cpu(by[r, base]) / by[r, base].tokens * 1e6 for r in rounds)
    marginals = [
        (cpu(by[r, long]) - cpu(by[r, base])) / (by[r, long].tokens - by[r, base].tokens) * 1e6
        for r in rounds
    ]
    return total, statistics.median(marginals), marginals


def table(rows: list[Measurement], clients: list[Client], paces: list[float], base: int,
          long: int) -> str:  # fmt: skip
    figures = {
        (c.name, p): per_million(rows, c.name, p, base, long) for c in clients for p in paces
    }
    refs = [r for r in ("floor", "sglang") if any(c.name == r for c in clients)]
    names = [pacing_name(p) for p in paces]
    head = ["client", *(f"{n}: total / marginal (rounds' range)" for n in names)]
    head += [f"marginal ÷ {r}" for r in refs] + (["total ÷ sglang"] if "sglang" in refs else [])
    head += ["request bytes", "wall s at the base length"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def ratios(client: str, ref: str, which: int) -> str:
        return " / ".join(
            f"{figures[client, p][which] / figures[ref, p][which]:.2f}" for p in paces
        )

    for c in clients:
        cells = [c.label]
        for p in paces:
            total, marginal, each = figures[c.name, p]
            spread = f" ({min(each):.1f}–{max(each):.1f})" if len(each) > 1 else ""
            cells.append(f"{total:.1f} / {marginal:.1f}{spread}")
        cells += [ratios(c.name, r, 1) for r in refs]
        if "sglang" in refs:
            cells.append(ratios(c.name, "sglang", 0))
        mine = [m for m in rows if m.client == c.name]
        cells.append(f"{statistics.median(m.request_bytes / m.streams for m in mine):,.0f}")
        walls = [statistics.median(m.wall_s for m in mine if m.pace_ms == p and
                                   m.tokens_per_stream == base) for p in paces]  # fmt: skip
        cells.append(" / ".join(f"{w:.1f}" for w in walls))
        lines.append("| " + " | ".join(cells) + " |")
    order = " / ".join(names)
    return "\n".join(lines) + f"\n\nRatios and walls are given as {order}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one round of 192 streams: a few minutes, for a quick look")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=256, help="base stream length (total)")
    parser.add_argument("--long-tokens", type=int, default=512, help="for the marginal cost")
    parser.add_argument("--paces-ms", default="event,stream,5",
                        help="comma-separated: ms between tokens, or `event` (unpaced, a write "
                        "per event) or `stream` (unpaced, the whole stream in one write)")  # fmt: skip
    parser.add_argument("--clients", default=",".join(c.name for c in CLIENTS if c.by_default),
                        help="comma-separated, from: " + ", ".join(c.name for c in CLIENTS))  # fmt: skip
    parser.add_argument(
        "--record", type=Path, help="append the table, dated, to this file (bench/HISTORY.md)"
    )
    parser.add_argument("--rows", type=Path, help="measure nothing: the table of saved rows")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.streams = 1, 192
    args.paces = parse_paces(args.paces_ms)  # bad input is refused before anything runs
    wanted = args.clients.split(",")
    unknown = set(wanted) - {c.name for c in CLIENTS}
    if unknown:
        sys.exit(f"Unknown client(s) {', '.join(sorted(unknown))}; choose from "
                 f"{', '.join(c.name for c in CLIENTS)}.")  # fmt: skip
    clients, skipped = [], []
    for c in CLIENTS:
        if c.name in wanted:
            (clients if c.needs is None or c.needs.exists() else skipped).append(c)
    for c in skipped:
        print(f"skipping {c.name}: {c.needs} is missing (scripts/build-peer-envs builds it)")
    if not TOKENIZER.exists() and any(c.needs for c in clients) and not args.rows:
        sys.exit(f"No tokenizer at {TOKENIZER}; scripts/build-peer-envs builds it.")
    if args.rows:
        saved = json.loads(args.rows.read_text())
        meta, rows = saved["meta"], [Measurement(**m) for m in saved["rows"]]
        clients = [c for c in CLIENTS if any(m.client == c.name for m in rows)]
    else:
        meta, rows = measure_all(args, clients)
    text = report(meta, rows, clients)
    print()
    print(text)
    if args.record:
        record_section(args.record, "peer_cost", text)
        print(f"\nwritten to {args.record}")


def measure_all(args: argparse.Namespace, clients: list[Client]) -> tuple[dict, list[Measurement]]:
    """Every client, round, pacing and length, interleaved; the rows are also saved as JSON."""
    become_subreaper()
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    paces = args.paces
    rows: list[Measurement] = []
    started, load_before = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="peer-cost-") as tmp, stream_server() as (url, srv):
        order = list(clients)
        for round_ in range(args.rounds):
            for pace in paces:
                for tokens in (args.tokens, args.long_tokens):
                    w = Workload(url, args.streams, args.concurrency, tokens, Path(tmp))
                    for c in order:
                        m = measure(c, w, pace, round_, env, {srv.pid})
                        rows.append(m)
                        print(
                            f"round {round_ + 1}/{args.rounds} {pacing_name(pace)}, {tokens:>4} tokens "
                            f"{c.name:<10} {m.cpu_s:7.2f} s CPU {m.wall_s:6.1f} s wall "
                            f"server {m.server_cpu_s:5.2f} s  load {m.load:.2f}",
                            flush=True,
                        )
            order = order[1:] + order[:1]  # rotate who goes first
    meta = {"command": "python bench/peer_cost.py " + " ".join(sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d"), "minutes": (time.monotonic() - started) / 60,
            "load_before": load_before, "streams": args.streams, "tokens": args.tokens,
            "long_tokens": args.long_tokens, "concurrency": args.concurrency,
            "rounds": args.rounds, "paces": paces}  # fmt: skip
    raw = Path(tempfile.gettempdir()) / f"peer_cost_rows-{time.strftime('%Y%m%d-%H%M%S')}.json"
    raw.write_text(json.dumps({"meta": meta, "rows": [m.__dict__ for m in rows]}, indent=1))
    print(f"rows saved: {raw} (`--rows {raw}` prints the table again)")
    return meta, rows


def report(meta: dict, rows: list[Measurement], clients: list[Client]) -> str:
    loads, paces = [m.load for m in rows], meta["paces"]
    server = ", ".join(
        f"{pacing_name(p)} "
        f"{statistics.median(m.server_cpu_s / m.tokens * 1e6 for m in rows if m.pace_ms == p):.1f}"
        for p in paces
    )
    return "\n".join([
        f"`{meta['command'].strip()}` — {meta['date']}, {os.cpu_count()} CPUs, "
        f"{meta['streams']} streams × {meta['tokens']} tokens (marginal: {meta['long_tokens']} "
        f"vs {meta['tokens']}), concurrency {meta['concurrency']}, median of {meta['rounds']}; "
        f"{meta['minutes']:.0f} min; load average {meta['load_before']:.2f} at the start, "
        f"{min(loads):.2f}–{max(loads):.2f} (median {statistics.median(loads):.2f}) before "
        "the runs.",
        "",
        "CPU-seconds of the client's whole process tree per 1M streamed tokens:",
        "",
        table(rows, clients, paces, meta["tokens"], meta["long_tokens"]),
        "",
        f"The stream server's own CPU per 1M tokens (median over runs): {server}.",
        *paired_ratios(rows, clients, paces, meta["tokens"], meta["long_tokens"]),
        *invariants_share(rows, clients, paces, meta["tokens"]),
        *user_and_system(rows, clients, paces, meta["tokens"], meta["long_tokens"]),
    ])  # fmt: skip


def paired_ratios(rows: list[Measurement], clients: list[Client], paces: list[float], base: int,
                  long: int) -> list[str]:  # fmt: skip
    """Each client's marginal ÷ the floor's in the same round: the CPU clock of a shared VM
    swings between rounds, and a round's clients ran minutes apart at most, so the pairs
    vary less than the medians' ratio of the table."""
    if not any(c.name == "floor" for c in clients) or len({m.round for m in rows}) < 2:
        return []
    lines = ["", "Marginal ÷ the floor's in the same round, median (each round's):", ""]
    for p in paces:
        floor = per_million(rows, "floor", p, base, long)[2]
        for c in clients:
            if c.name == "floor":
                continue
            pairs = [
                m / f
                for m, f in zip(per_million(rows, c.name, p, base, long)[2], floor, strict=True)
            ]
            each = ", ".join(f"{r:.2f}" for r in pairs)
            lines.append(f"- {c.label}, {pacing_name(p)}: {statistics.median(pairs):.2f} ({each})")
    return lines


def invariants_share(rows: list[Measurement], clients: list[Client], paces: list[float],
                     base: int) -> list[str]:  # fmt: skip
    """What the consistency invariants add to `repro run`'s CPU per turn (a stream is a
    one-turn session here): its CPU with them against without, paired by round."""
    names = {c.name for c in clients}
    if not {"repro", "repro-no-invariants"} <= names:
        return []
    lines = ["", "The invariants' share of `repro run`'s CPU per turn, paired by round, "
             f"at {base} tokens a turn (median; each round's):", ""]  # fmt: skip

    def cpu(name: str, round_: int, p: float) -> float:
        return next(m.cpu_s / m.streams for m in rows if m.client == name and
                    m.pace_ms == p and m.round == round_ and m.tokens_per_stream == base)  # fmt: skip

    for p in paces:
        rounds = sorted({m.round for m in rows if m.pace_ms == p})
        shares = [1 - cpu("repro-no-invariants", r, p) / cpu("repro", r, p) for r in rounds]
        with_ = statistics.median(cpu("repro", r, p) for r in rounds) * 1e3
        without = statistics.median(cpu("repro-no-invariants", r, p) for r in rounds) * 1e3
        each = ", ".join(f"{s:+.1%}" for s in shares)
        lines.append(f"- {pacing_name(p)}: {statistics.median(shares):+.1%} ({each}); "
                     f"{with_:.2f} ms of CPU a turn with them, {without:.2f} without")  # fmt: skip
    return lines


def user_and_system(rows: list[Measurement], clients: list[Client], paces: list[float], base: int,
                    long: int) -> list[str]:  # fmt: skip
    """Each marginal split into user-space and kernel CPU: what a client's own code costs per
    token, apart from the reads, wake-ups and TCP work that every client pays."""
    if any(m.user_s is None for m in rows):
        return []  # rows saved before the split was kept
    lines = ["", "The marginal split, user-space / system CPU-seconds per 1M tokens (medians):", ""]
    for p in paces:
        cells = []
        for c in clients:
            user = per_million(rows, c.name, p, base, long, lambda m: m.user_s)[1]
            system = per_million(rows, c.name, p, base, long, lambda m: m.cpu_s - m.user_s)[1]
            cells.append(f"{c.name} {user:.1f} / {system:.1f}")
        lines.append(f"- {pacing_name(p)}: " + "; ".join(cells))
    return lines


if __name__ == "__main__":
    main()
