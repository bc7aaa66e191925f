"""A recorded trace as a scenario: `--scenario trace:FILE` (or `trace-stretched:FILE`).

Sessions come from the trace's sessions at any `--sessions`: session i of a run replays
trace session order[i mod T], where T is the trace's size and order a seeded shuffle per
pass (`--seed`), so up to T sessions are a sample without repeats and more cycle through
it. Scripted history replays the recorded requests; live history feeds the engine's answers
back (sessions.py). The semantic oracle is contamination.py's; the validity oracle judges
each answer against the tools its own request carried.
"""

from __future__ import annotations

import functools
import hashlib
import random
from pathlib import Path

from repro.errors import UsageError
from repro.scenarios.trace.contamination import Vocabulary
from repro.scenarios.trace.sessions import TraceLiveSession, TracePlan
from repro.traces import Message, Trace, TraceSession, read_trace

__all__ = ["PREFIXES", "TraceScenario", "is_trace", "trace_scenario"]

PREFIXES = {"trace:": False, "trace-stretched:": True}  # prefix -> stretch to --context-max


def is_trace(name: str) -> bool:
    return name.startswith(tuple(PREFIXES))


class TraceScenario:
    def __init__(self, name: str, trace: Trace, stretch: bool, identity: str) -> None:
        self.name = name
        self.trace = trace
        self.stretch = stretch
        self.identity = identity  # sha256 of the file: what a trial cache keys it by
        self.vocabulary = Vocabulary(trace)

    def tools(self) -> list[Message]:
        """The first session's tools (each session's requests carry their own)."""
        return self.trace.sessions[0].turns[0].tools

    def pick(self, session_id: int, seed: int) -> TraceSession:
        sessions = self.trace.sessions
        rounds, position = divmod(session_id, len(sessions))
        order = list(range(len(sessions)))
        random.Random(f"trace:{seed}:{rounds}").shuffle(order)
        return sessions[order[position]]

    def session(self, session_id: int, seed: int, context_max_tokens: int) -> TraceLiveSession:
        return TraceLiveSession(
            session_id, self.pick(session_id, seed), self.vocabulary, context_max_tokens,
            self.stretch,
        )  # fmt: skip

    def scripted(
        self, session_id: int, seed: int, context_max_tokens: int, thinking: bool
    ) -> TracePlan:
        """The recorded requests as they were (thinking does not change a recording)."""
        return TracePlan(self.session(session_id, seed, context_max_tokens))


def trace_scenario(name: str) -> TraceScenario:
    """The scenario `trace:FILE` or `trace-stretched:FILE` names; a bad trace is a UsageError."""
    prefix = next(p for p in PREFIXES if name.startswith(p))
    given = name[len(prefix) :]
    if not given.strip():
        raise UsageError(f"--scenario {name}: give the trace file after '{prefix}'.")
    path = Path(given)
    try:
        info = path.stat()
    except OSError:
        info = None  # read_trace says what is wrong with it
    key = (info.st_mtime_ns, info.st_size) if info else (0, 0)
    return _load(name, str(path.resolve()), PREFIXES[prefix], *key)


@functools.lru_cache(maxsize=4)
def _load(name: str, path: str, stretch: bool, mtime_ns: int, size: int) -> TraceScenario:
    """Read once per process while the file is unchanged (resolution, load and replay all
    ask for it)."""
    from repro.checkers import toolset_for

    def usable(tools: list[Message]) -> str | None:
        try:
            toolset_for(tools)
        except (ValueError, TypeError, AttributeError) as exc:
            return str(exc)
        return None

    trace = read_trace(Path(path), usable)
    identity = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return TraceScenario(name, trace, stretch, identity)
