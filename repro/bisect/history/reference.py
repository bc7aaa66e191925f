"""`--oracle divergence --reference good`: a point's answers against the good endpoint's
answers to the same requests.

With scripted history every request is a pure function of the run spec and the session id,
so a point run with the same spec and session ids sends the very bytes good was sent (each
turn's body hash is compared to make sure). On a batch-invariant engine an answer does not
depend on what else is in flight, so one run per point says whether its answers changed.
Each turn is classed by the divergence oracle's own rule (repro/checkers/divergence.py):
identical, numerical (good's top-2 margin at the first differing token is within the
numerical margin: a near tie that flipped; not counted), or a counted divergence. A session
is corrupted when one of its turns diverges countably, clean when all its compared turns
agree, and no evidence when none of its turns could be compared (errored on either side, or
a body that differs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from repro.bisect.evidence import CLEAN, CORRUPTED, ERRORED
from repro.checkers.divergence import Answer, DivergenceKind, ScoredToken, compare

LOADED = "loaded.jsonl"  # what the load keeps of each turn under the divergence oracle


@dataclass(frozen=True, slots=True)
class Turn:
    body_sha256: str
    answer: Answer


@dataclass(frozen=True, slots=True)
class Comparison:
    outcomes: str  # one per session id: CORRUPTED, CLEAN or ERRORED
    turns_compared: int
    counted: int
    numerical: int


def run_turns(run_dir: Path) -> dict[tuple[int, int], Turn]:
    """(session, turn) -> the body sent and the answer, for each turn the load kept."""
    from repro.results import read_turn_table

    texts: dict[tuple[int, int], tuple[str, str]] = {}
    path = run_dir / "turns.parquet"
    if path.exists():
        columns = ["session_id", "turn", "reasoning", "content"]
        table = read_turn_table(path, columns).to_pydict()
        for sid, turn, reasoning, content in zip(
            table["session_id"], table["turn"], table["reasoning"], table["content"], strict=True
        ):
            texts[(int(sid), int(turn))] = (reasoning or "", content or "")
    turns = {}
    for row in _loaded(run_dir / LOADED):
        key = (int(row["session_id"]), int(row["turn"]))
        if key not in texts:
            continue
        tokens = tuple(
            ScoredToken(t, lp, m)
            for t, lp, m in zip(row["tokens"], row["logprobs"], row["margins"], strict=True)
        )
        reasoning, content = texts[key]
        turns[key] = Turn(
            str(row["body_sha256"]), Answer(reasoning, content, row["tool_calls"], tokens)
        )
    return turns


def _loaded(path: Path) -> Iterator[dict]:
    if not path.exists():
        return
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield orjson.loads(line)


def compare_runs(
    point_dir: Path,
    reference_dir: Path,
    first_session_id: int,
    sessions: int,
    numerical_margin_nats: float,
) -> Comparison:
    """Each session of the point's run against the reference run's same session."""
    mine, theirs = run_turns(point_dir), run_turns(reference_dir)
    compared: dict[int, list[bool]] = {}
    numerical = 0
    for key, turn in mine.items():
        reference = theirs.get(key)
        if reference is None or reference.body_sha256 != turn.body_sha256:
            continue
        verdict = classify(turn.answer, reference.answer, numerical_margin_nats)
        numerical += verdict is DivergenceKind.NUMERICAL
        compared.setdefault(key[0], []).append(
            verdict in (DivergenceKind.CORRUPT, DivergenceKind.DIVERGED)
        )
    ids = range(first_session_id, first_session_id + sessions)
    outcomes = "".join(
        ERRORED if sid not in compared else CORRUPTED if any(compared[sid]) else CLEAN
        for sid in ids
    )
    return Comparison(
        outcomes,
        sum(len(v) for v in compared.values()),
        sum(sum(v) for v in compared.values()),
        numerical,
    )


def classify(loaded: Answer, reference: Answer, margin: float) -> DivergenceKind:
    """The divergence oracle's verdict, where the reference side kept only its top-2 margin
    per token (loaded.jsonl keeps no alternatives): parting at a token where the reference
    was itself within `margin` nats of its runner-up is a flipped near tie."""
    verdict = compare(loaded, reference, margin)
    if verdict.kind is DivergenceKind.DIVERGED and verdict.by_tokens:
        near_tie = verdict.reference_margin is not None and verdict.reference_margin < margin
        if near_tie:
            return dataclasses.replace(verdict, kind=DivergenceKind.NUMERICAL).kind
    return verdict.kind


def self_outcomes(run_dir: Path, first_session_id: int, sessions: int) -> str:
    """The reference run judged against itself: clean where a session has a kept turn."""
    have = {sid for sid, _ in run_turns(run_dir)}
    ids = range(first_session_id, first_session_id + sessions)
    return "".join(CLEAN if sid in have else ERRORED for sid in ids)
