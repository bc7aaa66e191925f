"""Scripted history: a conversation that follows the scenario's own plan, whatever the model says.

Each request carries the planned history: the assistant turns the scenario's script means
(the same script the embedded engine follows) and the tool simulator's results for the
planned calls. The engine's answers are recorded and judged, never fed back, so a model
that writes noise still sees contexts grow along the schedule (2k -> 80k tokens).

The history is a pure function of (scenario, session id, seed, context ceiling, thinking):
it never reads a server's answer, not even `usage`, so its prompt size is estimated here
from the text (about four characters a token, as the tool simulator sizes its results).
That is what lets the divergence oracle rebuild any request byte for byte for the replay.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import orjson

from repro.checkers.verdict import ToolCall
from repro.scenarios.base import Message, Scenario, Session

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4  # role markers and separators around each message


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough prompt size for messages' text; the schedule only needs to be about right."""
    chars = 0
    for message in messages:
        chars += len(str(message.get("content") or "")) + len(
            str(message.get("reasoning_content") or "")
        )
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            chars += len(function.get("name", "")) + len(function.get("arguments", ""))
    return chars // CHARS_PER_TOKEN + TOKENS_PER_MESSAGE * len(messages)


def assistant_message(
    content: str, reasoning: str, calls: Sequence[ToolCall], ids: Sequence[str]
) -> Message:
    """An assistant turn as the next request's history carries it (live or scripted)."""
    message: Message = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c, i in zip(calls, ids, strict=True)
        ]
    return message


class ScriptedHistory:
    """One session's planned conversation; `messages` is the next request's history.

    `step` counts the planned assistant turns so far: request number `step` of the session
    (a retried abort sends the same step again).
    """

    def __init__(
        self,
        scenario: Scenario,
        session_id: int,
        seed: int,
        context_max_tokens: int,
        thinking: bool,
    ) -> None:
        from repro.scenarios import script_for

        self.session_id = session_id
        self.tools = scenario.tools()
        self.session: Session = scenario.session(session_id, seed, context_max_tokens)
        self.messages: list[Message] = self.session.opening()
        self.step = 0
        self._script = script_for(self.tools)
        self._thinking = thinking
        self._tools_tokens = len(orjson.dumps(self.tools)) // CHARS_PER_TOKEN
        self._prompt_tokens = self._tools_tokens + estimate_tokens(self.messages)

    @property
    def prompt_tokens(self) -> int:
        """The estimated size of the next request's prompt."""
        return self._prompt_tokens

    def advance(self) -> bool:
        """Append the planned assistant turn and its tool results; False when the plan ends.

        The plan ends with a turn that calls nothing (the agent's answer) or once the
        session has reached its ceiling, as a live conversation does.
        """
        prompt_tokens = self._prompt_tokens
        plan = self._script(self.messages, self.tools)
        calls = tuple(ToolCall(c.name, json.dumps(c.arguments)) for c in plan.calls)
        ids = tuple(f"call_{self.session_id}_{self.step}_{i}" for i in range(len(calls)))
        reasoning = plan.reasoning if self._thinking else ""
        added = [assistant_message(plan.content, reasoning, calls, ids)]
        self.step += 1
        if calls:
            completion_tokens = estimate_tokens(added)
            added += self.session.respond(calls, ids, prompt_tokens, completion_tokens)
        self.messages += added
        self._prompt_tokens += estimate_tokens(added)
        return bool(calls) and not self.session.finished(prompt_tokens)
