"""divergence.jsonl: one line per turn the replay judged (or failed to), written as it goes.

Each line is a `ReplayedTurn`: the turn's verdict against its reference (kind, where the
answers part, both sides' logprob and top-2 margin there), or the error that kept the
reference from answering. A divergence that counts also gets a failures.jsonl line with
both texts, the tokens around where they part, and the request that was replayed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from repro.checkers.divergence import Answer, Divergence, DivergenceKind

FILE_NAME = "divergence.jsonl"
TOKENS_AROUND = 8  # tokens shown on each side of where the answers part


@dataclass(frozen=True, slots=True)
class ReplayedTurn:
    session_id: int
    turn: int
    divergence: Divergence | None  # None: the reference did not answer (see error)
    error: str = ""
    reference_url: str = ""
    replay_s: float = 0.0

    @property
    def judged(self) -> bool:
        return self.divergence is not None

    @property
    def counts(self) -> bool:
        return self.divergence is not None and self.divergence.counts

    def to_json(self) -> dict[str, Any]:
        """Compact: fields left at their defaults (an identical turn's) are left out."""
        line: dict[str, Any] = {"session_id": self.session_id, "turn": self.turn}
        if self.divergence is None:
            line |= {"kind": "error", "error": self.error}
        else:
            line |= {
                k: v for k, v in dataclasses.asdict(self.divergence).items() if v not in (None, "")
            }
        return line | {"reference_url": self.reference_url, "replay_s": round(self.replay_s, 3)}

    @classmethod
    def from_json(cls, line: dict[str, Any]) -> ReplayedTurn:
        divergence = None
        if line.get("kind") != "error":
            names = {f.name for f in dataclasses.fields(Divergence)}
            fields = {k: v for k, v in line.items() if k in names}
            fields["kind"] = DivergenceKind(fields["kind"])
            divergence = Divergence(**fields)
        return cls(
            line["session_id"],
            line["turn"],
            divergence,
            line.get("error", ""),
            line.get("reference_url", ""),
            line.get("replay_s", 0.0),
        )


def read_replayed(run_dir: Path) -> dict[tuple[int, int], ReplayedTurn]:
    """The replay's lines by (session, turn); empty when nothing was replayed."""
    from repro.errors import UsageError

    path = run_dir / FILE_NAME
    if not path.exists():
        return {}
    turns = {}
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                turn = ReplayedTurn.from_json(orjson.loads(line))
            # AttributeError: valid JSON that is not an object ([1, 2], null)
            except (ValueError, KeyError, TypeError, AttributeError):
                raise UsageError(f"{path} line {number} is not a line repro wrote.") from None
            turns[(turn.session_id, turn.turn)] = turn
    return turns


class ReplayWriter:
    """Appends verdicts to divergence.jsonl and counted divergences to failures.jsonl."""

    def __init__(self, run_dir: Path) -> None:
        self._verdicts = (run_dir / FILE_NAME).open("ab")
        self._failures = (run_dir / "failures.jsonl").open("ab")

    def add(self, turn: ReplayedTurn) -> None:
        self._verdicts.write(orjson.dumps(turn.to_json()) + b"\n")
        self._verdicts.flush()

    def add_failure(
        self, turn: ReplayedTurn, loaded: Answer, reference: Answer, request: dict[str, Any]
    ) -> None:
        """Both answers and where they part, for a divergence that counts as corruption."""
        assert turn.divergence is not None
        where = turn.divergence.token_offset
        line = {
            "session_id": turn.session_id,
            "turn": turn.turn,
            "oracle": "divergence",
            "verdict": str(turn.divergence.kind),
            "where": turn.divergence.describe(),
            "divergence": dataclasses.asdict(turn.divergence),
            "output": _side(loaded, where),
            "reference": _side(reference, where) | {"url": turn.reference_url},
            "request": request,
        }
        self._failures.write(orjson.dumps(line) + b"\n")
        self._failures.flush()

    def close(self) -> None:
        self._verdicts.close()
        self._failures.close()


def _side(answer: Answer, where: int | None) -> dict[str, Any]:
    side: dict[str, Any] = {
        "reasoning": answer.reasoning,
        "content": answer.content,
        "tool_calls": orjson.loads(answer.tool_calls or "[]"),
    }
    if where is not None and answer.tokens:
        low = max(0, where - TOKENS_AROUND)
        side["tokens_around"] = {
            "from": low,
            "tokens": [t.token for t in answer.tokens[low : where + TOKENS_AROUND + 1]],
        }
    return side
