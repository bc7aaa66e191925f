"""The simulated model: the scenario's scripted agent, encoded as its model family writes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.scenarios import PlannedTurn, script_for
from repro.sim.formats import DSML_FORMAT, ModelFormat


def plan_turn(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> PlannedTurn:
    """The next assistant turn the scripted agent means, before encoding."""
    return script_for(tools)(messages, tools)


def earlier_calls(messages: Sequence[dict[str, Any]]) -> int:
    """Calls the conversation made before this turn (Kimi's call ids count them)."""
    return sum(len(m.get("tool_calls") or ()) for m in messages if m.get("role") == "assistant")


def encode_turn(
    turn: PlannedTurn, thinking: bool, fmt: ModelFormat = DSML_FORMAT, calls_before: int = 0
) -> str:
    """The completion text exactly as the family's encoder writes it, ending in EOS
    (DeepSeek-V3.2's DSML by default)."""
    return fmt.completion(turn, thinking, calls_before)
