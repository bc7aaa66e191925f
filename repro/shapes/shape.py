"""Shape: one turn's value on every axis, the request fields it adds, and its label.

The label is what turns.parquet's `shape` column holds: `axis=value` for every axis the run
mixed or set, space-separated, in AXES order (empty for a run without `--mix`). Reports split
the rates by each `axis=value` in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from repro.shapes.axes import AXES

TIGHT_TOKENS = 16  # max_tokens=tight: fewer than any tool call of the scenario takes
BUDGET_TOKENS = 32  # reasoning=budget: vLLM's thinking_token_budget
SHAPE_TOP_LOGPROBS = 2  # logprobs=on, when no oracle asks for more
STOP_STRINGS = ("\n\n", "</tool_call>")
# response_format=json_schema: the structured answer every such turn asks for.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "done": {"type": "boolean"}},
    "required": ["summary", "done"],
    "additionalProperties": False,
}
FORCES_A_CALL = frozenset({"required", "named"})


@dataclass(frozen=True, slots=True)
class Shape:
    """A turn's value per axis (only the axes the run varies; the rest are defaults)."""

    values: Mapping[str, str] = field(default_factory=dict)
    named_tool: str = ""  # tool_choice=named: which tool (drawn with the shape)

    def __getitem__(self, axis: str) -> str:
        return self.values.get(axis, AXES[axis].default)

    @property
    def label(self) -> str:
        return " ".join(f"{a}={self.values[a]}" for a in AXES if a in self.values)

    @property
    def streamed(self) -> bool:
        return self["stream"] == "on"

    @property
    def choices(self) -> int:
        return int(self["n"])

    @property
    def grammar(self) -> str:
        """What a grammar forces this turn to write: `call` (required, named), `json`
        (json_object), `schema` (json_schema), or "" (nothing is forced)."""
        if self["tool_choice"] in FORCES_A_CALL:
            return "call"
        return {"json_object": "json", "json_schema": "schema"}.get(self["response_format"], "")

    def max_tokens(self, run_max_tokens: int) -> int:
        return (
            min(TIGHT_TOKENS, run_max_tokens) if self["max_tokens"] == "tight" else run_max_tokens
        )

    def with_value(self, axis: str, value: str) -> Shape:
        return Shape({**self.values, axis: value}, self.named_tool)

    def fields(self, tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The request fields this shape adds or replaces (stream and max_tokens aside:
        request_body sets those)."""
        body: dict[str, Any] = {}
        choice = self["tool_choice"]
        if choice == "named":
            body["tool_choice"] = {"type": "function", "function": {"name": self.named_tool}}
        elif choice != "auto" or "tool_choice" in self.values:
            body["tool_choice"] = choice
        if self["response_format"] == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif self["response_format"] == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA, "strict": True},
            }
        if self.choices > 1:
            body["n"] = self.choices
        if self["logprobs"] == "on":
            body |= {"logprobs": True, "top_logprobs": SHAPE_TOP_LOGPROBS}
        if self["stop"] == "strings":
            body["stop"] = list(STOP_STRINGS)
        if self["parallel_tool_calls"] == "false":
            body["parallel_tool_calls"] = False
        if self["special_tokens"] == "kept":
            body["skip_special_tokens"] = False
        return body

    def thinking(self, run_thinking: bool) -> bool | None:
        """Thinking on or off as this shape asks; None: as the run asks (the body's old form)."""
        reasoning = self["reasoning"]
        if reasoning == "run":
            return None
        return reasoning != "off"

    def schema(self) -> dict[str, Any] | None:
        """The JSON Schema the answer's content must meet under response_format, if any."""
        if self["response_format"] == "json_schema":
            return ANSWER_SCHEMA
        return None


def parse_label(label: str) -> dict[str, str]:
    """A stored label back into its axis values (unknown text is kept as is)."""
    values = {}
    for item in label.split():
        axis, _, value = item.partition("=")
        values[axis] = value
    return values
