"""The simulated model: the scenario's scripted agent, encoded as DeepSeek-V3.2 emits it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.dsml.encode import encode_completion
from repro.scenarios import PlannedTurn, script_for


def plan_turn(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> PlannedTurn:
    """The next assistant turn the scripted agent means, before encoding."""
    return script_for(tools)(messages, tools)


def encode_turn(turn: PlannedTurn, thinking: bool) -> str:
    """The completion text exactly as DeepSeek's encoder writes it, ending in EOS."""
    calls = [(c.name, c.arguments) for c in turn.calls]
    return encode_completion(
        calls, content=turn.content, reasoning=turn.reasoning if thinking else None
    )
