"""Signals at random moments of many short runs: INT, TERM, HUP and KILL in turn, each at a
seeded random moment (the CLI's start, the engine's start-up, the load, the teardown), each
checked as tests/e2e/test_signal_faults.py checks it (the documented exit code, agreeing with
summary.json; no traceback; no process of the run left 3 s after repro exits).

    PYTHONPATH=. python bench/signal_faults.py --cases 24 --seed 7 [--from-s 0 --to-s 7]

--from-s/--to-s narrow the moments to a span, e.g. a run's last second, its exit.
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.test_signal_faults import signal_once_and_check

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL]


def cases(
    n: int, seed: int, span_s: tuple[float, float] = (0.0, 7.0)
) -> list[tuple[signal.Signals, float]]:
    """n (signal, seconds after the start) pairs, each signal in turn at a random moment of
    span_s; the default spans a whole short run (about 6 s here: the CLI starts, the engine
    starts, the load, the teardown)."""
    rng = random.Random(seed)
    return [(SIGNALS[i % len(SIGNALS)], round(rng.uniform(*span_s), 2)) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--from-s", type=float, default=0.0, help="earliest moment, s")
    parser.add_argument("--to-s", type=float, default=7.0, help="latest moment, s")
    args = parser.parse_args()
    if not 0 <= args.from_s <= args.to_s:
        parser.error("--from-s must be at least 0 and at most --to-s")
    outcomes: collections.Counter[str] = collections.Counter()
    broken = []
    for sig, delay_s in cases(args.cases, args.seed, (args.from_s, args.to_s)):
        with tempfile.TemporaryDirectory() as folder:
            try:
                outcome = signal_once_and_check(Path(folder) / "run", sig, delay_s)
            except AssertionError as exc:
                outcome = "BROKEN"
                broken.append(f"{sig.name} at {delay_s} s: {str(exc)[:300]}")
        outcomes[f"{sig.name} {outcome}"] += 1
        print(f"{sig.name:<8} at {delay_s:5.2f} s: {outcome}", flush=True)
    print(f"\n{args.cases} cases, {len(broken)} broken promises")
    for key, count in sorted(outcomes.items()):
        print(f"  {key:<40} {count}")
    for line in broken:
        print(f"  {line}")


if __name__ == "__main__":
    main()
