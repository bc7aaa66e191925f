"""Flush cost per turn of the run store as a run grows: appended parts against a whole rewrite.

    python bench/store_flush.py [--turns 100000] [--per-flush 1000] [--rewrite-up-to 20000]

Synthetic turns with sim-sized text (2 kB of content and reasoning, 60 gaps as figures) go through
RunStore.flush, one part per flush; the CPU per turn of the flushes around 10k and around the
last turn is printed. The peer is what the store did before: rewrite the whole table at each
flush (measured only up to --rewrite-up-to turns, since its cost grows with the run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.parquet as pq

from repro.records.turn import TurnRecord
from repro.results.store import TURN_SCHEMA, RunStore


def turn(i: int) -> TurnRecord:
    return TurnRecord(
        session_id=i // 30, turn=i % 30, outcome="ok", http_status=200, error="",
        scheduled_at_s=i * 0.01, sent_at_s=i * 0.01, first_token_at_s=i * 0.01 + 0.2,
        last_token_at_s=i * 0.01 + 1.0, ended_at_s=i * 0.01 + 1.1, prompt_tokens=2000 + 90 * i % 80000,
        completion_tokens=120, cached_tokens=None, finish_reason="tool_calls",
        content=f"turn {i} " + "x" * 1000, reasoning="thinking " * 120,
        tool_calls='[{"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}]', n_calls=1,
        chunks=61, gap_count=60, gap_mean_s=0.02, gap_max_s=0.02, gap_buckets=[229],
        gap_bucket_counts=[60], request_bytes=300_000, corrupted=False, defect_kinds=[],
        first_defect="",
    )  # fmt: skip


def appended(turns: int, per_flush: int, folder: Path) -> list[float]:
    """CPU seconds per turn of each flush, parts appended (the store as it is)."""
    store, costs = RunStore(folder), []
    for start in range(0, turns, per_flush):
        for i in range(start, min(start + per_flush, turns)):
            store.append(turn(i))
        began = time.process_time()
        anyio.run(store.flush)
        costs.append((time.process_time() - began) / per_flush)
    store.close()
    return costs


def rewritten(turns: int, per_flush: int, folder: Path) -> list[float]:
    """The same, rewriting one file with every turn so far at each flush (the store before)."""
    batches, costs = [], []
    for start in range(0, turns, per_flush):
        rows = [turn(i) for i in range(start, min(start + per_flush, turns))]
        began = time.process_time()
        columns = {name: [getattr(r, name) for r in rows] for name in TURN_SCHEMA.names}
        batches.append(pa.RecordBatch.from_pydict(columns, schema=TURN_SCHEMA))
        pq.write_table(pa.Table.from_batches(batches, schema=TURN_SCHEMA), folder / "t.tmp")
        os.replace(folder / "t.tmp", folder / "turns.parquet")
        costs.append((time.process_time() - began) / per_flush)
    return costs


def around(costs: list[float], per_flush: int, at_turn: int) -> float:
    """Median µs per turn of the five flushes ending nearest `at_turn`."""
    end = max(5, min(len(costs), at_turn // per_flush))
    return statistics.median(costs[end - 5 : end]) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--per-flush", type=int, default=1000)
    parser.add_argument("--rewrite-up-to", type=int, default=20_000)
    args = parser.parse_args()
    print(
        f"`python bench/store_flush.py --turns {args.turns} --per-flush {args.per_flush} "
        f"--rewrite-up-to {args.rewrite_up_to}`, load average {os.getloadavg()[0]:.2f}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        parts = appended(args.turns, args.per_flush, Path(tmp) / "run")
        whole = rewritten(args.rewrite_up_to, args.per_flush, Path(tmp))
    print("| store | µs CPU per turn at 10k turns | at 20k | at the last turn |")
    print("|---|---|---|---|")
    print(
        f"| parts appended (now), {args.turns:,} turns | {around(parts, args.per_flush, 10_000):.0f}"
        f" | {around(parts, args.per_flush, 20_000):.0f}"
        f" | {around(parts, args.per_flush, args.turns):.0f} |"
    )
    print(
        f"| whole table rewritten (before), {args.rewrite_up_to:,} turns"
        f" | {around(whole, args.per_flush, 10_000):.0f}"
        f" | {around(whole, args.per_flush, 20_000):.0f} | (grows with the run) |"
    )


if __name__ == "__main__":
    main()
