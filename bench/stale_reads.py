"""Where an engine's stale index-K reads came from, read off its debug log (docs/sim.md).

    python bench/stale_reads.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR is a `repro run ... --set log_level=debug` folder; its logs/single.log or
logs/prefill.log has a line per load-back. For the stale ones this prints the batch sizes,
the PD hand-overs under way, the head start, the slack and the nominal load, and how late the
copy had to run to be read stale: slack over load, less one, in units of its nominal time.
For each stale read the engine also logs the share of the forward's layers read stale and
whether the output derailed (faults.IndexKRace); logs from before that rule have neither.
With the run's turns.parquet it also matches each derailed read to its turn by prompt size
and says how many the checkers flagged, and how many of the rest were final answers.
It also counts the load-backs prefilled alone in their batch and how many of those read
stale, and how many would still be stale had the PD hand-overs left the host link to the
load-backs (the model's link sharing, timing.py's `host_load_s`): each copy then runs at the
whole link, and its read is stale only if it still lands after the slack. That is a first-order
count (the same batches and slack, the copy alone faster), since the hand-overs leave the
prefill GPU while the load-backs come in, and on a full-duplex link (PCIe, NVLink-C2C) the
two need not meet.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

import pandas as pd

from repro.sim.config import DEFAULT_HOST_LINK_GBYTES_PER_S
from repro.sim.timing import CostModel

_FIELD = re.compile(r"(\w+)=(\S+)")
ROLES = ("single", "prefill")  # the roles that load back and race


def load_backs(log_text: str) -> list[dict[str, str]]:
    """Every load-back line, as its key=value fields."""
    return [
        dict(_FIELD.findall(line.split("load-back ", 1)[1]))
        for line in log_text.splitlines()
        if "load-back rid=" in line
    ]


def is_stale(row: dict[str, str]) -> bool:
    return row.get("stale") == "True"


def stale_reads(log_text: str) -> list[dict[str, str]]:
    """The load-back lines whose read was stale, as their key=value fields."""
    return [row for row in load_backs(log_text) if is_stale(row)]


def alone_in_their_batch(rows: list[dict[str, str]]) -> str:
    """Load-backs prefilled alone (a run's tail, few sessions left) and how many read stale:
    little compute hides a long load poorly, so these cluster on the same sessions."""
    alone = [row for row in rows if row.get("batch") == "1"]
    stale = sum(map(is_stale, alone))
    return f"{len(alone)} load-backs alone in their batch, {stale} of them stale"


def lateness_needed(row: dict[str, str]) -> float:
    """How late, in units of its nominal time, the copy had to run to miss the last read."""
    return float(row["slack_s"]) / float(row["load_s"]) - 1.0


def stale_with_the_whole_link(row: dict[str, str], cost: CostModel) -> bool:
    """Would the read still be stale had the hand-overs on the link left it to the copy?"""
    faster = cost.host_load_s(1, 0) / cost.host_load_s(1, int(row["handovers"]))
    return float(row["ratio"]) * faster > 1.0


def layers_read_stale(rows: list[dict[str, str]]) -> str:
    """The stale reads' share of layers read stale, and how many derailed their output."""
    shares = [float(r["stale_share"]) for r in rows if "stale_share" in r]
    if not shares:
        return "share of layers read stale not logged"
    derailed = sum(r.get("derails") == "True" for r in rows)
    return (
        f"share of layers read stale: median {statistics.median(shares):.2f}, "
        f"{sum(s == 1.0 for s in shares)} of {len(shares)} all of them; {derailed} derailed"
    )


def derailed_turns(rows: list[dict[str, str]], turns: pd.DataFrame) -> str:
    """Where the derailed reads' outputs went. Each is matched to the one judged turn of its
    prompt size (turns.parquet's `prompt_tokens` is the engine's own count); a size that two
    turns share stays unmatched. A matched turn the checkers did not flag is the validity
    oracle's blind spot (docs/checkers.md, "What it cannot see"), mostly final answers."""
    derailed = [row for row in rows if row.get("derails") == "True"]
    if not derailed:
        return "no derailed read to match to a turn"
    judged = turns[turns.outcome == "ok"]
    sizes = judged.prompt_tokens.value_counts()
    matched = [
        judged[judged.prompt_tokens == size].iloc[0]
        for size in (int(row["prompt_tokens"]) for row in derailed)
        if sizes.get(size) == 1
    ]
    missed = [turn for turn in matched if not turn.corrupted]
    finals = sum(int(turn.n_calls) == 0 for turn in missed)
    return (
        f"{len(matched)} of {len(derailed)} derailed reads matched to one turn: "
        f"{len(matched) - len(missed)} flagged corrupted, {len(missed)} not "
        f"({finals} of those final answers)"
    )


def engine_argv(run_dir: Path, role: str) -> list[str]:
    """The role's command line as the run launched it (spec.json); empty if not recorded."""
    try:
        roles = json.loads((run_dir / "spec.json").read_text())["roles"]
        return list(next(r["argv"] for r in roles if r["name"] == role))
    except (OSError, ValueError, KeyError, StopIteration):
        return []


def cost_model(run_dir: Path, role: str) -> CostModel:
    """The role's host link and whether the hand-overs shared it, as the run launched it."""
    argv = engine_argv(run_dir, role)
    try:
        link = float(argv[argv.index("--host-link-gbytes-per-s") + 1])
    except (ValueError, IndexError):
        link = DEFAULT_HOST_LINK_GBYTES_PER_S
    shared = "--no-handover-link-sharing" not in argv
    return CostModel(host_load_bytes_per_s=link * 1e9, handover_link_sharing=shared)


def describe(rows: list[dict[str, str]], cost: CostModel | None = None) -> str:
    if not rows:
        return "no stale read"
    cost = cost or CostModel()

    def span(key: str) -> str:
        values = [float(r[key]) * 1000 for r in rows if key in r]
        return f"{min(values):.0f}–{max(values):.0f} ms" if values else "not logged"

    needed = [lateness_needed(r) for r in rows]
    batches = sorted({int(r["batch"]) for r in rows})
    handovers = sorted({int(r["handovers"]) for r in rows})
    return (
        f"{len(rows)} stale reads; batches {batches}; hand-overs under way {handovers}; "
        f"head start {span('head_start_s')}; slack {span('slack_s')}; nominal load "
        f"{span('load_s')}; lateness needed: median {statistics.median(needed):.2f}, "
        f"least {min(needed):.2f}; {off_the_link(rows, cost)}; {layers_read_stale(rows)}"
    )


def off_the_link(rows: list[dict[str, str]], cost: CostModel) -> str:
    if not cost.handover_link_sharing:
        return "the hand-overs were off the host link in this run (--no-handover-link-sharing)"
    still = sum(stale_with_the_whole_link(r, cost) for r in rows)
    return f"{still} still stale with the hand-overs off the host link"


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for run_dir in map(Path, sys.argv[1:]):
        logs = [run_dir / "logs" / f"{role}.log" for role in ROLES]
        found = [log for log in logs if log.exists()]
        if not found:
            sys.exit(f"{run_dir} has no logs/single.log or logs/prefill.log: is it a run folder?")
        for log in found:
            rows = load_backs(log.read_text(errors="replace"))
            if not rows:
                print(f"{log}: no load-back lines; was the run made with --set log_level=debug?")
                continue
            stale = [row for row in rows if is_stale(row)]
            cost = cost_model(run_dir, log.stem)
            print(f"{log}: {describe(stale, cost)}; {alone_in_their_batch(rows)}")
            if (run_dir / "turns.parquet").exists():
                turns = pd.read_parquet(run_dir / "turns.parquet")
                print(f"{run_dir}: {derailed_turns(stale, turns)}")


if __name__ == "__main__":
    main()
