"""Grouping requests into sessions by conversation prefix, as they come.

An agent sends its whole conversation with every request: the next request is the last one
plus the answer and what followed it (tool results, a user message). So a request joins the
session whose last request its messages begin with. Clients that drop the reasoning of
earlier turns from the history still join (messages are also compared without it); the turn
then records from where the history changed (`base`). Anything else starts a new session.

Messages are kept as 16-byte digests, not as text: memory grows with sessions, not context.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson

from repro.traces.model import Message

MAX_SESSIONS = 4096  # sessions remembered; an older one that comes back starts anew
REASONING_KEYS = ("reasoning_content", "reasoning")


def digest(value: object) -> bytes:
    return hashlib.blake2b(
        orjson.dumps(value, option=orjson.OPT_SORT_KEYS), digest_size=16
    ).digest()


def _loose(messages: Sequence[Message], keys: list[bytes]) -> list[bytes]:
    """Each message's digest without its reasoning (its own digest when it has none)."""
    return [
        digest({k: v for k, v in m.items() if k not in REASONING_KEYS})
        if any(k in m for k in REASONING_KEYS)
        else key
        for m, key in zip(messages, keys, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where a request goes: its session, its turn there, and how many messages of the
    session's previous request it starts with (`base`); `tools_changed` on a session's first
    turn and whenever its tools differ from the previous turn's."""

    session: str
    turn: int
    base: int
    tools_changed: bool


@dataclass(slots=True)
class _Session:
    id: str
    opening: bytes
    keys: list[bytes]
    loose: list[bytes]
    tools: bytes
    turns: int = 0
    busy: bool = True  # a request of it is in flight
    ended_s: float | None = None  # when its last answer ended (a monotonic clock), if known


class SessionGrouper:
    """Assigns each request (its messages and tools) to a session, and numbers its turns."""

    def __init__(self, id_prefix: str, max_sessions: int = MAX_SESSIONS) -> None:
        self.id_prefix = id_prefix
        self.max_sessions = max_sessions
        self.created = 0
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self._by_opening: dict[bytes, list[str]] = {}

    def assign(
        self, messages: Sequence[Message], tools: Sequence[Message], arrived_s: float | None = None
    ) -> Assignment:
        """The request's session; `arrived_s` (when known) keeps it out of any session whose
        last answer had not ended yet: a conversation sends its next request only then."""
        keys = [digest(m) for m in messages]
        opening = digest([k.hex() for k in keys[: _opening_length(messages)]])
        tools_key = digest(tools)
        candidates = [
            session
            for session in (self._sessions[s] for s in self._by_opening.get(opening, ()))
            if not session.busy
            and (arrived_s is None or session.ended_s is None or session.ended_s <= arrived_s)
        ]
        found = _extended(candidates, keys, lambda s: s.keys)
        loose: list[bytes] | None = None
        if found is None and candidates:
            loose = _loose(messages, keys)
            found = _extended(candidates, loose, lambda s: s.loose)
        if found is None:
            return self._new(opening, keys, loose, messages, tools_key)
        base = _common_prefix(found.keys, keys)
        changed = found.tools != tools_key
        found.keys, found.tools, found.busy = keys, tools_key, True
        found.loose = loose or _loose(messages, keys)
        found.turns += 1
        self._sessions.move_to_end(found.id)
        return Assignment(found.id, found.turns, base, changed)

    def done(self, session: str, ended_s: float | None = None) -> None:
        """The session's request in flight has ended (at `ended_s`): its next may come."""
        if (known := self._sessions.get(session)) is not None:
            known.busy = False
            known.ended_s = ended_s

    @property
    def sessions(self) -> int:
        return self.created

    def _new(
        self,
        opening: bytes,
        keys: list[bytes],
        loose: list[bytes] | None,
        messages: Sequence[Message],
        tools_key: bytes,
    ) -> Assignment:
        self.created += 1
        sid = f"{self.id_prefix}{self.created:04d}"
        loose = loose or _loose(messages, keys)
        self._sessions[sid] = _Session(sid, opening, keys, loose, tools_key)
        self._by_opening.setdefault(opening, []).append(sid)
        while len(self._sessions) > self.max_sessions:
            _, old = self._sessions.popitem(last=False)
            same = self._by_opening[old.opening]
            same.remove(old.id)
            if not same:
                del self._by_opening[old.opening]
        return Assignment(sid, 0, 0, True)


def _opening_length(messages: Sequence[Message]) -> int:
    """Messages up to and including the first user message: what names a conversation."""
    for i, message in enumerate(messages):
        if message.get("role") == "user":
            return i + 1
    return len(messages)


def _extended(
    candidates: list[_Session], keys: list[bytes], of: Callable[[_Session], list[bytes]]
) -> _Session | None:
    """The candidate whose last request `keys` begins with: the longest such, and of equals
    the one whose answer ended last."""
    best: _Session | None = None
    for session in candidates:
        mine = of(session)
        if len(mine) > len(keys) or keys[: len(mine)] != mine:
            continue
        if best is None or (len(mine), session.ended_s or 0.0) > (
            len(of(best)),
            best.ended_s or 0.0,
        ):
            best = session
    return best


def _common_prefix(a: list[bytes], b: list[bytes]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
