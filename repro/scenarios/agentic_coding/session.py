"""The client half of one agentic-coding conversation: opening, tool results, the oracle."""

from __future__ import annotations

import json
from collections.abc import Sequence

from repro.checkers.verdict import Defect, ToolCall
from repro.scenarios.agentic_coding import texts
from repro.scenarios.agentic_coding.results import ToolSimulator
from repro.scenarios.agentic_coding.shown import Shown
from repro.scenarios.agentic_coding.tools import TOOLS
from repro.scenarios.agentic_coding.world import World

# Each turn grows the prompt by about this much, so a session reaches 80k tokens in ~30 turns
# and 16k in ~6: the length of a session scales with --context-max, not its pace.
STEP_TOKENS = 2600
# The agent's read -> edit -> test loop takes up to four turns; tests pass once another
# loop would overshoot the ceiling, so sessions end between ceiling - 4 steps and the ceiling.
LOOP_TURNS = 4


class CodingSession:
    """One session's World, what it was shown, and where its context should be next."""

    def __init__(self, session_id: int, seed: int, context_max_tokens: int) -> None:
        self.tools = TOOLS
        self.world = World(seed, session_id)
        self.shown = Shown()
        self.simulator = ToolSimulator(self.world, self.shown)
        self.context_max_tokens = context_max_tokens

    def opening(self) -> list[dict]:
        world = self.world
        home = world.home[world.failing_symbol]
        self.shown.symbols.add(world.failing_symbol)
        self.shown.tests.add(world.failing_test)
        self.shown.paths.add(home)
        listing = "\n".join(f"  {path} ({world.lengths[path]})" for path in world.paths)
        self.shown.paths.update(world.paths)
        task = texts.TASK.format(
            test=world.failing_test,
            package=world.package,
            error=world.error,
            symbol=world.failing_symbol,
            listing=listing,
        )
        return [
            {"role": "system", "content": texts.SYSTEM_PROMPT},
            {"role": "user", "content": task},
        ]

    def respond(
        self,
        calls: Sequence[ToolCall],
        call_ids: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> list[dict]:
        budget = max(40, STEP_TOKENS - completion_tokens) // max(1, len(calls))
        tests_pass = prompt_tokens + LOOP_TURNS * STEP_TOKENS > self.context_max_tokens
        messages = []
        for call, call_id in zip(calls, call_ids, strict=True):
            try:
                args = json.loads(call.arguments)
            except ValueError:
                content = f"{texts.HEAD_ERROR} arguments of {call.name} are not valid JSON"
            else:
                content = self.simulator.answer(call.name, args, budget, tests_pass)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return messages

    def retry_notice(self) -> dict:
        return {"role": "user", "content": texts.RETRY_NOTICE}

    def follow_up(self) -> list[dict]:
        return []  # an answer without calls is the agent's last word

    def semantic_defects(self, calls: Sequence[ToolCall], answer: str = "") -> list[Defect]:
        return self.shown.defects(calls) if calls else self.shown.answer_defects(answer)

    def finished(self, prompt_tokens: int) -> bool:
        """A guard: stop when the next turn would pass the ceiling."""
        return prompt_tokens + STEP_TOKENS > self.context_max_tokens
