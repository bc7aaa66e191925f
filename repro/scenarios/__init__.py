"""Agentic workloads: each scenario brings tools, a tool simulator, an oracle and a script."""

from __future__ import annotations

from collections.abc import Sequence

from repro.errors import UsageError
from repro.scenarios.base import Message, PlannedCall, PlannedTurn, Scenario, Script, Session

__all__ = [
    "PlannedCall",
    "PlannedTurn",
    "Scenario",
    "Script",
    "Session",
    "get_scenario",
    "names",
    "script_for",
]


def _registry() -> dict[str, Scenario]:
    from repro.scenarios.agentic_coding import AgenticCoding

    return {s.name: s for s in (AgenticCoding(),)}


def names() -> list[str]:
    return sorted(_registry())


def get_scenario(name: str) -> Scenario:
    scenarios = _registry()
    if name not in scenarios:
        raise UsageError(
            f"Unknown scenario '{name}'; choose one of: {', '.join(sorted(scenarios))}."
        )
    return scenarios[name]


def script_for(tools: Sequence[Message]) -> Script:
    """The script the embedded engine follows for a request carrying these tools.

    A scenario is recognised by its tool names; any other request gets the generic
    script, so the engine still answers clients that are not repro.
    """
    from repro.scenarios.agentic_coding import TOOL_NAMES, agent_script
    from repro.scenarios.generic import generic_script

    names_ = {t.get("function", {}).get("name") for t in tools}
    return agent_script if names_ >= TOOL_NAMES else generic_script
