"""A built-in scenario written as a trace: each session's planned conversation (its scripted
history), so the built-in path and the trace path can be run against each other.

Session i of the trace holds exactly the requests scripted history sends for session i of
a run with the same --seed, --context-max and --thinking; each planned assistant turn is
also the response the turn before it got.
"""

from __future__ import annotations

from pathlib import Path

from repro.errors import UsageError
from repro.scenarios.base import Message
from repro.traces import TraceWriter


def export_scenario(
    name: str, sessions: int, seed: int, context_max_tokens: int, thinking: bool, out: Path
) -> int:
    """Write `sessions` sessions of the built-in scenario `name` to `out`; the turns written."""
    from repro.scenarios import get_scenario
    from repro.scenarios.trace import is_trace

    if is_trace(name):
        raise UsageError(f"--scenario {name} is a trace already; export a built-in scenario.")
    scenario = get_scenario(name)
    if out.exists():
        raise UsageError(f"{out} exists already; give a new file to write the trace to.")
    source = (
        f"repro trace export --scenario {name} --sessions {sessions} --seed {seed} "
        f"--context-max {context_max_tokens} --{'' if thinking else 'no-'}thinking"
    )
    writer = TraceWriter(out, {"source": source})
    turns = 0
    try:
        for session_id in range(sessions):
            plan = scenario.scripted(session_id, seed, context_max_tokens, thinking)
            while plan.advance():
                pass
            messages = _requests_only(plan.messages)
            turns += sum(m["role"] == "assistant" for m in messages)
            writer.write({
                "session": f"{name}-{session_id}",
                "tools": plan.session.tools,
                "messages": messages,
            })  # fmt: skip
    finally:
        writer.close()
    return turns


def _requests_only(messages: list[Message]) -> list[Message]:
    """Up to the plan's last assistant turn: results after it were never sent."""
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[: last + 1]
