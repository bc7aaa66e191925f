"""How often `repro bisect flags` gets the story right, and what it spends, over many seeds.

The engine is replaced by a seeded binomial per configuration (no processes, seconds per
100 campaigns), so the search's statistics can be measured where a real run gives one
sample. The peer is the brute force the issue compares against: every one of the 2^6 cells
at 80 sessions (5,120 sessions). Run:

    python bench/bisect_accuracy.py --seeds 100 --bad-rate 0.125 --amplified-rate 0.05
    python bench/bisect_accuracy.py --seeds 100 --case weak-amplifier

--case weak-amplifier is the engine of the 2026-12-05 campaign's kind: a two-knob trigger
(hicache + bf16), a weak amplifier (topology: 12.5% with it, 5% without, 2.5x, as the
embedded engine measured at 16k before its load-induced race) and three red herrings.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

from repro.bisect.campaign import FlagCampaign, bisect_flags, flag_report_json
from repro.bisect.trial import TrialRunner
from repro.spec import RunSpec

# The engine stand-in is the unit tests' own (tests/unit/bisect/fake_oracle.py): one table of
# knobs, one seeded binomial per configuration, whether a test or this bench drives it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "bisect"))
from fake_oracle import STORY_KNOBS, FakeOracle, seed_bug

BAD = dict(topology="pd", hicache="on", index_k="bf16", topk_v2="on", custom_kernels="on")
BAD |= {"cuda_graph": "off"}
GOOD = dict(topology="single", hicache="off", index_k="fp8", topk_v2="off", custom_kernels="off")
GOOD |= {"cuda_graph": "on"}
CULPRIT = {"topology": "pd", "hicache": "on", "index_k": "bf16"}
CLASSES = {"topology": "amplifier", "hicache": "needed", "index_k": "needed"}
CLASSES |= {k: "irrelevant" for k in ("topk_v2", "custom_kernels", "cuda_graph")}
BRUTE_FORCE_SESSIONS = 2 ** len(STORY_KNOBS) * 80
WAVE_S = 0.02  # with --parallel: a wave's duration, long beside the search's own work
# Named engines: (bad rate, rate with the amplifier reverted).
CASES = {"weak-amplifier": (0.125, 0.05), "story": (0.17, 0.02)}


@contextlib.asynccontextmanager
async def _nothing_ahead(self: TrialRunner) -> AsyncIterator[None]:
    yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument(
        "--case", choices=sorted(CASES),
        help="a named engine: its rates replace --bad-rate and --amplified-rate",
    )  # fmt: skip
    parser.add_argument("--bad-rate", type=float, default=0.125)
    parser.add_argument("--amplified-rate", type=float, default=0.05)
    parser.add_argument(
        "--wave-spread", type=float, default=0.0,
        help="coefficient of variation of a wave's rate (run-to-run spread; 0 = binomial)",
    )  # fmt: skip
    parser.add_argument(
        "--herring-effect", type=float, default=1.0,
        help="custom_kernels=off multiplies the rate by this (the model's 5%% faster prefill)",
    )  # fmt: skip
    parser.add_argument(
        "--slow-hicache-off", type=float, default=1.0,
        help="with --parallel: a HiCache-off wave takes this many times as long (on the "
        "load-induced engine at 80k it recomputes every spilled prefix: 4-6x)",
    )  # fmt: skip
    parser.add_argument(
        "--without-waves-ahead", action="store_true",
        help="with --parallel: idle deployments run nothing ahead of need (the search before "
        "repro/bisect/ahead.py), for a before/after in one command",
    )  # fmt: skip
    parser.add_argument(
        "--parallel", type=int, default=1,
        help="trials at once; with it each wave takes 20 ms, and the wall is given in waves",
    )  # fmt: skip
    args = parser.parse_args()
    if args.case:
        args.bad_rate, args.amplified_rate = CASES[args.case]
    bug = seed_bug(args.bad_rate, args.amplified_rate)

    def rate(config: dict[str, str]) -> float:
        weaker = config["custom_kernels"] == "off"
        return bug(config) * (args.herring_effect if weaker else 1.0)

    culprits = classes = 0
    sessions, trials = [], []
    wrong: Counter[str] = Counter()
    wall_waves: list[float] = []  # a campaign's wall, in wave durations (with --parallel)
    serial_waves: list[float] = []  # the same campaign's waves one after another, in durations
    cancelled: list[int] = []  # waves run ahead and not used
    if args.without_waves_ahead:
        TrialRunner.running_ahead = _nothing_ahead  # type: ignore[method-assign]
    if args.parallel > 1:  # the first campaign of a process pays for imports: not measured
        with tempfile.TemporaryDirectory() as out:
            warm = FlagCampaign(run=RunSpec(seed=10**6), bad=BAD, good=GOOD, out_dir=Path(out))
            bisect_flags(warm, oracle=FakeOracle(rate=rate))
    for seed in range(args.seeds):
        engine = FakeOracle(rate=rate, seed=seed, wave_spread=args.wave_spread)
        if args.parallel > 1:
            engine.wave_seconds = WAVE_S
            engine.slow = ({"hicache": "off"}, args.slow_hicache_off)
        with tempfile.TemporaryDirectory() as out:
            campaign = FlagCampaign(
                run=RunSpec(seed=seed), bad=BAD, good=GOOD, out_dir=Path(out),
                parallel=args.parallel,
            )  # fmt: skip
            started = time.monotonic()
            doc = flag_report_json(bisect_flags(campaign, oracle=engine))
            wall_waves.append((time.monotonic() - started) / WAVE_S)
        used = [
            (row["sessions_run"] // campaign.run.sessions, row["config"]["hicache"] == "off")
            for row in doc["table"]
        ]
        serial_waves.append(sum(n * (args.slow_hicache_off if slow else 1.0) for n, slow in used))
        cancelled.append(len(engine.waves) - sum(n for n, _ in used))
        culprits += doc["culprit"] == CULPRIT
        classes += doc["classes"] == CLASSES
        wrong.update(f"{k} {c}" for k, c in doc["classes"].items() if CLASSES.get(k) != c)
        sessions.append(doc["sessions"])
        trials.append(doc["trials"])
    cuts = statistics.quantiles(sessions, n=20)
    print(
        f"rates: bad {args.bad_rate:.1%}, topology reverted {args.amplified_rate:.1%}, "
        f"custom_kernels reverted x{args.herring_effect}, wave spread {args.wave_spread}"
    )
    print(f"culprit right {culprits}/{args.seeds}, all classes right {classes}/{args.seeds}")
    print("classes wrong: " + (", ".join(f"{k} {n}" for k, n in wrong.most_common()) or "none"))
    print(
        f"sessions mean {statistics.mean(sessions):.0f}, p95 {cuts[-1]:.0f}, max {max(sessions)};"
        f" trials max {max(trials)}, over 12 in {sum(t > 12 for t in trials)}"
    )
    if args.parallel > 1:
        print(
            f"serial wall mean {statistics.mean(serial_waves):.1f} wave-times; with "
            f"{args.parallel} at once {statistics.mean(wall_waves):.1f} "
            f"({statistics.mean(wall_waves) / statistics.mean(serial_waves):.2f} of serial); "
            f"waves run ahead and not used: mean {statistics.mean(cancelled):.1f}"
        )
    ratio = statistics.mean(sessions) / BRUTE_FORCE_SESSIONS
    print(f"vs brute force ({BRUTE_FORCE_SESSIONS} sessions): {ratio:.2f}x the sessions")


if __name__ == "__main__":
    main()
