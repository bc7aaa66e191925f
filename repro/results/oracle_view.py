"""A run's turns as the chosen oracle judged them, and the divergence oracle's figures.

turns.parquet holds what the load measured and what the validity checker said; the
replay's verdicts are in divergence.jsonl. Every report reads the turns through
`judged_records`, so the summary, the HTML page, the gate and bisection count the same:

- validity: the turns as recorded;
- divergence: a turn is judged once the replay judged it, corrupted when its divergence
  counts (corrupt, or unclassed for want of logprobs); `numerical` ones never count;
- both: every ok turn is judged by validity, and corrupted by either oracle.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from repro.checkers.divergence import DivergenceKind
from repro.records import ReplayedTurn, TurnOutcome, TurnRecord

NUMERICAL_LISTED = 50  # numerical divergences listed by session, turn and margin


def divergence_kind(kind: DivergenceKind) -> str:
    """The defect kind a counted divergence adds to a turn (`corrupt_divergence`, ...)."""
    return f"{kind}_divergence"


def with_verdict(judged: bool, corrupted: bool, turn: ReplayedTurn | None) -> tuple[bool, bool]:
    """An ok turn's (judged, corrupted) once the replay's verdict on it, if any, is applied."""
    if turn is None or turn.divergence is None:
        return judged, corrupted  # not replayed, or the reference did not answer
    return True, corrupted or turn.divergence.counts


def judged_records(
    records: Sequence[TurnRecord],
    oracle: str | None,
    replayed: Mapping[tuple[int, int], ReplayedTurn],
) -> list[TurnRecord]:
    if oracle in (None, "validity", "none"):
        return list(records)
    judged = []
    for record in records:
        turn = replayed.get((record.session_id, record.turn))
        if record.outcome != TurnOutcome.OK or turn is None or turn.divergence is None:
            judged.append(record)  # as the load left it: judged by validity, or not at all
            continue
        divergence = turn.divergence
        kinds, first = list(record.defect_kinds), record.first_defect
        if divergence.counts:
            kinds.append(divergence_kind(divergence.kind))
            first = first or divergence.describe()
        now_judged, corrupted = with_verdict(record.judged, record.corrupted, turn)
        judged.append(
            dataclasses.replace(
                record,
                judged=now_judged,
                corrupted=corrupted,
                defect_kinds=sorted(set(kinds)),
                first_defect=first,
            )
        )
    return judged


def divergence_figures(
    records: Sequence[TurnRecord],
    replayed: Mapping[tuple[int, int], ReplayedTurn],
    info: Mapping[str, Any],
) -> dict[str, Any]:
    """summary.json's `divergence`: how the replay went (`info`) and what it found."""
    ok = [r for r in records if r.outcome == TurnOutcome.OK]
    kinds = Counter(str(t.divergence.kind) for t in replayed.values() if t.divergence)
    numerical = [
        {
            "session_id": t.session_id,
            "turn": t.turn,
            "token_offset": t.divergence.token_offset,
            "gap_nats": t.divergence.gap_nats,
            "reference_margin": t.divergence.reference_margin,
        }
        for t in sorted(replayed.values(), key=lambda t: (t.session_id, t.turn))
        if t.divergence and t.divergence.kind is DivergenceKind.NUMERICAL
    ]
    return dict(info) | {
        "sessions_with_turns": len({r.session_id for r in ok}),
        "turns_with_outcome_ok": len(ok),
        "turns_replayed": sum(kinds.values()),
        "turns_by_tokens": sum(
            1 for t in replayed.values() if t.divergence and t.divergence.by_tokens
        ),
        "kinds": {str(k): kinds.get(str(k), 0) for k in DivergenceKind},
        "errors": sum(1 for t in replayed.values() if t.divergence is None),
        "numerical": numerical[:NUMERICAL_LISTED],
    }
