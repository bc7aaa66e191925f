"""The axes a request's shape varies on: each with its values, the default first.

A default value sends what repro always sent (nothing, or the run's own setting), so a run
without `--mix` asks exactly as before. The bug class each axis exposes is in
docs/consistency.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Axis:
    name: str
    values: tuple[str, ...]  # the default first
    meaning: str

    @property
    def default(self) -> str:
        return self.values[0]


AXES: dict[str, Axis] = {
    a.name: a
    for a in (
        Axis(
            "tool_choice",
            ("auto", "required", "named", "none"),
            "auto; required (a grammar forces a call); named (a grammar forces a call to one "
            "tool, drawn per turn); none (no call may be made)",
        ),
        Axis(
            "response_format",
            ("text", "json_object", "json_schema"),
            "text (not sent); json_object or json_schema (a grammar forces a JSON answer; the "
            "turn then sends tool_choice none)",
        ),
        Axis(
            "max_tokens",
            ("run", "tight"),
            "run (--max-tokens); tight (16 tokens: short enough to cut a tool call)",
        ),
        Axis(
            "reasoning",
            ("run", "on", "off", "budget"),
            "run (--thinking); on; off; budget (on, with vLLM's thinking_token_budget of 32)",
        ),
        Axis("stream", ("on", "off"), "on (server-sent events); off (one JSON answer)"),
        Axis("n", ("1", "2"), "choices per request"),
        Axis("logprobs", ("off", "on"), "per-token logprobs (top 2)"),
        Axis(
            "stop",
            ("none", "strings"),
            'none; strings (stop at "\\n\\n" or "</tool_call>")',
        ),
        Axis(
            "parallel_tool_calls",
            ("default", "false"),
            "default (not sent); false (at most one call)",
        ),
        Axis(
            "special_tokens",
            ("skipped", "kept"),
            "skipped (not sent: the engine leaves special tokens' text out); kept "
            "(skip_special_tokens false: their text stays in the answer)",
        ),
    )
}
