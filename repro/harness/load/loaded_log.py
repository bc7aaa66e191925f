"""loaded.jsonl: what the load kept of each turn for the replay to judge it later.

One line per turn that ended ok under the divergence oracle: session, turn and scripted
step; the sha256 of the body sent (the replay rebuilds the body from the scenario and
refuses to replay one that hashes differently); the tool calls as the server parsed them;
and, when the engine gave logprobs, every generated token with its logprob and top-2 margin.
The texts themselves are in turns.parquet. Written and flushed line by line, as
failures.jsonl is, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from repro.checkers.divergence import ScoredToken, scored_tokens
from repro.harness.load.request_body import body_sha256
from repro.harness.load.stream_progress import StreamProgress

FILE_NAME = "loaded.jsonl"


@dataclass(frozen=True, slots=True)
class LoadedTurn:
    session_id: int
    turn: int
    step: int
    body_sha256: str
    tool_calls: str  # JSON list of {"name", "arguments"}, as the server sent them
    tokens: tuple[ScoredToken, ...]  # no top-k kept: only the reference's is needed


def server_calls_json(progress: StreamProgress) -> str:
    """The server's tool calls as turns.parquet writes calls (so both sides compare alike)."""
    calls = [{"name": c.name, "arguments": c.arguments} for c in progress.tool_calls()]
    return json.dumps(calls, ensure_ascii=False)


class LoadedLog:
    """loaded.jsonl, and whoever listens for each turn as it is added (a replay that runs
    alongside the load: `listener(turn, reasoning, content)`)."""

    def __init__(
        self, run_dir: Path, listener: Callable[[LoadedTurn, str, str, bool], None] | None = None
    ) -> None:
        self._file = (run_dir / FILE_NAME).open("ab")
        self.listener = listener

    def add(
        self,
        session_id: int,
        turn: int,
        step: int,
        body: bytes,
        progress: StreamProgress,
        flagged: bool = False,
    ) -> None:
        """`flagged`: the validity oracle called the turn corrupt (a replay alongside, which
        reads no turns.parquet, is told so)."""
        tokens = scored_tokens(progress.logprobs, keep_top=False)
        digest, calls = body_sha256(body), server_calls_json(progress)
        line = {
            "session_id": session_id,
            "turn": turn,
            "step": step,
            "body_sha256": digest,
            "tool_calls": calls,
            "tokens": [t.token for t in tokens],
            "logprobs": [t.logprob for t in tokens],
            "margins": [t.margin for t in tokens],
        }
        self._file.write(orjson.dumps(line) + b"\n")
        self._file.flush()
        if self.listener is not None:
            loaded = LoadedTurn(session_id, turn, step, digest, calls, tokens)
            self.listener(loaded, progress.reasoning_text(), progress.content_text(), flagged)

    def close(self) -> None:
        self._file.close()


def read_loaded(run_dir: Path) -> Iterator[LoadedTurn]:
    """The turns a run's load kept, in the order they ended; none when there is no file."""
    path = run_dir / FILE_NAME
    if not path.exists():
        return
    with path.open("rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = orjson.loads(line)
            tokens = tuple(
                ScoredToken(t, lp, m)
                for t, lp, m in zip(row["tokens"], row["logprobs"], row["margins"], strict=True)
            )
            yield LoadedTurn(
                row["session_id"],
                row["turn"],
                row["step"],
                row["body_sha256"],
                row["tool_calls"],
                tokens,
            )
