"""How often `repro bisect commits` names the right commit, and what it spends, over seeds;
against plain halving with a fixed number of waves per point and against a
multiplicative-weights search, under the same noise.

A git repository of --commits commits (oldest first) whose history brings the index-K race
in at commit k (or, with --fix, takes it out at commit j), k drawn per seed; two interior
commits (never the culprit) do not build (their build exits 125). Each commit's build writes
its rate into the environment; the engine is a seeded stand-in whose sessions corrupt at
that rate (tests/unit/bisect/history_fake.py), with waves spread as --wave-spread says. So
this measures the search's statistics with simulated sessions at the measured rates; real
engine runs at a smaller count back it (docs/bisect-history.md). The peers run on the very
same session outcomes:

- halving: plain bisection; each point gets --repeats waves, and is bad when its rate is
  nearer the bad endpoint's measured rate than the good one's; an unbuildable midpoint is
  replaced by its nearest buildable neighbour (git bisect's skip);
- weights: multiplicative weights over the culprit's position (Karp and Kleinberg's noisy
  binary search, as robust-git-bisect applies it): query the weighted median, one wave,
  the same threshold verdict; weights on the side the verdict rules out are multiplied by
  eps/(1-eps) (eps the verdict's error rate at the endpoints' rates); stop when one position
  holds --confidence of the weight, or at 3 x log2(commits) queries.

    python bench/bisect_history.py --seeds 20                         # 0% -> 17%
    python bench/bisect_history.py --seeds 20 --good-rate 0.02 --bad-rate 0.15 --p0 0.02 --p1 0.15
    python bench/bisect_history.py --seeds 20 --fix
    flock /tmp/repro-bench.lock python bench/bisect_history.py --engine sim --seeds 3

--engine sim runs the real thing instead: `repro bisect commits` on the embedded engine,
started for real on 127.0.0.1, over a repository whose commits set the engine's index-K gate
(buggy from commit k on, fixed before it; --fix the reverse) through the interpreter each
build writes, at CI scale (40-session waves to 12k on a small spilling pool, single server).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from repro.bisect.history.campaign import CommitCampaign, bisect_commits, history_report_json
from repro.bisect.sprt import SprtSettings
from repro.errors import UsageError
from repro.spec import RunSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "bisect"))
from history_fake import BUILD, HistoryFake, make_repo

WAVE = 80


def outcomes(seed: int, key: str, rate: float, first: int, n: int, spread: float) -> list[bool]:
    """The same draw HistoryFake makes for a point (keyed by its environment's name)."""
    if spread:
        shape = spread**-2
        rate = min(
            1.0, rate * random.Random(f"{seed}:{key}:w{first}").gammavariate(shape, 1 / shape)
        )
    return [random.Random(f"{seed}:{key}:{sid}").random() < rate for sid in range(first, first + n)]


class Sim:
    """One history under the stand-in's noise, for the peers: a wave at a point costs WAVE
    sessions and returns its corrupted count."""

    def __init__(self, seed: int, rates: list[float], keys: list[str], spread: float) -> None:
        self.seed, self.rates, self.keys, self.spread = seed, rates, keys, spread
        self.next_id: dict[int, int] = {}
        self.sessions = 0
        self.points: set[int] = set()

    def wave(self, i: int) -> int:
        first = self.next_id.get(i, 0)
        self.next_id[i] = first + WAVE
        self.sessions += WAVE
        self.points.add(i)
        return sum(outcomes(self.seed, self.keys[i], self.rates[i], first, WAVE, self.spread))


def halving(sim: Sim, n: int, broken: set[int], good_index: int, repeats: int) -> int:
    """Plain bisection; the first point in the newer endpoint's state."""
    rate = lambda i: sum(sim.wave(i) for _ in range(repeats)) / (repeats * WAVE)  # noqa: E731
    old_rate, new_rate = rate(0), rate(n - 1)
    low, high = 0, n - 1
    while high - low > 1:
        mid = (low + high) // 2
        order = sorted(range(low + 1, high), key=lambda i: (abs(i - mid), i))
        mid = next((i for i in order if i not in broken), None)
        if mid is None:
            break
        r = rate(mid)
        if abs(r - new_rate) < abs(r - old_rate):
            high = mid
        else:
            low = mid
    return high


def weights(sim: Sim, n: int, broken: set[int], confidence: float, eps: float) -> int:
    """Multiplicative weights over culprits 1..n-1; one wave per query."""
    old_rate, new_rate = sim.wave(0) / WAVE, sim.wave(n - 1) / WAVE
    w = [1.0] * (n - 1)  # w[b - 1]: culprit b
    factor = eps / (1 - eps)
    for _ in range(3 * math.ceil(math.log2(n))):
        total = sum(w)
        if max(w) / total >= confidence:
            break
        acc, median = 0.0, n - 1
        for b in range(1, n):
            acc += w[b - 1]
            if acc >= total / 2:
                median = b
                break
        order = sorted(range(1, n - 1), key=lambda i: (abs(i - median), i))
        point = next((i for i in order if i not in broken), None)
        if point is None:
            break
        r = sim.wave(point) / WAVE
        says_new = abs(r - new_rate) < abs(r - old_rate)
        for b in range(1, n):  # the point is new iff b <= point
            if (b <= point) != says_new:
                w[b - 1] *= factor
    return 1 + max(range(n - 1), key=lambda i: w[i])


SIM_SCALE = ["--context-max", "12000", "--ramp-up", "0.5", "--sessions", "40", "--p0", "0.02",
             "--p1", "0.2", "--sessions-cap", "120", "--set", "kv_pool_gb=3", "--set",
             "host_link_gbytes_per_s=12", "--topology", "single", "--index-k", "bf16",
             "--hicache", "on", "--set", "time_scale=0.05"]  # fmt: skip
SIM_BUILD = (
    "test -f broken && exit 125; "
    'mkdir -p "$REPRO_BISECT_ENV/bin" && '
    'printf \'#!/bin/sh\\nexec %s "$@" --index-k-gate %s\\n\' "$REPRO_TEST_PYTHON" "$(cat gate)" '
    '> "$REPRO_BISECT_ENV/bin/python" && chmod +x "$REPRO_BISECT_ENV/bin/python"'
)


def on_the_engine(args: argparse.Namespace) -> None:
    """`repro bisect commits` on the embedded engine, --seeds histories."""
    import json
    import os
    import subprocess

    n = args.commits
    for seed in range(args.seeds):
        draw = random.Random(f"history:{seed}")
        k = draw.randrange(2, n - 1)
        broken = set(draw.sample([i for i in range(1, n - 1) if i != k], 2))
        old, new = ("buggy", "fixed") if args.fix else ("fixed", "buggy")
        gates = [old if i < k else new for i in range(n)]
        with tempfile.TemporaryDirectory() as folder:
            repo = Path(folder) / "repo"
            shas = make_repo(repo, [0.0] * n, broken=sorted(broken), files={"gate": gates})
            good, bad = (shas[-1], shas[0]) if args.fix else (shas[0], shas[-1])
            command = [sys.executable, "-m", "repro", "bisect", "commits", "--repo", str(repo),
                       "--good", good, "--bad", bad, "--build", SIM_BUILD, *SIM_SCALE,
                       "--seed", str(seed), "--out", str(Path(folder) / "out"), "--json"]  # fmt: skip
            began = time.monotonic()
            done = subprocess.run(
                command, capture_output=True, text=True, check=False,
                env=os.environ | {"REPRO_TEST_PYTHON": sys.executable},
            )  # fmt: skip
            wall = time.monotonic() - began
            if done.returncode != 0:
                print(f"seed {seed}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
                continue
            doc = json.loads(done.stdout)
            first = shas.index(doc["answer"]["first_" + doc["terms"]["new"]]["id"])
            skipped = sorted(shas.index(s["id"]) for s in doc["skipped"])
            print(
                f"seed {seed}: culprit {k}, found {first} ({'right' if first == k else 'WRONG'}), "
                f"P = {doc['answer']['probability']}, {doc['points_measured']} points measured, "
                f"skipped {skipped} (unbuildable {sorted(broken)}), {doc['sessions']} sessions, "
                f"{wall:.0f} s wall"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--commits", type=int, default=32)
    parser.add_argument("--good-rate", type=float, default=0.0)
    parser.add_argument("--bad-rate", type=float, default=0.17)
    parser.add_argument("--wave-spread", type=float, default=0.0)
    parser.add_argument("--fix", action="store_true", help="the history takes the race out")
    parser.add_argument("--p0", type=float, default=0.005)
    parser.add_argument("--p1", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=1, help="halving: waves per point")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--engine", choices=("fake", "sim"), default="fake")
    args = parser.parse_args()
    if args.engine == "sim":
        on_the_engine(args)
        return
    n = args.commits
    sprt = SprtSettings(p0=args.p0, p1=args.p1)
    rows: dict[str, list[tuple[bool, int, int, float]]] = {
        "repro": [],
        "halving": [],
        "weights": [],
    }
    skipped_reported = 0
    refusals: list[str] = []
    started = time.monotonic()
    for seed in range(args.seeds):
        draw = random.Random(f"history:{seed}")
        k = draw.randrange(2, n - 1)  # the first commit in the newer state
        broken = set(draw.sample([i for i in range(1, n - 1) if i != k], 2))
        old, new = (args.bad_rate, args.good_rate) if args.fix else (args.good_rate, args.bad_rate)
        rates = [old if i < k else new for i in range(n)]
        with tempfile.TemporaryDirectory() as folder:
            repo = Path(folder) / "repo"
            shas = make_repo(repo, rates, broken=sorted(broken))
            good, bad = (shas[-1], shas[0]) if args.fix else (shas[0], shas[-1])
            campaign = CommitCampaign(
                run=RunSpec(seed=seed), repo=repo, good=good, bad=bad, build_command=BUILD,
                out_dir=Path(folder) / "out", sprt=sprt, confidence=args.confidence,
                parallel=args.parallel,
            )  # fmt: skip
            keys = [f"commit-{sha}-{campaign_digest(BUILD)}" for sha in shas]
            try:
                report = bisect_commits(campaign, oracle=HistoryFake(seed=seed), say=lambda _: None)
            except UsageError as refused:  # the endpoints did not bracket: no answer
                refusals.append(str(refused))
                rows["repro"].append((False, 2, 0, 0.0))
            else:
                doc = history_report_json(report, "commits")
                first = shas.index(report.points[report.answer.high].id)
                waves = sum(t["sessions_run"] for t in doc["table"]) / WAVE
                rows["repro"].append((first == k, doc["points_measured"], doc["sessions"], waves))
                skipped_reported += {s["id"] for s in doc["skipped"]} <= {shas[i] for i in broken}
        for name in ("halving", "weights"):
            sim = Sim(seed, rates, keys, args.wave_spread)
            if name == "halving":
                found = halving(sim, n, broken, 0, args.repeats)
            else:
                found = weights(sim, n, broken, args.confidence, _eps(args))
            rows[name].append((found == k, len(sim.points), sim.sessions, sim.sessions / WAVE))
    print(
        f"{args.seeds} seeds, {n} commits, {'fix' if args.fix else 'break'}: "
        f"{args.good_rate:.1%} -> {args.bad_rate:.1%} (wave spread {args.wave_spread}); "
        f"SPRT p0={args.p0} p1={args.p1}; halving {args.repeats} wave(s) per point; "
        f"{time.monotonic() - started:.0f} s"
    )
    for name, data in rows.items():
        right = sum(r for r, *_ in data)
        print(
            f"{name:8s} right {right}/{len(data)}, points measured mean "
            f"{statistics.mean(p for _, p, _, _ in data):.1f} (max {max(p for _, p, _, _ in data)}), "
            f"sessions mean {statistics.mean(s for _, _, s, _ in data):.0f}, "
            f"wall mean {statistics.mean(w for *_, w in data):.1f} wave-times"
        )
    print(
        f"repro: the unbuildable commits it met reported as skipped (and nothing else) in "
        f"{skipped_reported} of {args.seeds - len(refusals)} answers; endpoints refused "
        f"{len(refusals)} times (counted wrong above)"
    )
    for said in refusals[:3]:
        print(f"  refused: {said}")


def _eps(args: argparse.Namespace) -> float:
    """The one-wave threshold verdict's error rate at the two rates (normal approximation)."""
    from statistics import NormalDist

    mid = (args.good_rate + args.bad_rate) / 2
    sd = math.sqrt(max(mid * (1 - mid), 1e-6) / WAVE)
    wrong = 1 - NormalDist().cdf((args.bad_rate - args.good_rate) / 2 / sd)
    return min(0.45, max(0.01, wrong))


def campaign_digest(command: str) -> str:
    from repro.bisect.history.environments import build_digest

    return build_digest(command)


if __name__ == "__main__":
    main()
