"""The simulated model: the scenario's scripted agent, encoded as DeepSeek-V3.2 emits it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.dsml.encode import encode_completion
from repro.scenarios.base import PlannedTurn, Script
from repro.scenarios.generic import generic_script


def _script(tools: Sequence[dict[str, Any]]) -> Script:
    # The agentic-coding scenario may not be importable yet (it lands separately); the
    # generic script keeps the engine answering meanwhile.
    try:
        from repro.scenarios import script_for

        return script_for(tools)
    except ImportError:
        return generic_script


def plan_turn(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> PlannedTurn:
    """The next assistant turn the scripted agent means, before encoding."""
    return _script(tools)(messages, tools)


def encode_turn(turn: PlannedTurn, thinking: bool) -> str:
    """The completion text exactly as DeepSeek's encoder writes it, ending in EOS."""
    calls = [(c.name, c.arguments) for c in turn.calls]
    return encode_completion(
        calls, content=turn.content, reasoning=turn.reasoning if thinking else None
    )
