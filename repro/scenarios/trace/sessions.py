"""One trace session replayed, scripted or live.

Scripted (`TracePlan`): request k is the recorded request k (its messages, with the
recorded assistant turns as history, and its tools); the engine's answers are judged and
never fed back. Live (`TraceLiveSession`): the engine's answers become the history; each
tool call gets the result the trace recorded for the same call (same name, same arguments),
else a marked stand-in; user messages that followed an answer in the recording follow it
again. Both end where the recording ends, or at `--context-max` (sizing.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from repro.checkers.verdict import Defect, ToolCall
from repro.scenarios.trace.contamination import Vocabulary
from repro.scenarios.trace.sizing import Sizing
from repro.traces import Message, TraceSession

STUB = (
    "[repro: the trace holds no result for this call of {name} (no recorded call had these "
    "arguments); this stands in for one]"
)
RETRY_NOTICE = "Your last reply did not contain a valid tool call. Continue with the task."


def call_key(name: str, arguments: str) -> tuple[str, str]:
    """A call as the trace is searched for it: its name and its arguments, canonical JSON
    when they parse (key order and spacing do not matter), as written otherwise."""
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):
        canonical = arguments
    return name, canonical


class _Recorded:
    """The session's recorded calls and their results, in the order they were made."""

    def __init__(self, session: TraceSession) -> None:
        final = session.final_messages
        results = {m["tool_call_id"]: m for m in final if m.get("role") == "tool"}
        self.by_call: dict[tuple[str, str], list[tuple[int, Message]]] = {}
        position = 0
        for message in final:
            if message.get("role") != "assistant":
                continue
            for call in message.get("tool_calls") or ():
                result = results.get(call["id"])
                if result is not None:
                    function = call["function"]
                    key = call_key(function["name"], function["arguments"])
                    self.by_call.setdefault(key, []).append((position, result))
            position += 1

    def result(self, name: str, arguments: str, turn: int) -> Message | None:
        """The recorded result of the same call: the first made at or after this turn,
        else the latest before it."""
        found = self.by_call.get(call_key(name, arguments))
        if not found:
            return None
        later = [r for p, r in found if p >= turn]
        return later[0] if later else found[-1][1]


class TracePlan:
    """Scripted history: `messages` is the next request's (one list, changed in place)."""

    def __init__(self, session: TraceLiveSession) -> None:
        self.session = session
        self.session_id = session.session_id
        self.sizing = session.sizing
        self.turns = session.trace.turns[: self.sizing.turns_within()]
        self.step = 0
        self.messages: list[Message] = self.sizing.messages(self.turns[0].messages)
        self.tools = self.turns[0].tools
        session.tools = self.tools

    @property
    def prompt_tokens(self) -> int:
        return self.sizing.prompt_tokens(self.messages, self.tools)

    def advance(self) -> bool:
        """The next recorded request; False when the recording (or its cut) ends."""
        if self.step + 1 >= len(self.turns):
            return False
        self.step += 1
        turn = self.turns[self.step]
        self.messages[:] = self.sizing.messages(turn.messages)
        self.tools = self.session.tools = turn.tools
        return True


class TraceLiveSession:
    """The client half of a live replay of one trace session."""

    def __init__(
        self,
        session_id: int,
        trace: TraceSession,
        vocabulary: Vocabulary,
        context_max_tokens: int,
        stretch: bool,
    ) -> None:
        self.session_id = session_id
        self.trace = trace
        self.vocabulary = vocabulary
        self.sizing = Sizing(trace, context_max_tokens, stretch)
        self.context_max_tokens = context_max_tokens
        self.turns = self.sizing.turns_within()
        self.tools: list[Message] = trace.turns[0].tools
        self.turn = 0  # the recorded turn the conversation is at
        self.stubs = 0  # calls answered with a stand-in
        self._recorded = _Recorded(trace)

    def opening(self) -> list[Message]:
        return self.sizing.messages(self.trace.turns[0].messages)

    def _after(self, turn: int) -> list[Message]:
        """What followed the recorded answer to request `turn`: the tail of request
        `turn + 1` after its last assistant message (tool results, user messages)."""
        if turn + 1 >= len(self.trace.turns):
            return []
        following = self.trace.turns[turn + 1].messages
        last = max((i for i, m in enumerate(following) if m.get("role") == "assistant"), default=-1)
        return list(following[last + 1 :])

    def _step(self) -> list[Message]:
        after = self._after(self.turn)
        self.turn += 1
        if self.turn < len(self.trace.turns):
            self.tools = self.trace.turns[self.turn].tools
        return after

    def respond(
        self,
        calls: Sequence[ToolCall],
        call_ids: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> list[Message]:
        turn = self.turn
        users = [m for m in self._step() if m.get("role") != "tool"]
        out = []
        for call, call_id in zip(calls, call_ids, strict=True):
            recorded = self._recorded.result(call.name, call.arguments, turn)
            if recorded is None:
                self.stubs += 1
                content = STUB.format(name=call.name)
            else:
                content = self.sizing.message(recorded)["content"]
            out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return out + self.sizing.messages(users)

    def follow_up(self) -> list[Message]:
        """After an answer without calls: the user messages that followed it in the
        recording (the conversation goes on), or nothing (the session ends)."""
        users = [m for m in self._after(self.turn) if m.get("role") == "user"]
        if not users or self.turn + 1 >= self.turns:
            return []
        self._step()
        return self.sizing.messages(users)

    def retry_notice(self) -> Message:
        return {"role": "user", "content": RETRY_NOTICE}

    def semantic_defects(self, calls: Sequence[ToolCall], answer: str = "") -> list[Defect]:
        return self.vocabulary.defects(self.trace.id, calls, answer)

    def finished(self, prompt_tokens: int) -> bool:
        """The recording has no request left, or the context reached the ceiling."""
        return self.turn >= self.turns or prompt_tokens >= self.context_max_tokens
