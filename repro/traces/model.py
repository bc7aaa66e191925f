"""A trace as repro reads it: sessions of turns, each turn one request and the answer it got.

A file holds sessions as whole conversations (one line each) or as turns (one line per
request, with the session's id); both read into the same records. Turn k's request is the
messages the client sent (OpenAI chat messages), its tools and sampling parameters; its
response is the assistant message the engine answered, when the trace holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Message = dict[str, Any]
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class TraceTurn:
    """One request as the client sent it, and the engine's answer (None: not recorded).

    `tools` is shared by every turn whose tools are the same (one list object), so a
    checker's cache keyed by identity compiles each tools list once.
    """

    messages: tuple[Message, ...]
    tools: list[Message]
    params: Mapping[str, Any]
    response: Message | None
    line: int  # where the turn is in the file (1-based)


@dataclass(frozen=True, slots=True)
class TraceSession:
    id: str
    line: int  # the session's first line
    turns: tuple[TraceTurn, ...]

    @property
    def final_messages(self) -> tuple[Message, ...]:
        """The whole conversation: the last request and, when recorded, its answer."""
        last = self.turns[-1]
        return last.messages + ((last.response,) if last.response is not None else ())


@dataclass(frozen=True, slots=True)
class Trace:
    path: Path
    sessions: tuple[TraceSession, ...]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    @property
    def tools_lists(self) -> int:
        """How many different tools lists the trace's requests carry."""
        return len({id(t.tools) for s in self.sessions for t in s.turns})
