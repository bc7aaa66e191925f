"""The agentic-coding scenario: an agent fixing a failing test with four coding tools.

Client half: `AgenticCoding.session()` -> CodingSession (tool simulator + semantic oracle).
Model half: `agent_script`, which the embedded engine follows.
"""

from __future__ import annotations

from repro.scenarios.agentic_coding.script import agent_script
from repro.scenarios.agentic_coding.session import CodingSession
from repro.scenarios.agentic_coding.tools import TOOL_NAMES, TOOLS
from repro.scenarios.scripted import ScriptedHistory

__all__ = ["TOOLS", "TOOL_NAMES", "AgenticCoding", "CodingSession", "agent_script"]


class AgenticCoding:
    name = "agentic-coding"

    def tools(self) -> list[dict]:
        return TOOLS

    def session(self, session_id: int, seed: int, context_max_tokens: int) -> CodingSession:
        return CodingSession(session_id, seed, context_max_tokens)

    def scripted(
        self, session_id: int, seed: int, context_max_tokens: int, thinking: bool
    ) -> ScriptedHistory:
        """The agent's own plan (the script the embedded engine follows) as the history."""
        return ScriptedHistory(self, session_id, seed, context_max_tokens, thinking)
