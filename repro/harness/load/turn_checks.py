"""The checks every turn gets besides validity: the consistency invariants on each answer, and
the stream oracle's twin (the same request the other way, sent at the same time).

A turn's defects are its validity defects (the load generator's judge), minus what its own
shape made legitimate (a call cut by a tight max_tokens or a stop string), plus what the
invariants find in its answer and in its twin's, plus the twin's disagreement if it counts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from repro.checkers.consistency import (
    Asked,
    ServedAnswer,
    TwinKind,
    check_answer,
    compare_twins,
)
from repro.checkers.verdict import Defect
from repro.harness.load.stream_progress import StreamProgress
from repro.records.turn import TurnOutcome
from repro.shapes import STOP_STRINGS, Shape
from repro.spec import RunSpec

# Validity's kinds for an answer cut short, which a shape that cuts on purpose makes normal.
CUT_KINDS = frozenset({"truncated_call", "truncated_block", "empty_turn"})
UNANSWERED = "unanswered"
SEMANTIC = "semantic"  # the scenario's oracle: calls naming what the session was never shown


def asked_for(
    shape: Shape, spec: RunSpec, window_tokens: int | None, *, streamed: bool | None = None
) -> Asked:
    """What a request of this shape asked for (`streamed` overrides the shape's, for a twin)."""
    return Asked(
        max_tokens=shape.max_tokens(spec.max_output_tokens),
        n=shape.choices,
        tool_choice=shape["tool_choice"],
        named_tool=shape.named_tool,
        response_format=shape["response_format"],
        schema=shape.schema(),
        parallel_tool_calls=shape["parallel_tool_calls"] != "false",
        stop=STOP_STRINGS if shape["stop"] == "strings" else (),
        streamed=shape.streamed if streamed is None else streamed,
        include_usage=True,
        window_tokens=window_tokens,
    )


def twin_wanted(spec: RunSpec, session_id: int, turn: int) -> bool:
    """Whether the stream oracle sends this turn twice (seeded, so a rerun picks the same)."""
    if not spec.stream_oracle:
        return False
    share = spec.stream_share()
    return share >= 1.0 or random.Random(f"twin:{spec.seed}:{session_id}:{turn}").random() < share


def validity_kept(
    defects: Sequence[Defect], shape: Shape, finish_reason: str | None
) -> list[Defect]:
    """Validity's defects, less those the shape made normal: a tight max_tokens cuts calls
    (finish_reason length), stop strings cut anything (finish_reason stop); and under a
    forced tool choice the call is the grammar's, not the agent's, so the semantic oracle
    (which judges what the agent chose to call) has nothing to say about it."""
    cut = (shape["max_tokens"] == "tight" and finish_reason == "length") or (
        shape["stop"] == "strings" and finish_reason in ("stop", "length", "tool_calls")
    )
    dropped = set(CUT_KINDS) if cut else set()
    if shape["tool_choice"] in ("required", "named"):
        dropped.add(SEMANTIC)
    return [d for d in defects if d.kind not in dropped]


@dataclass(slots=True)
class TurnConsistency:
    """What the consistency checks found in one turn."""

    defects: list[Defect] = field(default_factory=list)
    twin: str = ""  # "", agree, numerical, disagree, unanswered
    evidence: dict[str, Any] | None = None  # both answers, for failures.jsonl


def judge_consistency(
    progress: StreamProgress,
    asked: Asked,
    tools: Sequence[dict[str, Any]],
    twin: StreamProgress | None = None,
    twin_asked: Asked | None = None,
    margin_nats: float = 1.0,
) -> TurnConsistency:
    """The invariants on an ok answer (and its twin's), and the twins compared."""
    found = TurnConsistency()
    if progress.outcome is not TurnOutcome.OK:
        return found
    answer = progress.served()
    found.defects = check_answer(answer, asked, tools)
    if twin is None or twin_asked is None:
        if found.defects:
            found.evidence = {"answer": served_dict(answer)}
        return found
    if twin.outcome is not TurnOutcome.OK:
        found.twin = UNANSWERED
        if found.defects:
            found.evidence = {"answer": served_dict(answer)}
        return found
    other = twin.served()
    found.defects += [
        Defect(d.kind, d.offset, f"in the twin: {d.message}", f"twin.{d.field}")
        for d in check_answer(other, twin_asked, tools)
    ]
    streamed, whole = (answer, other) if answer.streamed else (other, answer)
    verdict = compare_twins(streamed, whole, margin_nats)
    found.twin = str(verdict.kind)
    if verdict.kind is TwinKind.DISAGREE:
        found.defects.append(verdict.defect())
    if found.defects or verdict.kind is TwinKind.NUMERICAL:
        found.evidence = {
            "answer": served_dict(answer),
            "twin": served_dict(other),
            "twin_verdict": {"kind": str(verdict.kind), "where": verdict.where,
                             "message": verdict.message},
        }  # fmt: skip
    return found


def served_dict(answer: ServedAnswer) -> dict[str, Any]:
    """An answer as failures.jsonl keeps it: every choice whole, usage, the stream's notes."""
    data = asdict(answer)
    for choice in data["choices"]:
        choice["logprobs"] = len(choice["logprobs"])  # the count; the tokens are in the texts
    data["anomalies"] = [list(a) for a in answer.anomalies]
    return data
