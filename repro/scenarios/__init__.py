"""Agentic workloads: each scenario brings tools, a tool simulator, an oracle and a script."""

from __future__ import annotations

from collections.abc import Sequence

from repro.errors import UsageError
from repro.scenarios.base import (
    Message,
    Plan,
    PlannedCall,
    PlannedTurn,
    Scenario,
    Script,
    Session,
)

__all__ = [
    "Plan",
    "PlannedCall",
    "PlannedTurn",
    "Scenario",
    "Script",
    "Session",
    "get_scenario",
    "names",
    "scenario_identity",
    "script_for",
]


def _registry() -> dict[str, Scenario]:
    from repro.scenarios.agentic_coding import AgenticCoding

    return {s.name: s for s in (AgenticCoding(),)}


def names() -> list[str]:
    return sorted(_registry())


def get_scenario(name: str) -> Scenario:
    """A built-in scenario by name, or a recorded trace: `trace:FILE`, `trace-stretched:FILE`
    (docs/traces.md); a trace that cannot be replayed is a UsageError."""
    from repro.scenarios.trace import is_trace, trace_scenario

    if is_trace(name):
        return trace_scenario(name)
    scenarios = _registry()
    if name not in scenarios:
        raise UsageError(
            f"Unknown scenario '{name}'; choose one of: {', '.join(sorted(scenarios))}, or "
            "trace:FILE for a recorded trace."
        )
    return scenarios[name]


def scenario_identity(name: str) -> str | None:
    """What a scenario's name does not say about its sessions: a trace file's content
    (its sha256), so a trial cache never mistakes an edited trace for the one it measured;
    None for a built-in scenario."""
    from repro.scenarios.trace import is_trace, trace_scenario

    return trace_scenario(name).identity if is_trace(name) else None


def script_for(tools: Sequence[Message]) -> Script:
    """The script the embedded engine follows for a request carrying these tools.

    A scenario is recognised by its tool names; any other request gets the generic
    script, so the engine still answers clients that are not repro.
    """
    from repro.scenarios.agentic_coding import TOOL_NAMES, agent_script
    from repro.scenarios.generic import generic_script

    names_ = {t.get("function", {}).get("name") for t in tools}
    return agent_script if names_ >= TOOL_NAMES else generic_script
