"""A divergence run's verdicts split by what the stream oracle said of the same turn.

Reads a run folder of `repro run --oracle divergence,stream --mix ...` (divergence.jsonl and
turns.parquet) and prints, per (stream twin: none, agrees, disagrees) and (a grammar forces
a call or not), the turns judged and the `corrupt` divergences among them, then the held-back
turns the replay asked alone at the end. This is the split that showed the forced-position
divergences of 2026-12-05 to sit only in flagged turns (bench/HISTORY.md, 2026-12-06).

    python bench/divergence_by_twin.py RUN_DIR
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pandas as pd

from repro.shapes.shape import FORCES_A_CALL, parse_label


def split(run: Path) -> tuple[Counter, Counter]:
    verdicts = {
        (r["session_id"], r["turn"]): r["kind"]
        for r in map(json.loads, (run / "divergence.jsonl").open())
    }
    turns = pd.read_parquet(run / "turns.parquet", columns=["session_id", "turn", "shape", "twin"])
    judged: Counter = Counter()
    corrupt: Counter = Counter()
    for row in turns.itertuples():
        kind = verdicts.get((row.session_id, row.turn))
        if kind is None:
            continue
        forced = parse_label(row.shape).get("tool_choice") in FORCES_A_CALL
        key = (row.twin or "none", "forced" if forced else "not forced")
        judged[key] += 1
        corrupt[key] += kind == "corrupt"
    return judged, corrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    run = parser.parse_args().run
    judged, corrupt = split(run)
    print("| stream twin | tool choice | turns judged | `corrupt` divergences |")
    print("|---|---|---|---|")
    for key in sorted(judged):
        print(f"| {key[0]} | {key[1]} | {judged[key]} | {corrupt[key]} |")
    alone = json.loads((run / "summary.json").read_text())["divergence"].get("alone", {})
    print(
        f"\nasked alone at the end: {alone.get('replayed', 0)}, counted {alone.get('counted', 0)}"
    )


if __name__ == "__main__":
    main()
