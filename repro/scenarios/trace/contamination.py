"""The semantic oracle of a trace: an answer that names what only other sessions hold.

A stale read in an engine splices another request's bytes into an answer; what gives it
away is a name the other conversation holds and this one never did: another session's
package, path component, identifier, id. So each session's vocabulary is the names in its
whole recorded conversation (messages, tool results, tools), and a name in an answer's
content or call arguments that is not in it but is in another session's is a `semantic`
defect. A name is a word of at least six characters with a digit or an underscore in it
(`ledger_1a2f`, `parse_router`, `call_12_3`): plain words are shared by every
conversation and prove nothing. What only this session could say, or what no session
holds (a new name the model made up), is never flagged.

Blind spots, by design: corruption from the same session (or from a copy of it, when
`--sessions` cycles the trace), from sessions that share the names, and corruption that
names nothing (cut answers, broken markup, which the grammar checks see).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

import orjson

from repro.checkers.verdict import Defect, ToolCall
from repro.traces import Message, Trace, TraceSession

WORD = re.compile(r"\w{6,}")  # a name is such a word that is not letters alone


def names(text: str) -> set[str]:
    return {w for w in WORD.findall(text) if not w.isalpha()}


ROLE_KEYS = ("content", "reasoning_content", "reasoning")


def message_texts(message: Message) -> Iterator[str]:
    for key in ROLE_KEYS:
        value = message.get(key)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (
                p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        yield str(function.get("name", ""))
        yield str(function.get("arguments", ""))
    if isinstance(message.get("tool_call_id"), str):
        yield message["tool_call_id"]


def session_names(session: TraceSession) -> frozenset[str]:
    """Every name the session's conversation holds, tools and recorded answers included."""
    parts: list[str] = []
    seen_tools: set[int] = set()
    for turn in session.turns:
        if id(turn.tools) not in seen_tools:
            seen_tools.add(id(turn.tools))
            parts.append(orjson.dumps(turn.tools).decode().replace("\\n", " "))
        if turn.response is not None:
            parts.extend(message_texts(turn.response))
    for message in session.final_messages:
        parts.extend(message_texts(message))
    return frozenset(names("\n".join(parts)))


class Vocabulary:
    """Each session's names, and how many sessions hold each name."""

    def __init__(self, trace: Trace) -> None:
        self.by_session = {s.id: session_names(s) for s in trace.sessions}
        self.holders: Counter[str] = Counter()
        for names in self.by_session.values():
            self.holders.update(names)

    def defects(self, session_id: str, calls: Sequence[ToolCall], answer: str) -> list[Defect]:
        own = self.by_session[session_id]
        found: list[Defect] = []
        seen: set[str] = set()
        texts = [("content", answer)] + [
            (f"tool_calls[{i}]", c.arguments) for i, c in enumerate(calls)
        ]
        for field, text in texts:
            for match in WORD.finditer(text):
                name = match.group()
                if name.isalpha() or name in seen or name in own or not self.holders.get(name):
                    continue
                seen.add(name)
                message = (
                    f"names '{name}', which this session's conversation never held and "
                    f"{self._others(name)}"
                )
                found.append(Defect("semantic", match.start(), message, field))
        return found

    def _others(self, name: str) -> str:
        n = self.holders[name]
        return "another session of the trace does" if n == 1 else f"{n} other sessions do"
